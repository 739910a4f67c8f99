//! Test support: record batches as a broker writes them, byte for byte, requests' headers, and
//! the answers a broker gives (ApiVersions, Metadata, InitProducerId, Produce).

use super::init_producer_id::ProducerId;
use super::offset_fetch::Committed;
use super::primitives::Cursor;
use super::records::{CONTROL, HEAD_LEN, TRANSACTIONAL};

/// A request's header checked (its size prefix matches its length; client id "me"): a cursor at
/// its body, and the (API key, version, correlation id) it names.
pub fn request_header(request: &[u8]) -> (Cursor<'_>, (i16, i16, i32)) {
    let mut c = Cursor::new(request);
    assert_eq!(c.i32().unwrap() as usize, request.len() - 4);
    let named = (c.i16().unwrap(), c.i16().unwrap(), c.i32().unwrap());
    assert_eq!(c.string().unwrap(), Some("me"));
    (c, named)
}

/// `s` as a request's string (its i16 length first).
pub fn string(s: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(&(s.len() as i16).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// `v` as a zigzag varint.
pub fn varint(v: i64, out: &mut Vec<u8>) {
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

/// Varint-length bytes (-1 for null).
pub fn var_bytes(b: Option<&[u8]>, out: &mut Vec<u8>) {
    match b {
        None => varint(-1, out),
        Some(b) => {
            varint(b.len() as i64, out);
            out.extend_from_slice(b);
        }
    }
}

/// A record of a batch: (offset delta, key, value, headers).
pub type Item<'a> = (
    i32,
    Option<&'a [u8]>,
    Option<&'a [u8]>,
    Vec<(&'a [u8], Option<&'a [u8]>)>,
);

/// One record's bytes, its length prefix included; record `i` of a batch has timestamp delta
/// `10 * i`.
pub fn record(i: usize, (delta, key, value, headers): &Item<'_>) -> Vec<u8> {
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
    let mut out = Vec::new();
    varint(r.len() as i64, &mut out);
    out.extend_from_slice(&r);
    out
}

/// A batch at `base` of these records (already encoded: see [`record`]) with this header: last
/// offset delta `last_delta`, `count` records, timestamps 1000 (base) and 2000 (max), and its
/// CRC-32C.
pub fn raw_batch(
    base: i64,
    attributes: i16,
    producer: i64,
    last_delta: i32,
    count: i32,
    records: &[u8],
) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&base.to_be_bytes());
    b.extend_from_slice(&((HEAD_LEN - 12 + records.len()) as i32).to_be_bytes());
    b.extend_from_slice(&0i32.to_be_bytes());
    b.push(2);
    b.extend_from_slice(&0u32.to_be_bytes());
    b.extend_from_slice(&attributes.to_be_bytes());
    b.extend_from_slice(&last_delta.to_be_bytes());
    b.extend_from_slice(&1000i64.to_be_bytes());
    b.extend_from_slice(&2000i64.to_be_bytes());
    b.extend_from_slice(&producer.to_be_bytes());
    b.extend_from_slice(&0i16.to_be_bytes());
    b.extend_from_slice(&0i32.to_be_bytes());
    b.extend_from_slice(&count.to_be_bytes());
    b.extend_from_slice(records);
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b
}

