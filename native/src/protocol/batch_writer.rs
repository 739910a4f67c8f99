//! Record batches (magic 2) written, as an idempotent producer sends them: uncompressed,
//! create-time timestamps, a producer id, epoch and base sequence, and the CRC-32C. Each
//! record's length is worked out from its fields before they are written, so a record is
//! written once, in place, with no copy and no allocation of its own.

use super::records::{HEAD_LEN, TRANSACTIONAL};

/// Where the bytes a batch's CRC covers begin: its attributes.
const CRC_FROM: usize = 21;
/// Where a batch's CRC is.
const CRC_AT: usize = 17;

/// A record's header: its name and its value (`None`: a null value).
pub type Header<'a> = (&'a str, Option<&'a [u8]>);

/// The bytes of a zigzag varint of `v`.
fn var_len(v: i64) -> usize {
    let raw = ((v << 1) ^ (v >> 63)) as u64;
    // 7 bits a byte, one byte at least.
    (64 - (raw | 1).leading_zeros() as usize).div_ceil(7)
}

fn put_var(out: &mut Vec<u8>, v: i64) {
    let mut raw = ((v << 1) ^ (v >> 63)) as u64;
    while raw >= 0x80 {
        out.push((raw as u8 & 0x7f) | 0x80);
        raw >>= 7;
    }
    out.push(raw as u8);
}

fn bytes_len(b: Option<&[u8]>) -> usize {
    match b {
        None => 1,
        Some(b) => var_len(b.len() as i64) + b.len(),
    }
}

fn put_bytes(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => out.push(1), // -1, zigzagged
        Some(b) => {
            put_var(out, b.len() as i64);
            out.extend_from_slice(b);
        }
    }
}

/// The room a new batch takes before its records come (bytes).
pub const FIRST_ROOM: usize = 64 << 10;

/// A batch being written: its head reserved, records appended; sealed by [`BatchWriter::seal`].
#[derive(Debug)]
pub struct BatchWriter {
    buf: Vec<u8>,
    count: i32,
    first_timestamp: i64,
    max_timestamp: i64,
}

impl BatchWriter {
    /// An empty batch whose records are timestamped from `first_timestamp` (ms), with room for
    /// `capacity` bytes, at most [`FIRST_ROOM`] of it at first: the batch grows as records come,
    /// so a producer of many partitions, each with an open batch, holds what they hold.
    pub fn new(first_timestamp: i64, capacity: usize) -> Self {
        Self::within(
            Vec::with_capacity(capacity.clamp(HEAD_LEN, FIRST_ROOM)),
            first_timestamp,
        )
    }

    /// An empty batch written in `buffer` (emptied first: a sealed batch's, acknowledged).
    pub fn within(mut buf: Vec<u8>, first_timestamp: i64) -> Self {
        buf.clear();
        buf.resize(HEAD_LEN, 0);
        BatchWriter {
            buf,
            count: 0,
            first_timestamp,
            max_timestamp: first_timestamp,
        }
    }

    /// Records written so far.
    pub fn count(&self) -> i32 {
        self.count
    }

    /// The batch's bytes so far.
    pub fn size(&self) -> usize {
        self.buf.len()
    }

