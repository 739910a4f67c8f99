//! Kafka record batches (magic 2) as a Fetch response carries them: their headers, their
//! records, and which batches read_committed hides (aborted transactions, control batches).
//!
//! What this path does not read (an older message format, an unknown codec) is reported as
//! [`Problem::Unsupported`], so that the reader hands the partition to librdkafka.

use super::codec::decompress;
use super::wire::{Cursor, Malformed};
use crate::ffi::Headers;

const HEAD_LEN: usize = 61;
const COMPRESSION_MASK: i16 = 0x07;
const LOG_APPEND_TIME: i16 = 0x08;
const TRANSACTIONAL: i16 = 0x10;
const CONTROL: i16 = 0x20;
/// librdkafka's timestamp types, which the batch builder takes: create time, log append time.
const CREATE_TIME_TYPE: i32 = 1;
const LOG_APPEND_TIME_TYPE: i32 = 2;

/// Why a batch cannot be read here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    Malformed(&'static str),
    Unsupported(String),
}

impl From<Malformed> for Problem {
    fn from(m: Malformed) -> Self {
        Problem::Malformed(m.0)
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Malformed(what) => write!(f, "a malformed record batch: {what}"),
            Problem::Unsupported(what) => write!(f, "{what}"),
        }
    }
}

/// The fixed part of a record batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchHead {
    pub base_offset: i64,
    /// Offset of the batch's last record as written (compaction keeps it).
    pub last_offset: i64,
    attributes: i16,
    base_timestamp: i64,
    max_timestamp: i64,
    pub producer_id: i64,
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
}

/// The head of the batch at the start of `bytes`; `None` when `bytes` holds only part of it
/// (a Fetch response may end inside a batch).
pub fn head(bytes: &[u8]) -> Result<Option<BatchHead>, Problem> {
    if bytes.len() < 12 {
        return Ok(None);
    }
    let mut c = Cursor::new(bytes);
    let base_offset = c.i64()?;
    let length = c.i32()?;
    if length < (HEAD_LEN - 12) as i32 {
        return Err(Problem::Malformed("a batch is shorter than its header"));
    }
    let size = 12 + length as usize;
    if bytes.len() < size {
        return Ok(None);
    }
    c.i32()?; // partition leader epoch
    let magic = c.i8()?;
    if magic != 2 {
        return Err(Problem::Unsupported(format!(
            "a record batch of message format v{magic} (this path reads v2)"
        )));
    }
    c.i32()?; // CRC (not checked, as librdkafka's default check.crcs=false does not)
    let attributes = c.i16()?;
    let last_delta = c.i32()?;
    let base_timestamp = c.i64()?;
    let max_timestamp = c.i64()?;
    let producer_id = c.i64()?;
    c.i16()?; // producer epoch
    c.i32()?; // base sequence
    let count = c.i32()?;
    Ok(Some(BatchHead {
        base_offset,
        last_offset: base_offset + i64::from(last_delta),
        attributes,
        base_timestamp,
        max_timestamp,
        producer_id,
        count,
        size,
    }))
}

/// One record of a batch, borrowed from the response.
pub struct Rec<'a> {
    pub offset: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    /// librdkafka's timestamp type and ms, as [`crate::batch::Record`] takes them.
    pub timestamp: (i32, i64),
    /// `None` when the record has no headers (as librdkafka reports it).
    pub headers: Option<Headers<'a>>,
}

/// The records section of the batch whose head is `h` (`batch` is the whole batch): in place,
/// or decompressed into `scratch`.
pub fn payload<'b>(
    h: &BatchHead,
    batch: &'b [u8],
    scratch: &'b mut Vec<u8>,
) -> Result<&'b [u8], Problem> {
    let records = &batch[HEAD_LEN..h.size];
    match h.attributes & COMPRESSION_MASK {
        0 => Ok(records),
        codec => {
            decompress(codec, records, scratch)?;
            Ok(scratch)
        }
    }
}

