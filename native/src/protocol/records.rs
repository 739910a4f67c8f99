//! Kafka record batches (magic 2) as a Fetch response carries them: their headers, their
//! records, and their control records (transaction markers).
//!
//! A batch is checked as the Java consumer checks it (a record count the payload cannot hold,
//! bytes left after the last record, a record whose length or offset delta disagrees with its
//! batch): such a batch is [`Problem::Malformed`], and so is nothing of it read. What this path
//! does not read (an older message format, an unknown codec, a batch decompressing past the
//! size bound) is [`Problem::Unsupported`]. Either way the reader hands the partition to
//! librdkafka from the batch's first offset. Where a batch ends, and whether its bytes are the
//! ones it was written with, is [`super::batch_frame`]'s.

use std::borrow::Cow;

use super::compression::decompress;
use super::error::Problem;
use super::primitives::Cursor;

pub const HEAD_LEN: usize = 61;
const COMPRESSION_MASK: i16 = 0x07;
pub const LOG_APPEND_TIME: i16 = 0x08;
pub const TRANSACTIONAL: i16 = 0x10;
pub const CONTROL: i16 = 0x20;
/// librdkafka's timestamp types, which the batch builder takes: create time, log append time.
const CREATE_TIME_TYPE: i32 = 1;
const LOG_APPEND_TIME_TYPE: i32 = 2;
/// The fewest bytes a record takes: its length, attributes, timestamp and offset deltas, key
/// and value lengths and header count, one byte each.
const MIN_RECORD_LEN: usize = 7;

/// The fixed part of a record batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchHead {
    pub base_offset: i64,
    /// Offset of the batch's last record as written (compaction keeps it).
    pub last_offset: i64,
    attributes: i16,
    base_timestamp: i64,
    max_timestamp: i64,
    /// -1 when the batch has none (neither idempotent nor transactional).
    pub producer_id: i64,
    /// The CRC-32C the batch was written with (see [`crc`]).
    pub crc: u32,
    count: i32,
    /// The whole batch's length in bytes.
    pub size: usize,
}

impl BatchHead {
    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL != 0
    }

    pub fn is_transactional(&self) -> bool {
        self.attributes & TRANSACTIONAL != 0
    }

    /// Whether an idempotent or transactional producer wrote it.
    pub fn has_producer_id(&self) -> bool {
        self.producer_id >= 0
    }
}

/// The head of a whole batch, as [`super::batch_frame::frame`] delimits it in a response.
pub fn head(batch: &[u8]) -> Result<BatchHead, Problem> {
    if batch.len() < HEAD_LEN {
        return Err(Problem::Malformed("a batch is shorter than its header"));
    }
    let mut c = Cursor::new(batch);
    let base_offset = c.i64()?;
    c.i32()?; // length
    c.i32()?; // partition leader epoch
    c.i8()?; // magic
    let crc = c.i32()? as u32;
    let attributes = c.i16()?;
    let last_delta = c.i32()?;
    let base_timestamp = c.i64()?;
    let max_timestamp = c.i64()?;
    let producer_id = c.i64()?;
    c.i16()?; // producer epoch
    c.i32()?; // base sequence
    let count = c.i32()?;
    if count < 0 || last_delta < 0 {
        return Err(Problem::Malformed(
            "a negative record count or last offset delta",
        ));
    }
    let last_offset = base_offset
        .checked_add(i64::from(last_delta))
        .ok_or(Problem::Malformed("a batch's last offset is past 2^63"))?;
    Ok(BatchHead {
        base_offset,
        last_offset,
        attributes,
        base_timestamp,
        max_timestamp,
        producer_id,
        crc,
        count,
        size: batch.len(),
    })
}

/// A record's headers in order: (name, value), the value null or bytes. A name that is not
/// UTF-8 is given as the Java client decodes it (invalid bytes as U+FFFD), on every reader.
pub type Headers<'a> = Vec<(Cow<'a, str>, Option<&'a [u8]>)>;

/// One record of a batch, borrowed from the response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rec<'a> {
    pub offset: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    /// librdkafka's timestamp type and ms, as [`crate::into_arrow::Record`] takes them.
    pub timestamp: (i32, i64),
    /// `None` when the record has no headers (as librdkafka reports it).
    pub headers: Option<Headers<'a>>,
}

/// The records section of the batch whose head is `h` (`batch` is the whole batch): in place,
/// or decompressed into `scratch`, never past `max_size` bytes.
pub fn payload<'b>(
    h: &BatchHead,
    batch: &'b [u8],
    scratch: &'b mut Vec<u8>,
    max_size: usize,
) -> Result<&'b [u8], Problem> {
    let records = batch
        .get(HEAD_LEN..h.size)
        .ok_or(Problem::Malformed("a batch is shorter than its head says"))?;
    match h.attributes & COMPRESSION_MASK {
        0 => Ok(records),
        codec => {
            decompress(codec, records, scratch, max_size)?;
            Ok(scratch)
        }
    }
}

