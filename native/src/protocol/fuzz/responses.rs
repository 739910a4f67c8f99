//! Test support: Fetch, Metadata, ApiVersions and SASL answers fuzzed (see [`super`]): on
//! arbitrary bytes, on valid encodings (written as a broker writes them, here or in
//! [`crate::protocol::sample`]) read back, and on those mutated. Every range a parser hands back lies within the bytes it was given.

use std::collections::HashMap;
use std::time::Duration;

use proptest::prelude::*;

use super::{bytes, mutate, mutations};
use crate::protocol::api_versions::parse_versions;
use crate::protocol::fetch::{parse_fetch, Fetched, PartitionData};
use crate::protocol::metadata::{parse_metadata, Leaders};
use crate::protocol::sample::{metadata_body, versions_body, MetadataAnswer};
use crate::protocol::sasl::{parse_authenticate, parse_handshake, Authenticated, Handshake};

/// A response body being written, field by field (non-flexible encodings).
#[derive(Default)]
struct Body(Vec<u8>);

impl Body {
    fn i16(&mut self, v: i16) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn i32(&mut self, v: i32) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn i64(&mut self, v: i64) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn string(&mut self, s: Option<&str>) -> &mut Self {
        match s {
            None => self.i16(-1),
            Some(s) => {
                self.i16(s.len() as i16);
                self.0.extend_from_slice(s.as_bytes());
                self
            }
        }
    }
    fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.i32(b.len() as i32);
        self.0.extend_from_slice(b);
        self
    }
}

/// A topic's partitions in a Fetch answer: (partition, error, aborted, records).
type FetchTopic = (String, Vec<(i32, i16, Vec<(i64, i64)>, Vec<u8>)>);

fn fetch_body(throttle: i32, topics: &[FetchTopic]) -> Vec<u8> {
    let mut b = Body::default();
    b.i32(throttle).i16(0).i32(0).i32(topics.len() as i32);
    for (topic, partitions) in topics {
        b.string(Some(topic)).i32(partitions.len() as i32);
        for (partition, error, aborted, records) in partitions {
            b.i32(*partition).i16(*error).i64(9).i64(8).i64(0);
            b.i32(aborted.len() as i32);
            for (producer, first) in aborted {
                b.i64(*producer).i64(*first);
            }
            b.i32(preferred_replica(*partition)).bytes(records);
        }
    }
    b.0
}

/// A partition's preferred read replica in a generated answer: none (-1), or a broker id.
fn preferred_replica(partition: i32) -> i32 {
    partition.rem_euclid(3) - 1
}

fn name() -> impl Strategy<Value = String> {
    "[a-z0-9._-]{0,12}"
}

fn fetch_topics() -> impl Strategy<Value = Vec<FetchTopic>> {
    let aborted = prop::collection::vec((any::<i64>(), any::<i64>()), 0..3);
    let partition = (any::<i32>(), any::<i16>(), aborted, bytes(30));
    prop::collection::vec((name(), prop::collection::vec(partition, 0..3)), 0..3)
}

fn metadata_answers() -> impl Strategy<Value = MetadataAnswer> {
    let broker = (any::<i32>(), name(), any::<u16>());
    let partition = (0..3i16, 0..4i32, -1..3i32);
    let topic = (0..2i16, name(), prop::collection::vec(partition, 0..4));
    (
        prop::collection::vec(broker, 0..3),
        prop::collection::vec(topic, 0..3),
    )
}

fn authenticate_body(a: &Authenticated) -> Vec<u8> {
    let mut b = Body::default();
    b.i16(a.error).string(a.message.as_deref()).bytes(&a.step);
    b.i64(a.session_lifetime_ms);
    b.0
}

fn handshake_body(h: &Handshake) -> Vec<u8> {
    let mut b = Body::default();
    b.i16(h.error).i32(h.mechanisms.len() as i32);
    for m in &h.mechanisms {
        b.string(Some(m));
    }
    b.0
}

