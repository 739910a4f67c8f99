//! Fetch (key 1) at version 11, the last non-flexible one (brokers since Kafka 2.3 take it;
//! Kafka 4 removed only versions 0–3): the request for partitions from offsets, and the
//! response's partitions, their aborted transactions and where their record batches are.

use std::ops::Range;
use std::time::Duration;

use super::primitives::{Api, Cursor, Malformed};

/// Fetch, at the one version this path speaks.
pub const FETCH: Api = Api::new(1, &[11], "Fetch");

/// One partition to fetch from an offset.
pub struct FetchPartition<'a> {
    pub topic: &'a str,
    pub partition: i32,
    pub offset: i64,
}

/// How much to fetch and which records a fetch may see.
#[derive(Debug, Clone)]
pub struct FetchLimits {
    pub max_wait_ms: i32,
    pub min_bytes: i32,
    pub max_bytes: i32,
    pub partition_max_bytes: i32,
    pub read_committed: bool,
}

/// A full Fetch v11 request (no fetch session) for these partitions, grouped by topic in the
/// order given.
pub fn fetch_request(
    correlation: i32,
    client_id: &str,
    limits: &FetchLimits,
    parts: &[FetchPartition<'_>],
) -> Vec<u8> {
    let mut r = FETCH.preferred(correlation, client_id);
    r.i32(-1); // replica id: a consumer
    r.i32(limits.max_wait_ms);
    r.i32(limits.min_bytes);
    r.i32(limits.max_bytes);
    r.i8(i8::from(limits.read_committed));
    r.i32(0); // session id: none
    r.i32(-1); // session epoch: a full fetch, no session
    let mut topics: Vec<(&str, Vec<&FetchPartition<'_>>)> = Vec::new();
    for p in parts {
        match topics.iter_mut().find(|(t, _)| *t == p.topic) {
            Some((_, list)) => list.push(p),
            None => topics.push((p.topic, vec![p])),
        }
    }
    r.i32(topics.len() as i32);
    for (topic, list) in &topics {
        r.string(topic);
        r.i32(list.len() as i32);
        for p in list {
            r.i32(p.partition);
            r.i32(-1); // current leader epoch: unknown, not checked
            r.i64(p.offset);
            r.i64(-1); // log start offset: a consumer's is -1
            r.i32(limits.partition_max_bytes);
        }
    }
    r.i32(0); // forgotten topics
              // Rack id: none (client.rack goes through librdkafka); a broker's replica selector that
              // does not look at racks may still name a preferred read replica.
    r.string("");
    r.finish()
}

/// One partition's answer in a Fetch response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionData {
    pub topic: String,
    pub partition: i32,
    pub error: i16,
    /// (producer id, first offset) of the aborted transactions in the records.
    pub aborted: Vec<(i64, i64)>,
    /// The replica the leader's `replica.selector.class` chose for the client to fetch the
    /// partition from (KIP-392; its records are then empty), or -1.
    pub preferred_replica: i32,
    /// Where the partition's record batches are in the response body.
    pub records: Range<usize>,
}

/// A Fetch v11 response body (after the response header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// How long the broker asks the client to wait before its next request (a quota, KIP-219).
    pub throttle: Duration,
    pub partitions: Vec<PartitionData>,
}