/// A well-formed uncompressed batch of `items`.
pub fn batch(base: i64, attributes: i16, producer: i64, items: &[Item<'_>]) -> Vec<u8> {
    batch_of(base, attributes, producer, items, |records| records)
}

/// A batch of `items` whose records section is `section` of their bytes (compressed, say, as
/// `attributes` names a codec).
pub fn batch_of(
    base: i64,
    attributes: i16,
    producer: i64,
    items: &[Item<'_>],
    section: impl FnOnce(Vec<u8>) -> Vec<u8>,
) -> Vec<u8> {
    let records: Vec<u8> = items
        .iter()
        .enumerate()
        .flat_map(|(i, item)| record(i, item))
        .collect();
    let last = items.last().map_or(0, |i| i.0);
    let count = items.len() as i32;
    raw_batch(base, attributes, producer, last, count, &section(records))
}

/// A transaction marker of `producer` at `offset`: type 0 aborts, 1 commits.
pub fn marker(offset: i64, producer: i64, kind: u8) -> Vec<u8> {
    let key = [0, 0, 0, kind];
    let item: Item<'_> = (0, Some(&key), Some(&[0, 0, 0, 0, 0, 0]), vec![]);
    batch(offset, TRANSACTIONAL | CONTROL, producer, &[item])
}

/// An ApiVersions v0 answer offering `apis`: (API key, lowest version, highest).
pub fn versions_body(apis: &[(i16, i16, i16)]) -> Vec<u8> {
    let mut b = 0i16.to_be_bytes().to_vec();
    b.extend_from_slice(&(apis.len() as i32).to_be_bytes());
    for (key, min, max) in apis {
        for v in [key, min, max] {
            b.extend_from_slice(&v.to_be_bytes());
        }
    }
    b
}

/// Metadata's brokers (id, host, port) and topics (error, name, partitions: error, id, leader).
pub type MetadataAnswer = (
    Vec<(i32, String, u16)>,
    Vec<(i16, String, Vec<(i16, i32, i32)>)>,
);

/// A Metadata v4 answer: no rack, each partition's leader its only replica, none in sync.
pub fn metadata_body((brokers, topics): &MetadataAnswer) -> Vec<u8> {
    let mut b = 0i32.to_be_bytes().to_vec();
    b.extend_from_slice(&(brokers.len() as i32).to_be_bytes());
    for (id, host, port) in brokers {
        b.extend_from_slice(&id.to_be_bytes());
        string(host, &mut b);
        b.extend_from_slice(&i32::from(*port).to_be_bytes());
        b.extend_from_slice(&(-1i16).to_be_bytes());
    }
    string("cluster", &mut b);
    b.extend_from_slice(&0i32.to_be_bytes());
    b.extend_from_slice(&(topics.len() as i32).to_be_bytes());
    for (error, topic, partitions) in topics {
        b.extend_from_slice(&error.to_be_bytes());
        string(topic, &mut b);
        b.push(0);
        b.extend_from_slice(&(partitions.len() as i32).to_be_bytes());
        for (error, partition, leader) in partitions {
            b.extend_from_slice(&error.to_be_bytes());
            for v in [*partition, *leader, 1, *leader, 0] {
                b.extend_from_slice(&v.to_be_bytes());
            }
        }
    }
    b
}

/// An InitProducerId v0/v1 answer.
pub fn producer_id_body(p: &ProducerId) -> Vec<u8> {
    let mut b = 0i32.to_be_bytes().to_vec();
    b.extend_from_slice(&p.error.to_be_bytes());
    b.extend_from_slice(&p.id.to_be_bytes());
    b.extend_from_slice(&p.epoch.to_be_bytes());
    b
}

/// A Produce answer of `version` (3 to 8) for `topic`'s `partitions`: (partition, error, base
/// offset), no message.
pub fn produce_body(version: i16, topic: &str, partitions: &[(i32, i16, i64)]) -> Vec<u8> {
    let mut b = 1i32.to_be_bytes().to_vec();
    string(topic, &mut b);
    b.extend_from_slice(&(partitions.len() as i32).to_be_bytes());
    for (partition, error, offset) in partitions {
        b.extend_from_slice(&partition.to_be_bytes());
        b.extend_from_slice(&error.to_be_bytes());
        b.extend_from_slice(&offset.to_be_bytes());
        b.extend_from_slice(&(-1i64).to_be_bytes()); // log append time
        if version >= 5 {
            b.extend_from_slice(&0i64.to_be_bytes()); // log start offset
        }
        if version >= 8 {
            b.extend_from_slice(&0i32.to_be_bytes()); // record errors
            b.extend_from_slice(&(-1i16).to_be_bytes()); // message
        }
    }
    b.extend_from_slice(&0i32.to_be_bytes()); // throttle time
    b
}

/// One partition of an OffsetFetch answer: (topic, partition, offset, metadata, error).
pub type FetchedOffset<'a> = (&'a str, i32, i64, Option<&'a [u8]>, i16);

/// What [`crate::protocol::offset_fetch::parse_offset_fetch`] reads back of `parts`.
pub fn committed<'a>(parts: &[FetchedOffset<'a>]) -> Vec<Committed<'a>> {
    parts
        .iter()
        .map(|&(topic, partition, offset, metadata, error)| Committed {
            topic,
            partition,
            offset,
            metadata,
            error,
        })
        .collect()
}

/// An OffsetFetch v7 answer, its header's tagged fields first (one, to be skipped): each
/// (topic, partition, offset, metadata, error), those of one topic next to each other, then the
/// group's error.
pub fn offset_fetch_body(parts: &[FetchedOffset<'_>], error: i16) -> Vec<u8> {
    let compact = |n: usize, b: &mut Vec<u8>| b.push(u8::try_from(n + 1).expect("small"));
    let mut b = vec![1, 0, 1, 0x5a]; // one tagged field: tag 0, 1 byte
    b.extend_from_slice(&0i32.to_be_bytes()); // throttle time
    let runs: Vec<_> = parts.chunk_by(|x, y| x.0 == y.0).collect();
    compact(runs.len(), &mut b);
    for run in runs {
        compact(run[0].0.len(), &mut b);
        b.extend_from_slice(run[0].0.as_bytes());
        compact(run.len(), &mut b);
        for &(_, partition, offset, metadata, error) in run {
            b.extend_from_slice(&partition.to_be_bytes());
            b.extend_from_slice(&offset.to_be_bytes());
            b.extend_from_slice(&(-1i32).to_be_bytes()); // leader epoch
            match metadata {
                None => b.push(0),
                Some(m) => {
                    compact(m.len(), &mut b);
                    b.extend_from_slice(m);
                }
            }
            b.extend_from_slice(&error.to_be_bytes());
            b.push(0); // no tagged fields
        }
        b.push(0);
    }
    b.extend_from_slice(&error.to_be_bytes());
    b.push(0);
    b
}
