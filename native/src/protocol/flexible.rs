//! The flexible versions' encoding (KIP-482), as far as the direct path speaks it: unsigned
//! varints, compact strings, bytes and arrays (their length plus one, 0 for null) and tagged
//! fields (none written; those read are skipped). A flexible request's header (v2) is header v1
//! with no tagged fields after it; a flexible response's header has its tagged fields first in
//! the body the connection hands over.

use super::primitives::{Cursor, Malformed, Request};

/// Writing the flexible encoding into a [`Request`].
pub trait Flexible {
    /// An unsigned varint.
    fn uvarint(&mut self, v: u32);
    /// A compact array's (or string's) length: `n + 1`.
    fn compact_len(&mut self, n: usize);
    /// A compact string.
    fn compact_string(&mut self, s: &str);
    /// No tagged fields.
    fn no_tags(&mut self);
}

impl Flexible for Request {
    fn uvarint(&mut self, mut v: u32) {
        while v >= 0x80 {
            self.raw(&[(v as u8 & 0x7f) | 0x80]);
            v >>= 7;
        }
        self.raw(&[v as u8]);
    }

    fn compact_len(&mut self, n: usize) {
        self.uvarint(u32::try_from(n).map_or(u32::MAX, |n| n.saturating_add(1)));
    }

    fn compact_string(&mut self, s: &str) {
        self.compact_len(s.len());
        self.raw(s.as_bytes());
    }

    fn no_tags(&mut self) {
        self.uvarint(0);
    }
}

/// An unsigned varint of at most 5 bytes (a `u32`).
pub fn uvarint(c: &mut Cursor<'_>) -> Result<u32, Malformed> {
    let mut value: u32 = 0;
    for shift in (0..35).step_by(7) {
        let byte = c.take(1)?[0];
        if shift == 28 && byte > 0x0f {
            return Err(Malformed("an unsigned varint is out of the u32 range"));
        }
        value |= u32::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(Malformed("an unsigned varint is longer than 5 bytes"))
}

/// A compact array's length (0 for a null array), never more than the bytes left: every
/// element of the arrays read here takes at least one byte.
pub fn compact_count(c: &mut Cursor<'_>) -> Result<usize, Malformed> {
    let n = (uvarint(c)? as usize).saturating_sub(1);
    if n > c.remaining() {
        return Err(Malformed("an array has more elements than the bytes left"));
    }
    Ok(n)
}

/// Compact bytes (or a compact string's bytes): `None` for null.
pub fn compact_bytes<'a>(c: &mut Cursor<'a>) -> Result<Option<&'a [u8]>, Malformed> {
    match uvarint(c)? {
        0 => Ok(None),
        n => c.take(n as usize - 1).map(Some),
    }
}

/// A compact string: `None` for null.
pub fn compact_string<'a>(c: &mut Cursor<'a>) -> Result<Option<&'a str>, Malformed> {
    match compact_bytes(c)? {
        None => Ok(None),
        Some(b) => std::str::from_utf8(b)
            .map(Some)
            .map_err(|_| Malformed("a string is not UTF-8")),
    }
}

/// Past a tagged-field section: its count, then each field's tag, size and bytes.
pub fn skip_tags(c: &mut Cursor<'_>) -> Result<(), Malformed> {
    for _ in 0..uvarint(c)? {
        uvarint(c)?;
        let size = uvarint(c)? as usize;
        c.take(size)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::sample::request_header;

    #[test]
    fn unsigned_varints_read_back_as_written_and_bad_ones_are_malformed() {
        for v in [0, 1, 127, 128, 300, 16_383, 16_384, u32::MAX] {
            let mut r = Request::new(9, 7, 1, "me");
            r.uvarint(v);
            let bytes = r.finish();
            let (mut c, _) = request_header(&bytes);
            assert_eq!(uvarint(&mut c), Ok(v));
            assert_eq!(c.remaining(), 0);
        }
        let (one, two) = ([0x96u8, 0x01], [0x80u8, 0x80, 0x80, 0x80, 0x10]);
        assert_eq!(uvarint(&mut Cursor::new(&one)), Ok(150));
        assert!(uvarint(&mut Cursor::new(&two)).is_err()); // 2^32
        assert!(uvarint(&mut Cursor::new(&[0x80u8; 6])).is_err());
        assert!(uvarint(&mut Cursor::new(&[0x80u8])).is_err());
    }

    #[test]
    fn compact_strings_arrays_and_tags() {
        let mut r = Request::new(9, 7, 1, "me");
        r.compact_string("orders");
        r.compact_len(2);
        r.i8(7);
        r.i8(8);
        r.no_tags();
        let bytes = r.finish();
        let (mut c, _) = request_header(&bytes);
        assert_eq!(compact_string(&mut c), Ok(Some("orders")));
        assert_eq!(compact_count(&mut c), Ok(2));
        assert_eq!((c.i8(), c.i8()), (Ok(7), Ok(8)));
        assert_eq!(skip_tags(&mut c), Ok(()));
        assert_eq!(c.remaining(), 0);
        // two tagged fields: tag 0 of 2 bytes, tag 5 of 0 bytes; then a null string
        let tagged = [2u8, 0, 2, 0xaa, 0xbb, 5, 0, 0];
        let mut c = Cursor::new(&tagged);
        assert_eq!(skip_tags(&mut c), Ok(()));
        assert_eq!(compact_string(&mut c), Ok(None));
        assert!(skip_tags(&mut Cursor::new(&[1u8, 0, 9, 1])).is_err());
        assert!(compact_count(&mut Cursor::new(&[9u8, 1])).is_err());
        assert!(compact_string(&mut Cursor::new(&[2u8, 0xff])).is_err());
    }
}
