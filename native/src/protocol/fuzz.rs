//! Test support: the protocol's parsers fuzzed with proptest, on arbitrary bytes and on valid
//! encodings mutated (bytes flipped, truncated, lengths made huge or negative). Properties: no
//! panic, no allocation past the bounds (buffers' capacities stay under the configured
//! maximum), and a valid encoding reads back as written. This file: record batches, their
//! compression and read_committed's filter; [`responses`]: Fetch, Metadata, ApiVersions and
//! SASL answers; [`transactions`]: the transaction coordinators' answers (and Produce's).
//!
//! `cargo test` runs proptest's default of 256 cases per property (a few thousand in all, in
//! seconds); `make fuzz` sets `PROPTEST_CASES` for a million or more.

mod responses;
mod transactions;

use proptest::prelude::*;

use super::aborted::Aborted;
use super::batch_frame::{crc, frame};
use super::compression::decompress;
use super::records::{head, payload, records, HEAD_LEN, TRANSACTIONAL};
use super::sample::{batch, batch_of, marker, Item};

/// The bound of a response and of a decompressed batch in these properties.
const MAX: usize = 1 << 16;

/// A change to valid bytes: damage as a network or a broker might do it.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// XOR the byte at (position modulo the length) with a mask.
    Flip(usize, u8),
    /// Keep only the first (length modulo the length) bytes.
    Truncate(usize),
    /// Overwrite an int32 at (position modulo the length) with a length-like value.
    Length(usize, i32),
    /// Insert bytes at (position modulo the length).
    Insert(usize, Vec<u8>),
}

pub fn mutation() -> impl Strategy<Value = Mutation> {
    let lengths = prop_oneof![
        Just(-1),
        Just(-2),
        Just(i32::MIN),
        Just(i32::MAX),
        Just(0x7fff_fff0),
        0..1 << 20
    ];
    prop_oneof![
        (any::<usize>(), 1..=255u8).prop_map(|(at, mask)| Mutation::Flip(at, mask)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), lengths).prop_map(|(at, v)| Mutation::Length(at, v)),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(at, b)| Mutation::Insert(at, b)),
    ]
}

/// `bytes` with `mutations` applied in turn.
pub fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        if bytes.is_empty() {
            break;
        }
        let len = bytes.len();
        match m {
            Mutation::Flip(at, mask) => bytes[at % len] ^= mask,
            Mutation::Truncate(keep) => bytes.truncate(keep % len),
            Mutation::Length(at, v) => {
                let at = (at % len).min(len.saturating_sub(4));
                let end = (at + 4).min(len);
                bytes[at..end].copy_from_slice(&v.to_be_bytes()[..end - at]);
            }
            Mutation::Insert(at, more) => {
                let at = at % len;
                bytes.splice(at..at, more.iter().copied());
            }
        }
    }
    bytes
}

pub fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    prop::collection::vec(mutation(), 1..4)
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..max)
}

/// An owned record: (offset delta step, key, value, headers).
type Owned = (
    i32,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<(Vec<u8>, Option<Vec<u8>>)>,
);

fn owned_records() -> impl Strategy<Value = Vec<Owned>> {
    let header = (bytes(6), prop::option::of(bytes(6)));
    let one = (
        0..3i32,
        prop::option::of(bytes(12)),
        prop::option::of(bytes(40)),
        prop::collection::vec(header, 0..3),
    );
    prop::collection::vec(one, 0..12)
}

/// The records as [`Item`]s with increasing offset deltas (the first 0).
fn items(owned: &[Owned]) -> Vec<Item<'_>> {
    let mut delta = 0;
    owned
        .iter()
        .enumerate()
        .map(|(i, (step, key, value, headers))| {
            delta += if i == 0 { 0 } else { step + 1 };
            let headers = headers
                .iter()
                .map(|(n, v)| (n.as_slice(), v.as_deref()))
                .collect();
            (delta, key.as_deref(), value.as_deref(), headers)
        })
        .collect()
}

