//! Kafka's wire primitives in the non-flexible encoding the direct path speaks: big-endian
//! integers, int16-length strings, int32-length arrays and bytes, and the zigzag varints of
//! record batches; a [`Cursor`] reads them, a [`Request`] writes them behind a request header.

use std::ops::Range;

/// Something the bytes do not hold: a response shorter than its fields say, or a bad varint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

/// Reads big-endian fields and varints from a byte slice.
pub struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, pos: 0 }
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if n > self.remaining() {
            return Err(Malformed("a field runs past the end of the data"));
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Malformed> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    pub fn i8(&mut self) -> Result<i8, Malformed> {
        Ok(i8::from_be_bytes(self.array()?))
    }

    pub fn i16(&mut self) -> Result<i16, Malformed> {
        Ok(i16::from_be_bytes(self.array()?))
    }

    pub fn i32(&mut self) -> Result<i32, Malformed> {
        Ok(i32::from_be_bytes(self.array()?))
    }

    pub fn i64(&mut self) -> Result<i64, Malformed> {
        Ok(i64::from_be_bytes(self.array()?))
    }

    /// An int16-length string (null when the length is -1).
    pub fn string(&mut self) -> Result<Option<&'a str>, Malformed> {
        let Some(len) = length(self.i16()?.into())? else {
            return Ok(None);
        };
        std::str::from_utf8(self.take(len)?)
            .map(Some)
            .map_err(|_| Malformed("a string is not UTF-8"))
    }

    /// An int32 array length (0 for a null array), never more than the bytes left: every
    /// element of the arrays read here takes at least one byte.
    pub fn count(&mut self) -> Result<usize, Malformed> {
        let n = length(self.i32()?)?.unwrap_or(0);
        if n > self.remaining() {
            return Err(Malformed("an array has more elements than the bytes left"));
        }
        Ok(n)
    }

    /// The index range of int32-length bytes (empty for null), for a caller keeping the buffer.
    pub fn bytes_range(&mut self) -> Result<Range<usize>, Malformed> {
        let len = length(self.i32()?)?.unwrap_or(0);
        let start = self.pos;
        self.take(len)?;
        Ok(start..start + len)
    }

    /// A zigzag varint (a record's int32 fields).
    pub fn varint(&mut self) -> Result<i32, Malformed> {
        let v = self.varlong()?;
        i32::try_from(v).map_err(|_| Malformed("a varint is out of the int32 range"))
    }

    /// A zigzag varlong.
    pub fn varlong(&mut self) -> Result<i64, Malformed> {
        let mut raw: u64 = 0;
        let mut shift = 0u32;
        loop {
            let Some(&byte) = self.bytes.get(self.pos) else {
                return Err(Malformed("a varint runs past the end of the data"));
            };
            self.pos += 1;
            raw |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                break;
            }
            shift += 7;
            if shift > 63 {
                return Err(Malformed("a varint is longer than 10 bytes"));
            }
        }
        Ok((raw >> 1) as i64 ^ -((raw & 1) as i64))
    }

    /// Varint-length bytes: `None` for a length of -1.
    pub fn var_bytes(&mut self) -> Result<Option<&'a [u8]>, Malformed> {
        match length(self.varint()?)? {
            None => Ok(None),
            Some(len) => self.take(len).map(Some),
        }
    }
}

/// A length as Kafka encodes one: `None` for -1 (null), an error for any other negative one
/// (Kafka defines none; librdkafka and the Java client refuse them too).
fn length(len: i32) -> Result<Option<usize>, Malformed> {
    match len {
        -1 => Ok(None),
        ..=-2 => Err(Malformed("a negative length other than -1 (null)")),
        _ => Ok(Some(len as usize)),
    }
}

/// Make room in `out` for `more` bytes past its length, doubling its capacity as `Vec` does but
/// never past `limit` (unless the room asked for is past it).
pub fn grow(out: &mut Vec<u8>, more: usize, limit: usize) {
    let needed = out.len() + more;
    if needed > out.capacity() {
        let target = (out.capacity() * 2).clamp(needed, limit.max(needed));
        out.reserve_exact(target - out.len());
    }
}