/// Calls `each` for every record of the batch whose head is `h`, from its records section
/// (see [`payload`]), parsing headers only when `with_headers`.
pub fn records<'a>(
    h: &BatchHead,
    payload: &'a [u8],
    with_headers: bool,
    mut each: impl FnMut(Rec<'a>),
) -> Result<(), Problem> {
    let mut c = Cursor::new(payload);
    let log_append = h.attributes & LOG_APPEND_TIME != 0;
    for _ in 0..h.count.max(0) {
        let len = c.varint()?;
        let start = c.position();
        c.i8()?; // attributes
        let ts_delta = c.varlong()?;
        let offset_delta = c.varint()?;
        let key = c.var_bytes()?;
        let value = c.var_bytes()?;
        let header_count = c.varint()?;
        let mut headers = None;
        if header_count > 0 {
            let mut list = Vec::new();
            for _ in 0..header_count {
                let name = c.var_bytes()?.unwrap_or_default();
                let value = c.var_bytes()?;
                if with_headers {
                    let name = std::str::from_utf8(name).map_err(|_| {
                        Problem::Unsupported("a header name that is not UTF-8".into())
                    })?;
                    list.push((name, value));
                }
            }
            if with_headers {
                headers = Some(list);
            }
        }
        if c.position() - start != len.max(0) as usize {
            return Err(Problem::Malformed(
                "a record's length does not match its fields",
            ));
        }
        let timestamp = if log_append {
            (LOG_APPEND_TIME_TYPE, h.max_timestamp)
        } else {
            (CREATE_TIME_TYPE, h.base_timestamp + ts_delta)
        };
        each(Rec {
            offset: h.base_offset + i64::from(offset_delta),
            key,
            value,
            timestamp,
            headers,
        });
    }
    Ok(())
}

/// Whether a control batch's record is an abort marker (its key: version, type 0 = abort).
pub fn is_abort_marker(h: &BatchHead, batch: &[u8]) -> Result<bool, Problem> {
    let mut abort = false;
    let mut scratch = Vec::new();
    records(h, payload(h, batch, &mut scratch)?, false, |r| {
        if let Some(key) = r.key {
            abort = key.len() >= 4 && i16::from_be_bytes([key[2], key[3]]) == 0;
        }
    })?;
    Ok(abort)
}

/// read_committed's filter for one partition's fetched data: the response's aborted
/// transactions (producer id, first offset) open as batches reach their first offset, and a
/// producer's abort marker closes its own; records of an open producer's transactional batches
/// are hidden, as are control batches.
#[derive(Debug, Default)]
pub struct Aborted {
    /// Not yet reached, sorted by first offset, the last first (popped from the end).
    waiting: Vec<(i64, i64)>,
    open: Vec<i64>,
}

impl Aborted {
    pub fn new(mut list: Vec<(i64, i64)>) -> Self {
        list.sort_by_key(|&(producer, first)| std::cmp::Reverse((first, producer)));
        Aborted {
            waiting: list,
            open: Vec::new(),
        }
    }

