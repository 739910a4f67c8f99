//! Test support: the whole direct producer ([`DirectWriter`] over its `Wire`) against a
//! stand-in broker on loopback that refuses a partition's first batch and takes whatever
//! sequence comes next as the first: the partition's first batch must be sent alone until it is
//! acknowledged ([`super::queue::Part::next`]), or a later batch is written ahead of it.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow_array::{ArrayRef, RecordBatch, StringArray};

use super::config::ProduceConfig;
use super::DirectWriter;
use crate::protocol::api_versions::API_VERSIONS;
use crate::protocol::batch_frame::crc;
use crate::protocol::init_producer_id::{ProducerId, INIT_PRODUCER_ID};
use crate::protocol::metadata::METADATA;
use crate::protocol::primitives::Cursor;
use crate::protocol::produce::PRODUCE;
use crate::protocol::records::{head, payload, records};
use crate::protocol::sample::{
    metadata_body, produce_body, producer_id_body, request_header, versions_body,
};
use crate::test_config::config;
use crate::write::batch_producer::{BatchProducer, Destination};

const TOPIC: &str = "fresh";
const PRODUCER_ID: i64 = 4711;
const NOT_LEADER_OR_FOLLOWER: i16 = 6;
const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
/// Where a batch's base sequence lies in its header.
const BASE_SEQUENCE: std::ops::Range<usize> = 53..57;

/// What the stand-in saw and wrote of its one partition.
#[derive(Default)]
struct Partition {
    /// Every batch a Produce request carried: (base sequence, records, the error answered).
    seen: Vec<(i32, i32, i16)>,
    /// Every batch written: (base sequence, records), in the order written.
    written: Vec<(i32, i32)>,
    /// The values of the records written, in the order written.
    values: Vec<String>,
    /// The topics each Metadata request named, in order.
    lookups: Vec<Vec<String>>,
}

impl Partition {
    /// A batch at sequence `base` of records `values`: the error answered and the batch's
    /// offset. As a broker with no producer state for the partition (a topic just created):
    /// the first Produce is refused as NOT_LEADER_OR_FOLLOWER (its leader not settled yet), the
    /// next batch, whatever its sequence, is written as the first, each later one only at the
    /// sequence after the last one written; the last one sent again is answered as written.
    fn take(&mut self, base: i32, values: Vec<String>) -> (i16, i64) {
        let count = values.len() as i32;
        let end = self.values.len() as i64;
        let (error, offset) = match self.written.last() {
            _ if self.seen.is_empty() => (NOT_LEADER_OR_FOLLOWER, -1),
            Some(&last) if last == (base, count) => (0, end - i64::from(count)),
            Some(&(b, n)) if base != b.wrapping_add(n) => (OUT_OF_ORDER_SEQUENCE_NUMBER, -1),
            _ => {
                self.written.push((base, count));
                self.values.extend(values);
                (0, end)
            }
        };
        self.seen.push((base, count, error));
        (error, offset)
    }
}

/// A stand-in broker (id 1) listening on loopback, leader of `TOPIC`'s one partition: its port
/// and what it saw. Each connection is served by a thread of its own, the requests read whole,
/// blocking, until the client hangs up; the listener is bound before anything connects.
fn stand_in() -> (u16, Arc<Mutex<Partition>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let log = Arc::<Mutex<Partition>>::default();
    let shared = Arc::clone(&log);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let log = Arc::clone(&shared);
            std::thread::spawn(move || serve(stream, port, &log));
        }
    });
    (port, log)
}

/// Answer the requests of one connection, in order, until it closes.
fn serve(mut stream: TcpStream, port: u16, log: &Mutex<Partition>) {
    let mut size = [0u8; 4];
    while stream.read_exact(&mut size).is_ok() {
        let mut request = size.to_vec();
        request.resize(4 + i32::from_be_bytes(size) as usize, 0);
        if stream.read_exact(&mut request[4..]).is_err() {
            return;
        }
        let (mut c, (key, version, correlation)) = request_header(&request);
        let body = match key {
            // what a Kafka 3 broker offers
            k if k == API_VERSIONS.key => versions_body(&[
                (PRODUCE.key, 3, 9),
                (METADATA.key, 0, 12),
                (API_VERSIONS.key, 0, 3),
                (INIT_PRODUCER_ID.key, 0, 4),
            ]),
            k if k == METADATA.key => {
                assert_eq!(version, METADATA.versions[0]);
                let named = (0..c.count().unwrap()).map(|_| c.string().unwrap().unwrap());
                let named = named.map(str::to_string).collect();
                log.lock().unwrap().lookups.push(named);
                let brokers = vec![(1, "127.0.0.1".to_string(), port)];
                metadata_body(&(brokers, vec![(0, TOPIC.to_string(), vec![(0, 0, 1)])]))
            }
            k if k == INIT_PRODUCER_ID.key => {
                assert!(version <= 1, "InitProducerId v{version}");
                producer_id_body(&ProducerId {
                    error: 0,
                    id: PRODUCER_ID,
                    epoch: 0,
                })
            }
            k if k == PRODUCE.key => produce(&mut c, &request, version, log),
            _ => panic!("the stand-in was asked API {key} v{version}"),
        };
        let mut answer = ((body.len() + 4) as i32).to_be_bytes().to_vec();
        answer.extend_from_slice(&correlation.to_be_bytes());
        answer.extend_from_slice(&body);
        if stream.write_all(&answer).is_err() {
            return;
        }
    }
}