/// Every record of the batch whose head is `h`, from its records section (see [`payload`]),
/// with headers only when `with_headers`; all of them or an error, never a part.
pub fn records<'a>(
    h: &BatchHead,
    payload: &'a [u8],
    with_headers: bool,
) -> Result<Vec<Rec<'a>>, Problem> {
    let count = h.count as usize;
    if count > payload.len() / MIN_RECORD_LEN {
        return Err(Problem::Malformed(
            "more records than the batch's bytes hold",
        ));
    }
    let last_delta = h.last_offset - h.base_offset;
    let log_append = h.attributes & LOG_APPEND_TIME != 0;
    let mut out = Vec::with_capacity(count);
    let mut c = Cursor::new(payload);
    for _ in 0..count {
        let len = c.varint()?;
        let start = c.position();
        c.i8()?; // attributes
        let ts_delta = c.varlong()?;
        let offset_delta = i64::from(c.varint()?);
        if !(0..=last_delta).contains(&offset_delta) {
            return Err(Problem::Malformed(
                "a record's offset delta is outside its batch",
            ));
        }
        let key = c.var_bytes()?;
        let value = c.var_bytes()?;
        // Each header takes two bytes at least (its name's and its value's lengths).
        let header_count = usize::try_from(c.varint()?)
            .ok()
            .filter(|&n| n <= c.remaining() / 2)
            .ok_or(Problem::Malformed(
                "a record's header count is negative or more than its bytes hold",
            ))?;
        let mut headers = None;
        if header_count > 0 {
            let mut list = Vec::with_capacity(if with_headers { header_count } else { 0 });
            for _ in 0..header_count {
                let name = c
                    .var_bytes()?
                    .ok_or(Problem::Malformed("a record header's name is null"))?;
                let value = c.var_bytes()?;
                if with_headers {
                    // As the Java client decodes a header key: invalid UTF-8 becomes U+FFFD.
                    list.push((String::from_utf8_lossy(name), value));
                }
            }
            if with_headers {
                headers = Some(list);
            }
        }
        if len < 0 || c.position() - start != len as usize {
            return Err(Problem::Malformed(
                "a record's length does not match its fields",
            ));
        }
        let timestamp = if log_append {
            (LOG_APPEND_TIME_TYPE, h.max_timestamp)
        } else {
            // As the Java client adds them (a long's overflow wraps).
            (CREATE_TIME_TYPE, h.base_timestamp.wrapping_add(ts_delta))
        };
        out.push(Rec {
            offset: h.base_offset + offset_delta,
            key,
            value,
            timestamp,
            headers,
        });
    }
    if c.remaining() != 0 {
        return Err(Problem::Malformed(
            "bytes are left after the batch's records",
        ));
    }
    Ok(out)
}

/// What a control record says (its key: a version, then a type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    Abort,
    Commit,
    /// A type this path does not act on (e.g. a KRaft leader change).
    Other,
}

