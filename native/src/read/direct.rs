//! The direct fetch path: Fetch requests sent straight to each partition's leader, and their
//! record batches parsed in place into the Arrow builders ([`crate::protocol`]).
//!
//! librdkafka's consumer allocates, queues and frees one op per record (~0.34 µs/record of the
//! core's ~0.45, docs/benchmarks.md); this path reads the same bytes with none of that. It is
//! taken only where it reads exactly what librdkafka would ([`config`]). One Fetch request at a
//! time goes to each leader of the pending partitions in turn ([`broker`]: the connections), or
//! to the replica a leader names for a partition ([`replica`]), its batches parsed into the
//! builder until a batch is due. A request unanswered past the request timeout (Java's
//! `request.timeout.ms`, 30 s, unless set) drops its connection and is sent once more on a new
//! one. No progress within the poll timeout fails as librdkafka's reading does (the "stuck"
//! message, positions from this path); anything else it meets while reading (an error code, an
//! old-format batch, a lost connection) hands the remaining ranges to librdkafka's consumer from
//! where the direct path stopped, so librdkafka's semantics (data loss, deleted topics, leader
//! changes) stay the only ones.

pub mod config;
mod parse;
mod pool;
mod replica;

use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;

use super::{ClusterReader, ReadFailure};
use crate::connection::broker::{Broker, Refusal};
use crate::protocol::aborted::Aborted;
use crate::protocol::error::error_name;
use crate::protocol::fetch::{self, parse_fetch, FetchPartition, FETCH};
use crate::protocol::metadata::{self, Leaders, METADATA};
use crate::protocol::primitives::Api;
use config::DirectConfig;
use pool::BrokerKey;
pub use pool::Brokers;
use replica::Replicas;

/// Why the direct path stopped before every range was read.
pub enum Stop {
    /// Go on with librdkafka's consumer, for this reason.
    Fallback(String),
    /// Fail the read.
    Failed(ReadFailure),
}

impl From<String> for Stop {
    fn from(reason: String) -> Self {
        Stop::Fallback(reason)
    }
}

/// One partition's data of the current response, still to be parsed.
struct Part {
    topic: String,
    partition: i32,
    records: Range<usize>,
    aborted: Aborted,
}

/// The direct path's connections and the response being parsed.
pub struct Direct {
    config: DirectConfig,
    leaders: Option<Leaders>,
    brokers: Brokers,
    body: Vec<u8>,
    parts: VecDeque<Part>,
    /// The records of a compressed batch, decompressed (reused).
    scratch: Vec<u8>,
    /// Which broker is asked next, among those leading pending partitions.
    turn: usize,
    /// Brokers that asked for no request before an instant (a quota's throttle time).
    throttled: HashMap<i32, Instant>,
    /// The last batch whose CRC did not match: (topic, partition, base offset).
    damaged: Option<(String, i32, i64)>,
    /// Why requests were sent again on new connections, not yet taken by the reader.
    reconnects: Vec<String>,
    /// The preferred read replicas brokers named, fetched from instead of the leaders.
    replicas: Replicas,
}

impl Direct {
    /// The path with these settings, reusing `brokers` (connections of an earlier reader).
    pub fn new(config: DirectConfig, brokers: Brokers) -> Self {
        Direct {
            config,
            leaders: None,
            brokers,
            body: Vec::new(),
            parts: VecDeque::new(),
            scratch: Vec::new(),
            turn: 0,
            throttled: HashMap::new(),
            damaged: None,
            reconnects: Vec::new(),
            replicas: Replicas::default(),
        }
    }
}

impl Direct {
    /// Its connections, for the next reader of the same consumer.
    pub fn into_brokers(self) -> Brokers {
        self.brokers
    }

    /// Send the request `build` writes to the broker `key` names, over its kept connection or
    /// a new one; the answer is in `self.body`. A connection is kept only while its requests
    /// succeed and its session lasts. A request is tried once more on a new connection when
    /// the first try was on a kept one (the broker may have closed it while idle), when its
    /// connection broke under it (closed or cut mid-response), or when it went unanswered past
    /// the request timeout (the connection is dropped and made again, as the Java consumer
    /// does after `request.timeout.ms`): not after a connect failed, nor after an answer was
    /// refused unread. Each new try is recorded in `reconnects`, with why.
    fn call(
        &mut self,
        key: BrokerKey,
        build: &dyn Fn(i32, &str) -> Vec<u8>,
    ) -> Result<(), Refusal> {
        let mut body = std::mem::take(&mut self.body);
        let mut kept = self.brokers.open.remove(&key).filter(|b| !b.expiring());
        let mut called = Err(Refusal::Unreachable(String::new()));
        for attempt in 0..2 {
            let was_kept = kept.is_some();
            let connected = match kept.take() {
                Some(broker) => broker,
                None => match Broker::connect(&key.1, key.2, &self.config.connection, &NEEDED) {
                    Ok(broker) => broker,
                    Err(refusal) => {
                        called = Err(refusal);
                        break;
                    }
                },
            };
            let mut broker = connected;
            match broker.call(build, &mut body) {
                Ok(()) => {
                    called = Ok(broker);
                    break;
                }
                Err(no) => {
                    let (id, host, port) = (&key.0, &key.1, key.2);
                    let why = format!("broker {id} at {host}:{port}: {}", no.why);
                    if attempt > 0 || !(was_kept || no.broke || no.timed_out) {
                        called = Err(Refusal::Unreachable(why));
                        break;
                    }
                    self.brokers.reconnected();
                    self.reconnects.push(why.clone());
                    called = Err(Refusal::Unreachable(why));
                }
            }
        }
        self.body = body;
        self.brokers.open.insert(key, called?);
        Ok(())
    }