    /// Whether the batch's records are hidden; a control batch updates the filter.
    pub fn hides(&mut self, h: &BatchHead, batch: &[u8]) -> Result<bool, Problem> {
        if h.is_control() {
            if is_abort_marker(h, batch)? {
                self.open.retain(|p| *p != h.producer_id);
            }
            return Ok(true);
        }
        if !h.is_transactional() {
            return Ok(false);
        }
        while let Some(&(producer, first)) = self.waiting.last() {
            if first > h.last_offset {
                break;
            }
            self.waiting.pop();
            if !self.open.contains(&producer) {
                self.open.push(producer);
            }
        }
        Ok(self.open.contains(&h.producer_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(v: i64, out: &mut Vec<u8>) {
        let mut raw = ((v << 1) ^ (v >> 63)) as u64;
        loop {
            if raw < 0x80 {
                out.push(raw as u8);
                return;
            }
            out.push((raw as u8 & 0x7f) | 0x80);
            raw >>= 7;
        }
    }

    fn var_bytes(b: Option<&[u8]>, out: &mut Vec<u8>) {
        match b {
            None => varint(-1, out),
            Some(b) => {
                varint(b.len() as i64, out);
                out.extend_from_slice(b);
            }
        }
    }

    /// A batch as a broker writes it: (offset delta, key, value, headers) per record.
    type Item<'a> = (
        i32,
        Option<&'a [u8]>,
        Option<&'a [u8]>,
        Vec<(&'a [u8], Option<&'a [u8]>)>,
    );

    fn batch(base: i64, attributes: i16, producer: i64, items: &[Item<'_>]) -> Vec<u8> {
        let mut recs = Vec::new();
        for (i, (delta, key, value, headers)) in items.iter().enumerate() {
            let mut r = vec![0u8];
            varint(i as i64 * 10, &mut r);
            varint(i64::from(*delta), &mut r);
            var_bytes(*key, &mut r);
            var_bytes(*value, &mut r);
            varint(headers.len() as i64, &mut r);
            for (k, v) in headers {
                var_bytes(Some(k), &mut r);
                var_bytes(*v, &mut r);
            }
            varint(r.len() as i64, &mut recs);
            recs.extend_from_slice(&r);
        }
        let last = items.last().map_or(0, |i| i.0);
        let mut b = Vec::new();
        b.extend_from_slice(&base.to_be_bytes());
        b.extend_from_slice(&((HEAD_LEN - 12 + recs.len()) as i32).to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes());
        b.push(2);
        b.extend_from_slice(&0u32.to_be_bytes());
        b.extend_from_slice(&attributes.to_be_bytes());
        b.extend_from_slice(&last.to_be_bytes());
        b.extend_from_slice(&1000i64.to_be_bytes());
        b.extend_from_slice(&2000i64.to_be_bytes());
        b.extend_from_slice(&producer.to_be_bytes());
        b.extend_from_slice(&0i16.to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes());
        b.extend_from_slice(&(items.len() as i32).to_be_bytes());
        b.extend_from_slice(&recs);
        b
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
        let h = head(&b).unwrap().unwrap();
        assert_eq!((h.base_offset, h.last_offset, h.size), (40, 43, b.len()));
        let mut seen = Vec::new();
        let mut scratch = Vec::new();
        records(&h, payload(&h, &b, &mut scratch).unwrap(), true, |r| {
            seen.push((r.offset, r.key, r.value, r.timestamp, r.headers));
        })
        .unwrap();
        assert_eq!(seen[0], (40, None, Some(b"v0".as_slice()), (1, 1000), None));
        let hdrs = vec![("h", Some(b"1".as_slice())), ("n", None)];
        assert_eq!(
            seen[1],
            (43, Some(b"k".as_slice()), None, (1, 1010), Some(hdrs))
        );
        let appended = batch(0, LOG_APPEND_TIME, -1, &[(0, None, None, vec![])]);
        let h = head(&appended).unwrap().unwrap();
        let records_of = payload(&h, &appended, &mut scratch).unwrap();
        records(&h, records_of, false, |r| {
            assert_eq!(r.timestamp, (2, 2000))
        })
        .unwrap();
    }

    #[test]
    fn a_partial_batch_waits_and_unsupported_ones_say_why() {
        let b = batch(0, 0, -1, &[(0, None, Some(b"x"), vec![])]);
        assert_eq!(head(&b[..b.len() - 1]).unwrap(), None);
        assert_eq!(head(&b[..5]).unwrap(), None);
        let odd = batch(0, 5, -1, &[(0, None, Some(b"x"), vec![])]);
        let h = head(&odd).unwrap().unwrap();
        let unknown = payload(&h, &odd, &mut Vec::new()).map(<[u8]>::to_vec);
        assert!(matches!(unknown, Err(Problem::Unsupported(w)) if w.contains("codec 5")));
        let mut old = b.clone();
        old[16] = 1;
        assert!(matches!(head(&old), Err(Problem::Unsupported(_))));
    }

    #[test]
    fn aborted_transactions_hide_their_producers_batches_until_the_marker() {
        let abort_key: &[u8] = &[0, 0, 0, 0];
        let mut f = Aborted::new(vec![(7, 10), (8, 30)]);
        let tx = |base, producer| {
            batch(
                base,
                TRANSACTIONAL,
                producer,
                &[(0, None, Some(b"x"), vec![])],
            )
        };
        let marker = batch(
            20,
            TRANSACTIONAL | CONTROL,
            7,
            &[(0, Some(abort_key), None, vec![])],
        );
        let mut hides = |b: &[u8]| f.hides(&head(b).unwrap().unwrap(), b).unwrap();
        assert!(!hides(&tx(5, 7)));
        assert!(hides(&tx(10, 7)));
        assert!(!hides(&tx(11, 9)));
        assert!(!hides(&batch(12, 0, 7, &[(0, None, None, vec![])])));
        assert!(hides(&marker));
        assert!(!hides(&tx(21, 7)));
        assert!(hides(&tx(30, 8)));
    }
}