/// What `reader` gives into `out` (after what it holds), until its end or until `out` holds
/// `limit` bytes. `out` grows with the bytes that arrive, its room doubling, each byte zeroed
/// once, and its capacity never past `limit`: a length that promises more than comes claims no
/// memory for it.
pub fn read_growing(
    reader: &mut dyn std::io::Read,
    out: &mut Vec<u8>,
    limit: usize,
) -> std::io::Result<()> {
    /// The least room made at a time.
    const CHUNK: usize = 64 * 1024;
    let mut filled = out.len();
    let done = loop {
        if filled >= limit {
            break Ok(());
        }
        if filled == out.len() {
            let room = (filled + CHUNK.max(filled)).min(limit);
            grow(out, room - filled, limit);
            out.resize(room, 0);
        }
        match reader.read(&mut out[filled..]) {
            Ok(0) => break Ok(()),
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => break Err(e),
        }
    };
    out.truncate(filled);
    done
}

/// A Kafka API as this client speaks it: its key, the versions spoken (most preferred first)
/// and its name (in errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Api {
    pub key: i16,
    pub versions: &'static [i16],
    pub name: &'static str,
}

impl Api {
    pub const fn new(key: i16, versions: &'static [i16], name: &'static str) -> Self {
        Api {
            key,
            versions,
            name,
        }
    }

    /// A request of this API with `header`.
    pub fn request(&self, header: Header<'_>) -> Request {
        Request::new(
            self.key,
            header.version,
            header.correlation,
            header.client_id,
        )
    }

    /// A request of this API at its most preferred version (for most, the one spoken).
    pub fn preferred(&self, correlation: i32, client_id: &str) -> Request {
        Request::new(self.key, self.versions[0], correlation, client_id)
    }
}

/// What one attempt of a request writes in its header besides the API key: the version
/// chosen of those the broker offers, the correlation id and the client id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<'a> {
    pub version: i16,
    pub correlation: i32,
    pub client_id: &'a str,
}

impl<'a> Header<'a> {
    pub const fn new(version: i16, correlation: i32, client_id: &'a str) -> Self {
        Header {
            version,
            correlation,
            client_id,
        }
    }
}

/// A request being written: the size prefix is filled in by [`Request::finish`].
pub struct Request(Vec<u8>);

impl Request {
    /// A request header v1: API key, version, correlation id, client id.
    pub fn new(api_key: i16, version: i16, correlation: i32, client_id: &str) -> Self {
        let mut r = Request(Vec::with_capacity(256));
        r.i32(0);
        r.i16(api_key);
        r.i16(version);
        r.i32(correlation);
        r.string(client_id);
        r
    }