/// Every parser on `data`: no panic, and Fetch's record ranges within it.
fn parse_everything(data: &[u8]) {
    if let Ok(fetched) = parse_fetch(data) {
        for p in &fetched.partitions {
            assert!(p.records.start <= p.records.end && p.records.end <= data.len());
        }
    }
    let _ = parse_metadata(data);
    let _ = parse_versions(data);
    let _ = parse_handshake(data);
    let _ = parse_authenticate(data);
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_break_a_response_parser(data in bytes(200)) {
        parse_everything(&data);
    }

    #[test]
    fn a_fetch_answer_reads_back_and_survives_damage(
        throttle in any::<i32>(),
        topics in fetch_topics(),
        damage in mutations(),
    ) {
        let body = fetch_body(throttle, &topics);
        let fetched = parse_fetch(&body).unwrap();
        let mut partitions = Vec::new();
        for (topic, parts) in &topics {
            for (partition, error, aborted, records) in parts {
                let at = fetched.partitions[partitions.len()].records.clone();
                prop_assert_eq!(&body[at.clone()], records.as_slice());
                partitions.push(PartitionData {
                    topic: topic.clone(),
                    partition: *partition,
                    error: *error,
                    aborted: aborted.clone(),
                    preferred_replica: preferred_replica(*partition),
                    records: at,
                });
            }
        }
        let throttle = Duration::from_millis(throttle.max(0) as u64);
        prop_assert_eq!(fetched, Fetched { throttle, partitions });
        parse_everything(&mutate(body, &damage));
    }

    #[test]
    fn a_metadata_answer_reads_back_and_survives_damage(
        answer in metadata_answers(),
        damage in mutations(),
    ) {
        let body = metadata_body(&answer);
        let (brokers, topics) = &answer;
        let mut want = Leaders::default();
        for (id, host, port) in brokers {
            want.brokers.insert(*id, (host.clone(), *port));
        }
        for (error, topic, partitions) in topics {
            if *error != 0 {
                want.errors.push((topic.clone(), *error));
            } else {
                want.partitions.insert(topic.clone(), partitions.len() as i32);
            }
            for (error, partition, leader) in partitions {
                if *error != 0 {
                    want.errors.push((format!("{topic}/{partition}"), *error));
                }
                if *leader >= 0 {
                    want.leaders.insert((topic.clone(), *partition), *leader);
                }
            }
        }
        prop_assert_eq!(parse_metadata(&body).unwrap(), want);
        parse_everything(&mutate(body, &damage));
    }

    #[test]
    fn api_versions_and_sasl_answers_read_back_and_survive_damage(
        versions in prop::collection::vec((any::<i16>(), any::<i16>(), any::<i16>()), 0..6),
        error in any::<i16>(),
        message in prop::option::of(name()),
        step in bytes(40),
        lifetime in any::<i64>(),
        mechanisms in prop::collection::vec(name(), 0..4),
        damage in mutations(),
    ) {
        let offers = versions_body(&versions);
        let parsed = parse_versions(&offers).unwrap();
        for (key, min, max) in &versions {
            prop_assert!(min > max || parsed.offers(*key, *min) && parsed.offers(*key, *max));
        }
        let offered: HashMap<i16, ()> = versions.iter().map(|v| (v.0, ())).collect();
        prop_assert!(!parsed.offers(i16::MIN, 0) || offered.contains_key(&i16::MIN));
        let a = Authenticated { error, message, step, session_lifetime_ms: lifetime };
        prop_assert_eq!(parse_authenticate(&authenticate_body(&a)).unwrap(), a.clone());
        let h = Handshake { error, mechanisms };
        prop_assert_eq!(parse_handshake(&handshake_body(&h)).unwrap(), h.clone());
        for body in [offers, authenticate_body(&a), handshake_body(&h)] {
            parse_everything(&mutate(body, &damage));
        }
    }
}
