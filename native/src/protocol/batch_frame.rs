//! Where a record batch ends in a Fetch response, and whether its bytes are the ones it was
//! written with.
//!
//! A batch's base offset, length and magic byte precede what its CRC-32C covers (Kafka rewrites
//! the base offset when it appends a batch), so a damaged length cannot be caught by the CRC:
//! [`frame`] reads the length first and bounds it, before anything of the batch is read. A
//! length shorter than a batch's header (a negative one included), longer than the bound of a
//! whole response, or a magic byte of no message format, is [`Problem::Malformed`] (the direct
//! path fetches such a batch once more: see `read/direct/parse.rs`); message formats v0 and v1
//! are [`Problem::Unsupported`] (librdkafka reads them).

use super::error::Problem;
use super::primitives::Cursor;
use super::records::HEAD_LEN;

/// Where a batch's magic byte (its message format) is.
const MAGIC_AT: usize = 16;
/// Where the bytes a batch's CRC covers begin: its attributes.
const CRC_FROM: usize = 21;

/// The size of the batch at the start of `bytes`; `None` when `bytes` hold only part of it (a
/// Fetch response may end inside a batch). Its length is not covered by the CRC: one shorter
/// than a batch's header (a negative one too) or longer than `max_size`, the bound of a whole
/// response, is malformed, and so is a magic byte no message format has; message formats v0
/// and v1 are unsupported here.
pub fn frame(bytes: &[u8], max_size: usize) -> Result<Option<usize>, Problem> {
    if bytes.len() < 12 {
        return Ok(None);
    }
    let mut c = Cursor::new(bytes);
    c.i64()?; // base offset
    let length = c.i32()?;
    if let Some(&magic) = bytes.get(MAGIC_AT) {
        match magic {
            2 => {}
            0 | 1 => {
                return Err(Problem::Unsupported(format!(
                    "a record batch of message format v{magic} (this path reads v2)"
                )))
            }
            _ => {
                return Err(Problem::Malformed(
                    "a record batch of no known message format",
                ))
            }
        }
    }
    if length < (HEAD_LEN - 12) as i32 {
        return Err(Problem::Malformed("a batch is shorter than its header"));
    }
    let size = 12 + length as usize;
    if size > max_size {
        return Err(Problem::Malformed(
            "a batch is longer than receive.message.max.bytes",
        ));
    }
    Ok((bytes.len() >= size).then_some(size))
}

/// The CRC-32C (Castagnoli) of a whole batch's bytes from its attributes on: what its head's
/// `crc` must be.
pub fn crc(batch: &[u8]) -> u32 {
    crc32c::crc32c(&batch[CRC_FROM.min(batch.len())..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::sample::batch;

    const MAX: usize = 1 << 20;

    #[test]
    fn a_partial_batch_waits_and_older_formats_are_unsupported() {
        let b = batch(0, 0, -1, &[(0, None, Some(b"x"), vec![])]);
        assert_eq!(frame(&b, MAX), Ok(Some(b.len())));
        assert_eq!(frame(&b[..b.len() - 1], MAX), Ok(None));
        assert_eq!(frame(&b[..5], MAX), Ok(None));
        let mut old = b.clone();
        old[16] = 1;
        assert!(matches!(frame(&old, MAX), Err(Problem::Unsupported(_))));
        assert_eq!(crc(&b), u32::from_be_bytes([b[17], b[18], b[19], b[20]]));
    }

    #[test]
    fn lengths_the_crc_does_not_cover_are_bounded_before_anything_is_read() {
        let b = batch(0, 0, -1, &[(0, None, Some(b"x"), vec![])]);
        let framed = |length: i32, magic: u8| {
            let mut d = b.clone();
            d[8..12].copy_from_slice(&length.to_be_bytes());
            d[16] = magic;
            frame(&d, MAX)
        };
        let malformed = |what: &'static str| Err(Problem::Malformed(what));
        for short in [-1, i32::MIN, 0, 48] {
            let shorter = malformed("a batch is shorter than its header");
            assert_eq!(framed(short, 2), shorter);
        }
        let longer = malformed("a batch is longer than receive.message.max.bytes");
        assert_eq!(framed(i32::MAX, 2), longer);
        assert_eq!(framed((MAX - 11) as i32, 2), longer);
        assert_eq!(framed((MAX - 12) as i32, 2), Ok(None)); // may be whole in a later response
        let unknown = malformed("a record batch of no known message format");
        assert_eq!(framed(b.len() as i32 - 12, 0xfe), unknown);
    }
}