    /// The bytes a record's key, value and headers take in its body (the rest of the body is
    /// the attributes and the two deltas).
    pub fn fields_size(key: Option<&[u8]>, value: Option<&[u8]>, headers: &[Header<'_>]) -> usize {
        let mut size = bytes_len(key) + bytes_len(value) + var_len(headers.len() as i64);
        for (name, value) in headers {
            size += bytes_len(Some(name.as_bytes())) + bytes_len(*value);
        }
        size
    }

    /// The bytes a record whose fields take `fields` ([`BatchWriter::fields_size`]) takes in a
    /// batch, its length prefix included, at most (each delta counted at 6 bytes).
    pub fn record_size(fields: usize) -> usize {
        let body = 3 + fields; // the attributes and both deltas at one byte
        body + 10 + var_len(body as i64 + 10)
    }

    /// Append a record of create time `timestamp` (ms), its fields sized here.
    #[cfg(test)]
    pub fn push(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header<'_>],
    ) {
        let fields = Self::fields_size(key, value, headers);
        self.push_sized(timestamp, (key, value), headers, fields);
    }

    /// [`BatchWriter::push`] of a record whose fields take `fields` bytes (worked out once by
    /// the caller, which bounded the record's size with them).
    pub fn push_sized(
        &mut self,
        timestamp: i64,
        (key, value): (Option<&[u8]>, Option<&[u8]>),
        headers: &[Header<'_>],
        fields: usize,
    ) {
        let ts_delta = timestamp.wrapping_sub(self.first_timestamp);
        let offset_delta = i64::from(self.count);
        let body = 1 + var_len(ts_delta) + var_len(offset_delta) + fields;
        let out = &mut self.buf;
        out.reserve(body + 5);
        put_var(out, body as i64);
        out.push(0); // attributes
        put_var(out, ts_delta);
        put_var(out, offset_delta);
        put_bytes(out, key);
        put_bytes(out, value);
        put_var(out, headers.len() as i64);
        for (name, value) in headers {
            put_bytes(out, Some(name.as_bytes()));
            put_bytes(out, *value);
        }
        self.count += 1;
        self.max_timestamp = self.max_timestamp.max(timestamp);
    }

    /// The whole batch, its head written for this producer (`producer_id`, `epoch`, whether
    /// `transactional`) and the sequence of its first record, and its CRC-32C computed.
    pub fn seal(
        self,
        producer_id: i64,
        epoch: i16,
        base_sequence: i32,
        transactional: bool,
    ) -> Vec<u8> {
        let mut b = self.buf;
        let length = (b.len() - 12) as i32;
        let mut head = Vec::with_capacity(HEAD_LEN);
        head.extend_from_slice(&0i64.to_be_bytes()); // base offset (the broker's)
        head.extend_from_slice(&length.to_be_bytes());
        head.extend_from_slice(&(-1i32).to_be_bytes()); // partition leader epoch
        head.push(2); // magic
        head.extend_from_slice(&0u32.to_be_bytes()); // CRC, below
                                                     // attributes: no compression, create time, and the transactional bit when it is
        let attributes = if transactional { TRANSACTIONAL } else { 0 };
        head.extend_from_slice(&attributes.to_be_bytes());
        head.extend_from_slice(&(self.count - 1).max(0).to_be_bytes()); // last offset delta
        head.extend_from_slice(&self.first_timestamp.to_be_bytes());
        head.extend_from_slice(&self.max_timestamp.to_be_bytes());
        head.extend_from_slice(&producer_id.to_be_bytes());
        head.extend_from_slice(&epoch.to_be_bytes());
        head.extend_from_slice(&base_sequence.to_be_bytes());
        head.extend_from_slice(&self.count.to_be_bytes());
        b[..HEAD_LEN].copy_from_slice(&head);
        let crc = crc32c::crc32c(&b[CRC_FROM..]);
        b[CRC_AT..CRC_FROM].copy_from_slice(&crc.to_be_bytes());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::batch_frame::{crc, frame};
    use crate::protocol::records::{head, payload, records};

    #[test]
    fn varint_lengths_match_what_is_written() {
        for v in [
            0,
            1,
            -1,
            63,
            -64,
            64,
            -65,
            8191,
            8192,
            i32::MAX as i64,
            i64::MIN,
        ] {
            let mut out = Vec::new();
            put_var(&mut out, v);
            assert_eq!(out.len(), var_len(v), "{v}");
        }
    }

    #[test]
    fn a_written_batch_is_read_back_whole_by_the_records_parser() {
        let mut w = BatchWriter::new(1_000, 0);
        let big = vec![7u8; 300];
        w.push(1_000, Some(b"k1"), Some(b"v1"), &[]);
        w.push(1_005, None, None, &[("h", Some(b"x")), ("n", None)]);
        w.push(1_003, Some(b""), Some(&big), &[]);
        let bound = BatchWriter::record_size(BatchWriter::fields_size(Some(b""), Some(&big), &[]));
        let batch = w.seal(42, 3, 17, false);
        assert_eq!(frame(&batch, 1 << 20).unwrap(), Some(batch.len()));
        let h = head(&batch).unwrap();
        assert_eq!(h.crc, crc(&batch));
        assert_eq!((h.producer_id, h.last_offset, h.base_offset), (42, 2, 0));
        assert_eq!(&batch[57..61], &3i32.to_be_bytes());
        assert_eq!(&batch[53..57], &17i32.to_be_bytes());
        assert_eq!(&batch[51..53], &3i16.to_be_bytes());
        let mut scratch = Vec::new();
        let section = payload(&h, &batch, &mut scratch, 1 << 20).unwrap();
        let recs = records(&h, section, true).unwrap();
        assert_eq!(recs.len(), 3);
        assert_eq!(
            (recs[0].key, recs[0].value),
            (Some(&b"k1"[..]), Some(&b"v1"[..]))
        );
        assert_eq!(recs[1].timestamp, (1, 1_005));
        assert_eq!((recs[1].key, recs[1].value), (None, None));
        let headers = recs[1].headers.as_ref().unwrap();
        assert_eq!(headers[0].0, "h");
        assert_eq!((headers[0].1, headers[1].1), (Some(&b"x"[..]), None));
        assert_eq!(recs[2].value, Some(&big[..]));
        assert_eq!(recs[2].key, Some(&b""[..]));
        assert!(bound > 1 + 2 + 2 + 303);
        // max timestamp is the largest, not the last
        assert_eq!(&batch[35..43], &1_005i64.to_be_bytes());
        assert_eq!(&batch[21..23], &[0, 0]); // attributes

        // written again in the sealed batch's buffer: the bytes of a fresh writer's
        let mut fresh = BatchWriter::new(2_000, 0);
        let mut reused = BatchWriter::within(batch, 2_000);
        for w in [&mut fresh, &mut reused] {
            w.push(2_001, Some(b"k"), Some(b"v"), &[("h", None)]);
        }
        assert_eq!(reused.seal(7, 0, 5, false), fresh.seal(7, 0, 5, false));
    }

    #[test]
    fn a_transactional_batch_carries_the_bit_under_its_crc() {
        let mut w = BatchWriter::new(1_000, 0);
        w.push(1_000, None, Some(b"v"), &[]);
        let batch = w.seal(42, 3, 0, true);
        let h = head(&batch).unwrap();
        assert_eq!(&batch[21..23], &TRANSACTIONAL.to_be_bytes());
        assert_eq!(h.crc, crc(&batch));
    }
}