/// A batch of `items` at `base`, its records compressed with `codec` (0: none).
fn encoded(base: i64, codec: i16, items: &[Item<'_>]) -> Vec<u8> {
    match codec {
        0 => batch(base, 0, -1, items),
        _ => batch_of(base, codec, -1, items, |plain| compress(codec, &plain)),
    }
}

fn compress(codec: i16, plain: &[u8]) -> Vec<u8> {
    use std::io::Write;
    match codec {
        1 => {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(plain).unwrap();
            gz.finish().unwrap()
        }
        2 => snap::raw::Encoder::new().compress_vec(plain).unwrap(),
        3 => {
            let mut lz4 = lz4_flex::frame::FrameEncoder::new(Vec::new());
            lz4.write_all(plain).unwrap();
            lz4.finish().unwrap()
        }
        _ => zstd::stream::encode_all(plain, 1).unwrap(),
    }
}

/// Everything the direct path reads of the batch at the start of `bytes`, as it reads it: its
/// frame, CRC, head, records section and records. Asserts the bounds; `Some(true)` when the
/// batch read whole.
fn read_all(bytes: &[u8]) -> Option<bool> {
    let size = frame(bytes, MAX).ok()??;
    assert!(size <= bytes.len() && (HEAD_LEN..=MAX).contains(&size));
    let batch = &bytes[..size];
    let crc_ok = crc(batch) == u32::from_be_bytes([batch[17], batch[18], batch[19], batch[20]]);
    let h = head(batch).ok()?;
    assert!(h.last_offset >= h.base_offset);
    let mut scratch = Vec::new();
    let read = payload(&h, batch, &mut scratch, MAX).and_then(|p| {
        let recs = records(&h, p, true)?;
        assert!(
            recs.capacity() <= p.len() / 7,
            "{} records' room",
            recs.capacity()
        );
        assert!(recs
            .iter()
            .all(|r| (h.base_offset..=h.last_offset).contains(&r.offset)));
        Ok(())
    });
    assert!(scratch.capacity() <= MAX, "{}", scratch.capacity());
    Some(read.is_ok() && crc_ok)
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_break_a_batch_read(data in bytes(300)) {
        read_all(&data);
        // With a plausible head in front, the records section is what is arbitrary.
        let mut framed = batch(0, 0, -1, &[]);
        framed.extend_from_slice(&data);
        let length = (framed.len() - 12) as i32;
        framed[8..12].copy_from_slice(&length.to_be_bytes());
        framed[57..61].copy_from_slice(&(data.len() as i32 / 7).to_be_bytes());
        read_all(&framed);
    }

    #[test]
    fn a_valid_batch_reads_back_as_written(
        owned in owned_records(),
        base in 0..i64::MAX / 2,
        codec in 0..5i16,
    ) {
        let items = items(&owned);
        let b = encoded(base, codec, &items);
        prop_assert_eq!(frame(&b, MAX), Ok(Some(b.len())));
        prop_assert_eq!(read_all(&b), Some(true));
        let h = head(&b).unwrap();
        let mut scratch = Vec::new();
        let recs = records(&h, payload(&h, &b, &mut scratch, MAX).unwrap(), true).unwrap();
        prop_assert_eq!(recs.len(), items.len());
        for (i, (r, (delta, key, value, headers))) in recs.iter().zip(&items).enumerate() {
            prop_assert_eq!(r.offset, base + i64::from(*delta));
            prop_assert_eq!((r.key, r.value), (*key, *value));
            prop_assert_eq!(r.timestamp, (1, 1000 + 10 * i as i64));
            let names: Vec<(String, Option<&[u8]>)> = headers
                .iter()
                .map(|(n, v)| (String::from_utf8_lossy(n).into_owned(), *v))
                .collect();
            let read: Vec<(String, Option<&[u8]>)> = r
                .headers
                .iter()
                .flatten()
                .map(|(n, v)| (n.to_string(), *v))
                .collect();
            prop_assert_eq!(read, names);
        }
    }

    #[test]
    fn a_damaged_batch_never_breaks_a_read_nor_passes_as_whole_unless_its_crc_does(
        owned in owned_records(),
        codec in 0..5i16,
        damage in mutations(),
    ) {
        let b = encoded(3, codec, &items(&owned));
        let damaged = mutate(b.clone(), &damage);
        if let Some(true) = read_all(&damaged) {
            // Read whole: its CRC matched, so the bytes it covers are the batch's.
            let size = frame(&damaged, MAX).unwrap().unwrap();
            prop_assert_eq!(&damaged[21..size], &b[21..size.min(b.len())]);
        }
    }

    #[test]
    fn decompression_is_bounded_on_damaged_and_arbitrary_input(
        plain in bytes(3000),
        codec in 1..5i16,
        damage in mutations(),
        max in 0..4000usize,
    ) {
        let mut out = Vec::new();
        let compressed = compress(codec, &plain);
        let whole = decompress(codec, &compressed, &mut out, max);
        prop_assert_eq!(whole.is_ok(), plain.len() <= max);
        if plain.len() <= max {
            prop_assert_eq!(&out, &plain);
        }
        prop_assert!(out.capacity() <= max, "{}", out.capacity());
        for data in [mutate(compressed, &damage), plain] {
            let _ = decompress(codec, &data, &mut out, max);
            prop_assert!(out.len() <= max && out.capacity() <= max, "{}", out.capacity());
        }
    }

    #[test]
    fn the_aborted_filter_hides_what_the_java_consumer_hides(
        entries in prop::collection::vec((0..4i64, 0..40i64), 0..8),
        batches in prop::collection::vec((0..4i64, 0..3u8, 1..4i64), 0..16),
    ) {
        let mut filter = Aborted::new(entries.clone());
        let mut model = Model::new(entries);
        let mut offset = 0;
        for (producer, kind, span) in batches {
            let b = match kind {
                0 => marker(offset, producer, 0),
                1 => marker(offset, producer, 1),
                _ => batch(offset, TRANSACTIONAL, producer, &[(0, None, Some(b"x"), vec![])]),
            };
            let h = head(&b).unwrap();
            prop_assert_eq!(filter.hides(&h, &b, MAX).unwrap(), model.hides(offset, producer, kind));
            offset += span;
        }
    }

    #[test]
    fn a_damaged_control_batch_never_breaks_the_aborted_filter(
        producer in 0..4i64,
        damage in mutations(),
    ) {
        let b = mutate(marker(5, producer, 0), &damage);
        if let Ok(Some(size)) = frame(&b, MAX) {
            if let Ok(h) = head(&b[..size]) {
                let mut f = Aborted::new(vec![(producer, 0)]);
                let _ = f.hides(&h, &b[..size], MAX);
            }
        }
    }
}

/// read_committed's rules as the Java consumer states them, for one-record batches of one
/// offset each: (producer, first offset) entries taken up to each batch, an abort marker
/// closing its producer's, a transactional batch of an open producer hidden.
struct Model {
    waiting: Vec<(i64, i64)>,
    open: Vec<i64>,
}

impl Model {
    fn new(entries: Vec<(i64, i64)>) -> Self {
        Model {
            waiting: entries,
            open: Vec::new(),
        }
    }

    fn hides(&mut self, offset: i64, producer: i64, kind: u8) -> bool {
        let (taken, left): (Vec<_>, Vec<_>) = self.waiting.iter().partition(|e| e.1 <= offset);
        self.waiting = left;
        self.open.extend(taken.iter().map(|e| e.0));
        match kind {
            0 => {
                self.open.retain(|p| *p != producer);
                true
            }
            1 => true,
            _ => self.open.contains(&producer),
        }
    }
}