    pub fn i8(&mut self, v: i8) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }

    pub fn i16(&mut self, v: i16) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }

    pub fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }

    pub fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }

    pub fn string(&mut self, s: &str) {
        // Topic names and client ids are far shorter than 32,767 bytes (Kafka caps topics at 249).
        self.i16(s.len().min(i16::MAX as usize) as i16);
        self.0
            .extend_from_slice(&s.as_bytes()[..s.len().min(i16::MAX as usize)]);
    }

    /// A null string (length -1).
    pub fn null_string(&mut self) {
        self.i16(-1);
    }

    /// The bytes written so far, the size prefix included.
    pub fn written(&self) -> usize {
        self.0.len()
    }

    /// Bytes as they are, no length before them.
    pub fn raw(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }

    /// int32-length bytes.
    pub fn bytes(&mut self, b: &[u8]) {
        self.i32(b.len().min(i32::MAX as usize) as i32);
        self.0.extend_from_slice(b);
    }

    /// `items` as Kafka's array of topics: each run of consecutive items of one topic (`topic`
    /// names it) written once, its name, then its items' count and each item by `item`.
    pub fn by_topic<T>(
        &mut self,
        items: &[T],
        topic: impl Fn(&T) -> &str,
        mut item: impl FnMut(&mut Self, &T),
    ) {
        let runs: Vec<&[T]> = items.chunk_by(|a, b| topic(a) == topic(b)).collect();
        self.i32(runs.len() as i32);
        for run in runs {
            self.string(topic(&run[0]));
            self.i32(run.len() as i32);
            for it in run {
                item(self, it);
            }
        }
    }

    /// The bytes to send, size prefix included.
    pub fn finish(self) -> Vec<u8> {
        self.finish_beside(0)
    }

    /// The bytes to send, the size prefix counting `beside` more bytes sent with them.
    pub fn finish_beside(mut self, beside: usize) -> Vec<u8> {
        let size = (self.0.len() - 4 + beside) as i32;
        self.0[..4].copy_from_slice(&size.to_be_bytes());
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zigzag(v: i64) -> Vec<u8> {
        let mut raw = ((v << 1) ^ (v >> 63)) as u64;
        let mut out = Vec::new();
        loop {
            if raw < 0x80 {
                out.push(raw as u8);
                return out;
            }
            out.push((raw as u8 & 0x7f) | 0x80);
            raw >>= 7;
        }
    }

    #[test]
    fn varints_round_trip_at_the_edges() {
        for v in [
            0,
            -1,
            1,
            63,
            -64,
            64,
            300,
            i32::MAX as i64,
            i32::MIN as i64,
            i64::MAX,
            i64::MIN,
        ] {
            let bytes = zigzag(v);
            let mut c = Cursor::new(&bytes);
            assert_eq!(c.varlong().unwrap(), v);
            assert_eq!(c.remaining(), 0);
        }
        let big = zigzag(i64::from(i32::MAX) + 1);
        assert!(Cursor::new(&big).varint().is_err());
        assert!(Cursor::new(&[0x80, 0x80]).varlong().is_err());
    }

    #[test]
    fn a_growing_read_stops_at_the_end_or_the_limit_and_allocates_no_more() {
        let data: Vec<u8> = (0..300_000u32).map(|i| i as u8).collect();
        let mut out = b"ab".to_vec();
        read_growing(&mut data.as_slice(), &mut out, 1 << 30).unwrap();
        assert_eq!((&out[..2], &out[2..]), (&b"ab"[..], data.as_slice()));
        assert!(out.capacity() < 2 * out.len());
        let mut out = Vec::new();
        read_growing(&mut data.as_slice(), &mut out, 100_001).unwrap();
        assert_eq!(
            (out.as_slice(), out.capacity()),
            (&data[..100_001], 100_001)
        );
    }

    #[test]
    fn minus_one_is_null_and_other_negative_lengths_are_malformed() {
        let negative = Malformed("a negative length other than -1 (null)");
        assert_eq!(Cursor::new(&[0xff, 0xff]).string(), Ok(None));
        assert_eq!(Cursor::new(&[0xff, 0xfe]).string(), Err(negative.clone()));
        assert_eq!(Cursor::new(&(-1i32).to_be_bytes()).count(), Ok(0));
        assert_eq!(
            Cursor::new(&(-2i32).to_be_bytes()).count(),
            Err(negative.clone())
        );
        assert_eq!(Cursor::new(&(-1i32).to_be_bytes()).bytes_range(), Ok(4..4));
        let min = i32::MIN.to_be_bytes();
        assert_eq!(Cursor::new(&min).bytes_range(), Err(negative.clone()));
        assert_eq!(Cursor::new(&zigzag(-1)).var_bytes(), Ok(None));
        assert_eq!(Cursor::new(&zigzag(-2)).var_bytes(), Err(negative));
        // An array claiming more elements than bytes follow is refused before any is read.
        let mut claim = 5i32.to_be_bytes().to_vec();
        claim.extend_from_slice(&[0; 4]);
        let too_many = Cursor::new(&claim).count().unwrap_err();
        assert_eq!(too_many.0, "an array has more elements than the bytes left");
    }
}