    /// Why each request was sent again on a new connection since the last call.
    pub fn take_reconnects(&mut self) -> Vec<String> {
        std::mem::take(&mut self.reconnects)
    }
}

/// The requests the direct fetch path sends (besides SASL's).
const NEEDED: [Api; 2] = [FETCH, METADATA];

/// The broker id of a bootstrap server's connection (its id is not known before Metadata).
const BOOTSTRAP: i32 = -1;

impl ClusterReader {
    /// The next due batch read directly; `None` when every range is read (what the builder
    /// holds is flushed by the caller). No progress within the poll timeout fails, however the
    /// responses meanwhile look (empty, or only a partial batch again and again).
    pub(super) fn read_direct(&mut self, d: &mut Direct) -> Result<Option<RecordBatch>, Stop> {
        let poll_timeout = Duration::from_millis(self.settings.poll_timeout_ms);
        while !self.pending.is_empty() {
            if d.parts.is_empty() {
                if self.last_progress.elapsed() > poll_timeout {
                    let stuck = self.pending.iter().map(|p| (&p.range, p.next));
                    let text = super::position::stuck_message(
                        &self.settings.cluster,
                        self.settings.poll_timeout_ms,
                        stuck,
                    );
                    return Err(Stop::Failed(ReadFailure::Read(text)));
                }
                self.fetch(d)?;
                continue;
            }
            if self.parse_one(d)? && self.builder.due() {
                return self.flush().map(Some).map_err(Stop::Failed);
            }
        }
        Ok(None)
    }

    /// Send the next Fetch request and keep its partitions' data.
    fn fetch(&mut self, d: &mut Direct) -> Result<(), Stop> {
        if d.leaders.is_none() {
            let mut topics: Vec<&str> = self
                .pending
                .iter()
                .map(|p| p.range.topic.as_str())
                .collect();
            topics.sort_unstable();
            topics.dedup();
            d.leaders = Some(self.leaders(d, &topics)?);
        }
        let leaders = d.leaders.as_ref().expect("looked up above");
        let mut ids: Vec<i32> = Vec::with_capacity(self.pending.len());
        for p in &self.pending {
            let (topic, partition) = (&p.range.topic, p.range.partition);
            let key = (topic.clone(), partition);
            let leader = *leaders
                .leaders
                .get(&key)
                .ok_or_else(|| format!("no leader known for {topic}/{partition}"))?;
            ids.push(d.replicas.target(topic, partition, leader));
        }
        let mut brokers = ids.clone();
        brokers.sort_unstable();
        brokers.dedup();
        d.turn = next_turn(&brokers, d.turn, &d.throttled);
        let broker_id = brokers[d.turn];
        let parts: Vec<FetchPartition<'_>> = self
            .pending
            .iter()
            .zip(&ids)
            .filter(|(_, id)| **id == broker_id)
            .map(|(p, _)| FetchPartition {
                topic: &p.range.topic,
                partition: p.range.partition,
                offset: p.next,
            })
            .collect();
        let (host, port) = leaders
            .brokers
            .get(&broker_id)
            .ok_or_else(|| format!("broker {broker_id} has no address"))?;
        let key: BrokerKey = (broker_id, host.clone(), *port);
        let mut limits = d.config.limits.clone();
        // A response is parsed into batches bounded by max_bytes: fetch no more at once.
        limits.max_bytes = limits
            .max_bytes
            .min(self.settings.max_bytes.min(i32::MAX as usize) as i32);
        let request = |c: i32, id: &str| fetch::fetch_request(c, id, &limits, &parts);
        d.call(key, &request).map_err(|s| self.stopped(s))?;
        d.brokers.count(broker_id, d.body.len() + 8);
        let fetched = parse_fetch(&d.body)?;
        if !fetched.throttle.is_zero() {
            let until = throttled_until(fetched.throttle, d.config.connection.request_timeout);
            d.throttled.insert(broker_id, until);
        }
        for data in fetched.partitions {
            let (topic, partition) = (&data.topic, data.partition);
            if data.error != 0 {
                if d.replicas.failed(topic, partition, broker_id) {
                    continue; // the leader is asked next
                }
                return Err(Stop::Fallback(format!(
                    "partition {topic}/{partition} answered error code {} ({})",
                    data.error,
                    error_name(data.error)
                )));
            }
            if data.preferred_replica >= 0 {
                let replica = data.preferred_replica;
                let listed = d.leaders.as_ref().map(|l| &l.brokers);
                let known = listed.is_some_and(|b| b.contains_key(&replica));
                d.replicas
                    .named(topic, partition, replica, broker_id, known)?;
            }
            if !data.records.is_empty() {
                d.parts.push_back(Part {
                    topic: data.topic,
                    partition: data.partition,
                    records: data.records,
                    aborted: Aborted::new(data.aborted),
                });
            }
        }
        Ok(())
    }