/// What the control batch whose head is `h` marks, from its first record's key; a key shorter
/// than 4 bytes, or of a negative version, is malformed (the Java consumer throws).
pub fn control(h: &BatchHead, batch: &[u8], max_size: usize) -> Result<Control, Problem> {
    let mut scratch = Vec::new();
    let payload = payload(h, batch, &mut scratch, max_size)?;
    let Some(first) = records(h, payload, false)?.into_iter().next() else {
        return Ok(Control::Other);
    };
    let key = first.key.unwrap_or_default();
    if key.len() < 4 {
        return Err(Problem::Malformed(
            "a control record's key is shorter than 4 bytes",
        ));
    }
    if i16::from_be_bytes([key[0], key[1]]) < 0 {
        return Err(Problem::Malformed(
            "a control record's key has a negative version",
        ));
    }
    Ok(match i16::from_be_bytes([key[2], key[3]]) {
        0 => Control::Abort,
        1 => Control::Commit,
        _ => Control::Other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::sample::{batch, raw_batch, record, Item};

    const MAX: usize = 1 << 20;

    fn all<'a>(b: &'a [u8], scratch: &'a mut Vec<u8>) -> Result<Vec<Rec<'a>>, Problem> {
        let h = head(b)?;
        records(&h, payload(&h, b, scratch, MAX)?, true)
    }

    #[test]
    fn records_keep_nulls_gaps_headers_and_timestamps() {
        let b = batch(
            40,
            0,
            -1,
            &[
                (0, None, Some(b"v0"), vec![]),
                (3, Some(b"k"), None, vec![(b"h", Some(b"1")), (b"n", None)]),
            ],
        );
        let h = head(&b).unwrap();
        assert_eq!((h.base_offset, h.last_offset, h.size), (40, 43, b.len()));
        let mut scratch = Vec::new();
        let seen = all(&b, &mut scratch).unwrap();
        assert_eq!(seen[0].offset, 40);
        assert_eq!((seen[0].key, seen[0].value), (None, Some(b"v0".as_slice())));
        assert_eq!(
            (seen[0].timestamp, seen[0].headers.clone()),
            ((1, 1000), None)
        );
        let hdrs = vec![("h".into(), Some(b"1".as_slice())), ("n".into(), None)];
        assert_eq!((seen[1].offset, seen[1].timestamp), (43, (1, 1010)));
        assert_eq!(seen[1].headers, Some(hdrs));
        let appended = batch(0, LOG_APPEND_TIME, -1, &[(0, None, None, vec![])]);
        assert_eq!(
            all(&appended, &mut Vec::new()).unwrap()[0].timestamp,
            (2, 2000)
        );
    }

    #[test]
    fn a_header_name_that_is_not_utf8_reads_as_the_java_client_decodes_it() {
        let b = batch(0, 0, -1, &[(0, None, None, vec![(b"a\xffb", None)])]);
        let mut scratch = Vec::new();
        let seen = all(&b, &mut scratch).unwrap();
        assert_eq!(seen[0].headers, Some(vec![("a\u{fffd}b".into(), None)]));
    }

    #[test]
    fn an_unknown_codec_says_why() {
        let odd = batch(0, 5, -1, &[(0, None, Some(b"x"), vec![])]);
        let h = head(&odd).unwrap();
        let unknown = payload(&h, &odd, &mut Vec::new(), MAX).map(<[u8]>::to_vec);
        assert!(matches!(unknown, Err(Problem::Unsupported(w)) if w.contains("codec 5")));
    }

    #[test]
    fn batches_the_java_consumer_rejects_are_malformed_as_a_whole() {
        let items: [Item<'_>; 2] = [(0, None, Some(b"a"), vec![]), (1, None, Some(b"b"), vec![])];
        let two: Vec<u8> = items
            .iter()
            .enumerate()
            .flat_map(|(i, r)| record(i, r))
            .collect();
        // A head is read from whole batches only, and its last offset stays within 2^63.
        assert!(head(&[0; HEAD_LEN - 1]).is_err());
        let mut past = raw_batch(i64::MAX, 0, -1, 1, 0, &[]);
        let overflow = Err(Problem::Malformed("a batch's last offset is past 2^63"));
        assert_eq!(head(&past), overflow);
        past[..8].copy_from_slice(&(i64::MAX - 1).to_be_bytes());
        assert_eq!(head(&past).unwrap().last_offset, i64::MAX);
        let h = head(&past).unwrap();
        assert!(payload(&h, &past[..HEAD_LEN - 1], &mut Vec::new(), MAX).is_err());
        let malformed = |b: Vec<u8>, what: &str| {
            let why = all(&b, &mut Vec::new()).unwrap_err();
            assert!(
                matches!(why, Problem::Malformed(w) if w.contains(what)),
                "{why:?}"
            );
        };
        // The count says 3, the payload holds 2 (and too few bytes for a third).
        malformed(raw_batch(0, 0, -1, 1, 3, &two), "more records");
        // The count says 1: the second record's bytes are left over.
        malformed(raw_batch(0, 0, -1, 1, 1, &two), "bytes are left");
        // The second record's offset delta (1) is past the batch's last offset delta (0).
        malformed(raw_batch(0, 0, -1, 0, 2, &two), "offset delta");
        // A record's length prefix one byte longer than its fields.
        let mut long = record(0, &items[0]);
        long[0] += 2;
        long.push(0);
        malformed(raw_batch(0, 0, -1, 0, 1, &long), "length does not match");
        let negative = raw_batch(0, 0, -1, 0, -1, &[]);
        assert!(matches!(head(&negative), Err(Problem::Malformed(_))));
        // Header counts and names: a negative count, more headers than bytes, a null name.
        let headed = record(0, &(0, None, None, vec![(b"h", None)]));
        let count_at = headed.len() - 4; // the count's varint, before "h"'s name length
        assert_eq!(headed[count_at], 2); // 1 as a zigzag varint
        for (count, what) in [(1u8, "header count"), (0x7e, "header count")] {
            let mut bad = headed.clone();
            bad[count_at] = count; // -1, then 63
            malformed(raw_batch(0, 0, -1, 0, 1, &bad), what);
        }
        let mut null_name = headed.clone();
        null_name[count_at + 1] = 1; // the name's length: -1
        null_name.remove(count_at + 2); // its byte "h"
        null_name[0] -= 1;
        malformed(raw_batch(0, 0, -1, 0, 1, &null_name), "name is null");
        // An empty batch (the log cleaner keeps one for its producer state) reads as no records.
        let empty = raw_batch(10, TRANSACTIONAL, 7, 4, 0, &[]);
        let h = head(&empty).unwrap();
        assert_eq!(h.last_offset, 14);
        assert!(all(&empty, &mut Vec::new()).unwrap().is_empty());
    }
}