/// A Produce request of `version` (`c` at its body), its one batch checked and taken.
fn produce(c: &mut Cursor<'_>, request: &[u8], version: i16, log: &Mutex<Partition>) -> Vec<u8> {
    assert!((3..=8).contains(&version), "Produce v{version}");
    assert_eq!(c.string().unwrap(), None); // no transactional id
    assert_eq!(c.i16().unwrap(), -1); // acks=all
    c.i32().unwrap(); // timeout
    assert_eq!(c.count().unwrap(), 1);
    assert_eq!(c.string().unwrap(), Some(TOPIC));
    assert_eq!((c.count().unwrap(), c.i32().unwrap()), (1, 0));
    let batch = &request[c.bytes_range().unwrap()];
    assert_eq!(c.remaining(), 0);
    let h = head(batch).unwrap();
    assert_eq!((crc(batch), h.producer_id), (h.crc, PRODUCER_ID));
    let base = i32::from_be_bytes(batch[BASE_SEQUENCE].try_into().unwrap());
    let mut scratch = Vec::new();
    let section = payload(&h, batch, &mut scratch, 1 << 20).unwrap();
    let values = records(&h, section, false).unwrap().into_iter();
    let values = values.map(|r| String::from_utf8(r.value.unwrap().to_vec()).unwrap());
    let (error, offset) = log.lock().unwrap().take(base, values.collect());
    produce_body(version, TOPIC, &[(0, error, offset)])
}

/// The sink's idempotent producer configuration for the stand-in on `port`, with `more`.
fn producer(port: u16, more: &[(&str, &str)]) -> ProduceConfig {
    let servers = format!("127.0.0.1:{port}");
    let mut pairs = vec![
        ("bootstrap.servers", servers.as_str()),
        ("enable.idempotence", "true"),
        ("partitioner", "murmur2_random"),
        ("client.id", "me"),
        ("retry.backoff.ms", "1"),
        ("message.timeout.ms", "5000"),
    ];
    pairs.extend_from_slice(more);
    ProduceConfig::from_config(&config(&pairs)).unwrap()
}

/// A topic just created: its partition's first batch refused with NOT_LEADER_OR_FOLLOWER
/// while the broker has no producer state for it, so that it would write any later batch that
/// reached it first as the first (and then refuse the first one, sent again, as
/// OUT_OF_ORDER_SEQUENCE_NUMBER: fatal). The producer sends the first batch alone until it is
/// acknowledged: every batch is written once, in sequence order, the first one after its
/// refusal. A stand-in broker, because a real one gives this answer only by a timing race right
/// after a topic is created.
#[test]
fn a_new_partitions_first_batch_refused_is_still_written_first_and_the_rest_in_order() {
    const ROWS: usize = 300;
    let (port, log) = stand_in();
    // about 16 records a batch: some 19 batches, up to 5 in flight
    let producer = producer(port, &[("batch.size", "1000"), ("linger.ms", "60000")]);
    let started = Instant::now();
    let mut writer = DirectWriter::new(producer, None);
    let values: Vec<String> = (0..ROWS).map(|i| format!("row {i:046}")).collect();
    let column: ArrayRef = Arc::new(StringArray::from(values.clone()));
    let batch = RecordBatch::try_from_iter([("value", column)]).unwrap();
    let to = Destination {
        topic: Some(TOPIC),
        topics: &[],
    };
    writer.send(&batch, to).unwrap();
    let left = writer.flush(5_000).unwrap();
    let (rows, _, error) = writer.deliveries();
    assert_eq!((writer.failed(), error), (false, None));
    assert_eq!(left, 0);
    assert_eq!(rows, HashMap::from([(TOPIC.to_string(), ROWS as u64)]));
    assert!(writer.retries() >= 1);
    let p = log.lock().unwrap();
    assert!(p.written.len() >= 6, "{:?}", p.written);
    let mut next = 0;
    for &(base, count) in &p.written {
        assert_eq!(base, next, "written out of order: {:?}", p.written);
        next += count;
    }
    assert_eq!(next as usize, ROWS);
    assert!(
        p.values == values,
        "the rows were not written once each, in order"
    );
    let (base, count) = p.written[0];
    let first = [(base, count, NOT_LEADER_OR_FOLLOWER), (base, count, 0)];
    assert_eq!(p.seen[..2], first, "{:?}", p.seen);
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// A lookup names the topics in use, not every topic the producer wrote to: Metadata may
/// create the topics it names (`allow.auto.create.topics`, on by default), so naming a topic
/// deleted since its last batch would make it again on a broker that creates topics. After
/// `fresh` is written and acknowledged, the lookup for `later` names `later` alone.
#[test]
fn a_lookup_names_the_topics_in_use_only() {
    let (port, log) = stand_in();
    let producer = producer(port, &[]);
    let mut writer = DirectWriter::new(producer, None);
    let column: ArrayRef = Arc::new(StringArray::from(vec!["a", "b"]));
    let batch = RecordBatch::try_from_iter([("value", column)]).unwrap();
    let to = |topic| Destination {
        topic: Some(topic),
        topics: &[],
    };
    writer.send(&batch, to(TOPIC)).unwrap();
    assert_eq!(writer.flush(5_000).unwrap(), 0);
    writer.send(&batch, to("later")).unwrap(); // not in the stand-in's answer: it waits
    let lookups = log.lock().unwrap().lookups.clone();
    let (first, last) = (lookups.first().unwrap(), lookups.last().unwrap());
    assert_eq!(
        (first, last),
        (&vec![TOPIC.to_string()], &vec!["later".to_string()])
    );
}