    /// Who leads the partitions of `topics`, asked of the first bootstrap server that answers.
    fn leaders(&self, d: &mut Direct, topics: &[&str]) -> Result<Leaders, Stop> {
        let request = |c: i32, id: &str| metadata::metadata_request(c, id, topics);
        let mut last = String::from("bootstrap.servers names no server");
        for (host, port) in d.config.bootstrap.clone() {
            match d.call((BOOTSTRAP, host, port), &request) {
                Ok(()) => {
                    let leaders = metadata::parse_metadata(&d.body)
                        .map_err(|m| format!("a malformed Metadata answer: {}", m.0))?;
                    if let Some((what, code)) = leaders.errors.first() {
                        let name = error_name(*code);
                        return Err(Stop::Fallback(format!(
                            "the metadata of {what} answered error code {code} ({name})"
                        )));
                    }
                    return Ok(leaders);
                }
                Err(Refusal::Unreachable(why)) => last = why,
                Err(refused) => return Err(self.stopped(refused)),
            }
        }
        Err(Stop::Fallback(last))
    }

    /// How a broker connection's failure stops the direct path: hand over to librdkafka when
    /// the broker could not be reached, fail naming the cause when it refused the client.
    fn stopped(&self, refusal: Refusal) -> Stop {
        match refusal {
            Refusal::Unreachable(why) => Stop::Fallback(why),
            Refusal::Refused(why) => Stop::Failed(self.failed(&why)),
        }
    }
}

/// Until when a broker that asked for `throttle` is not asked again: honoured up to the request
/// timeout (itself within the poll timeout), as a throttle time of days, damaged or not, would
/// hold the read past any timeout.
fn throttled_until(throttle: Duration, request_timeout: Duration) -> Instant {
    Instant::now() + throttle.min(request_timeout)
}

/// The index in `brokers` of the next one to ask after `turn`, passing over throttled ones;
/// when every one is throttled, waits for the first to be free and gives it.
fn next_turn(brokers: &[i32], turn: usize, throttled: &HashMap<i32, Instant>) -> usize {
    let now = Instant::now();
    let free_at = |i: usize| throttled.get(&brokers[i]).copied().unwrap_or(now);
    let order = (1..=brokers.len()).map(|step| (turn + step) % brokers.len());
    if let Some(free) = order.clone().find(|&i| free_at(i) <= now) {
        return free;
    }
    let first = order.min_by_key(|&i| free_at(i)).unwrap_or(0);
    std::thread::sleep(free_at(first).saturating_duration_since(now));
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_throttle_time_of_weeks_is_honoured_up_to_the_request_timeout() {
        let weeks = Duration::from_millis(i32::MAX as u64);
        let until = throttled_until(weeks, Duration::from_secs(5));
        assert!(until <= Instant::now() + Duration::from_secs(5));
        let brief = throttled_until(Duration::from_millis(10), Duration::from_secs(5));
        assert!(brief <= Instant::now() + Duration::from_millis(10));
    }

    #[test]
    fn throttled_brokers_are_passed_over_until_every_one_is() {
        let later = Instant::now() + Duration::from_millis(50);
        let mut throttled = HashMap::from([(2, later)]);
        assert_eq!(next_turn(&[1, 2, 3], 0, &throttled), 2);
        assert_eq!(next_turn(&[1, 2, 3], 2, &throttled), 0);
        throttled.insert(1, later + Duration::from_millis(50));
        throttled.insert(3, later + Duration::from_millis(50));
        assert_eq!(next_turn(&[1, 2, 3], 2, &throttled), 1);
        assert!(Instant::now() >= later);
    }
}