/// The throttle time and partitions of a Fetch v11 response body; an error when the response
/// as a whole failed.
pub fn parse_fetch(body: &[u8]) -> Result<Fetched, String> {
    let bad = |m: Malformed| format!("a malformed Fetch response: {}", m.0);
    let mut c = Cursor::new(body);
    let throttle = Duration::from_millis(c.i32().map_err(bad)?.max(0) as u64);
    let error = c.i16().map_err(bad)?;
    if error != 0 {
        return Err(format!("the Fetch request failed with error code {error}"));
    }
    c.i32().map_err(bad)?; // session id
    let mut out = Vec::new();
    for _ in 0..c.count().map_err(bad)? {
        let topic = c.string().map_err(bad)?.unwrap_or_default().to_string();
        for _ in 0..c.count().map_err(bad)? {
            let partition = c.i32().map_err(bad)?;
            let error = c.i16().map_err(bad)?;
            c.i64().map_err(bad)?; // high watermark
            c.i64().map_err(bad)?; // last stable offset
            c.i64().map_err(bad)?; // log start offset
            let mut aborted = Vec::new();
            for _ in 0..c.count().map_err(bad)? {
                aborted.push((c.i64().map_err(bad)?, c.i64().map_err(bad)?));
            }
            let preferred_replica = c.i32().map_err(bad)?;
            let records = c.bytes_range().map_err(bad)?;
            out.push(PartitionData {
                topic: topic.clone(),
                partition,
                error,
                aborted,
                preferred_replica,
                records,
            });
        }
    }
    Ok(Fetched {
        throttle,
        partitions: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::sample::request_header;

    #[test]
    fn fetch_request_groups_partitions_by_topic_and_prefixes_its_size() {
        let limits = FetchLimits {
            max_wait_ms: 500,
            min_bytes: 1,
            max_bytes: 1 << 20,
            partition_max_bytes: 1 << 16,
            read_committed: true,
        };
        let parts = [
            FetchPartition {
                topic: "a",
                partition: 0,
                offset: 5,
            },
            FetchPartition {
                topic: "b",
                partition: 1,
                offset: 6,
            },
            FetchPartition {
                topic: "a",
                partition: 2,
                offset: 7,
            },
        ];
        let req = fetch_request(9, "me", &limits, &parts);
        let (mut c, named) = request_header(&req);
        assert_eq!(named, (1, 11, 9));
        assert_eq!(
            (c.i32().unwrap(), c.i32().unwrap(), c.i32().unwrap()),
            (-1, 500, 1)
        );
        assert_eq!((c.i32().unwrap(), c.i8().unwrap()), (1 << 20, 1));
        assert_eq!((c.i32().unwrap(), c.i32().unwrap()), (0, -1));
        assert_eq!(c.count().unwrap(), 2);
        assert_eq!(c.string().unwrap(), Some("a"));
        assert_eq!(c.count().unwrap(), 2);
        let first = (c.i32().unwrap(), c.i32().unwrap(), c.i64().unwrap());
        assert_eq!(first, (0, -1, 5));
    }

    #[test]
    fn fetch_responses_name_partitions_errors_and_record_ranges() {
        let mut b = Vec::new();
        b.extend_from_slice(&250i32.to_be_bytes());
        b.extend_from_slice(&0i16.to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes());
        b.extend_from_slice(&1i32.to_be_bytes());
        b.extend_from_slice(&1i16.to_be_bytes());
        b.push(b't');
        b.extend_from_slice(&2i32.to_be_bytes());
        for (p, err, aborted, records) in [(0i32, 0i16, true, &b"abc"[..]), (1, 1, false, &b""[..])]
        {
            b.extend_from_slice(&p.to_be_bytes());
            b.extend_from_slice(&err.to_be_bytes());
            b.extend_from_slice(&[0u8; 24]);
            if aborted {
                b.extend_from_slice(&1i32.to_be_bytes());
                b.extend_from_slice(&5i64.to_be_bytes());
                b.extend_from_slice(&9i64.to_be_bytes());
            } else {
                b.extend_from_slice(&(-1i32).to_be_bytes());
            }
            b.extend_from_slice(&(if p == 1 { 2i32 } else { -1 }).to_be_bytes());
            b.extend_from_slice(&(records.len() as i32).to_be_bytes());
            b.extend_from_slice(records);
        }
        let fetched = parse_fetch(&b).unwrap();
        assert_eq!(fetched.throttle, Duration::from_millis(250));
        let parts = fetched.partitions;
        assert_eq!(parts[0].aborted, vec![(5, 9)]);
        assert_eq!(&b[parts[0].records.clone()], b"abc");
        assert_eq!((parts[1].partition, parts[1].error), (1, 1));
        let preferred = (parts[0].preferred_replica, parts[1].preferred_replica);
        assert_eq!(preferred, (-1, 2));
        assert!(parts[1].records.is_empty());
        assert!(parse_fetch(&b[..b.len() - 2]).is_err());
    }
}
