//! The direct produce path: the sink's rows written into Kafka record batches by the core
//! ([`batches`], one open batch per partition, partitioned as the Java producer partitions:
//! [`partitioner`]) and sent in Produce requests straight to each partition's leader as an
//! idempotent producer ([`wire`]): no librdkafka, no copy or allocation per record, no report
//! per record (deliveries are counted per topic from the Produce answers).
//!
//! Taken where it writes what librdkafka's producer would ([`config`]): atLeastOnce, and
//! exactlyOnce's transactions ([`transaction`], their coordinators: [`coordinator`]). A batch whose topics' partitions are not
//! known yet (the cluster unreachable) waits, whole, until they are or `message.timeout.ms`
//! ends: it then fails as librdkafka's records fail ([`answer::TIMED_OUT`]). A broker's refusal
//! (authentication, TLS verification) fails the producer at once with the broker's reason, as
//! the Java producer fails its sends on an authentication error.

pub mod answer;
pub mod batches;
pub mod config;
mod coordinator;
mod leaders;
pub mod partitioner;
mod queue;
mod spares;
#[cfg(test)]
mod stand_in;
pub mod transaction;
mod wire;

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use arrow_array::RecordBatch;

use super::batch_producer::{BatchProducer, CommittedOffset, Deliveries, Destination, Marker};
use super::{Failure, Stamp, STAMP_KEYS};
use crate::from_arrow::Rows;
use batches::Accumulator;
use config::ProduceConfig;
use transaction::Txn;
use wire::Wire;

/// A batch handed over, not yet written into record batches (its topics' partitions unknown).
struct Pending {
    batch: RecordBatch,
    fixed: Option<String>,
    mapped: Vec<(Option<String>, String)>,
    timestamp: i64,
    sequence: u64,
    since: Instant,
}

/// The direct path's producer of one cluster.
pub struct DirectWriter {
    wire: Wire,
    acc: Accumulator,
    stamp: Option<Stamp>,
    sequence: u64,
    pending: VecDeque<Pending>,
    last_lookup: Option<Instant>,
    /// A transactional producer's state.
    txn: Option<Txn>,
    /// A failure of [`Self::linger`]'s, for the next send or flush to return.
    deferred: Option<Failure>,
}

impl DirectWriter {
    pub fn new(config: ProduceConfig, stamp: Option<Stamp>) -> Self {
        let seed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() as u64);
        DirectWriter {
            txn: Txn::of(&config),
            deferred: None,
            acc: Accumulator::new(config.limits, seed),
            wire: Wire::new(config),
            stamp,
            sequence: 0,
            pending: VecDeque::new(),
            last_lookup: None,
        }
    }

    /// `linger.ms`.
    pub fn linger_time(&self) -> Duration {
        self.wire.config.linger
    }

    /// Write the waiting batches whose topics are known, in order; the first that is not
    /// waits (its topics looked up at most once per `retry.backoff.ms`), or fails when it
    /// waited past `message.timeout.ms`.
    fn drain(&mut self) -> Result<(), Failure> {
        while let Some(front) = self.pending.front() {
            let names: Vec<String> = match &front.fixed {
                Some(t) => vec![t.clone()],
                None => front.mapped.iter().map(|(_, t)| t.clone()).collect(),
            };
            let since = front.since;
            if !self.known(&names) {
                let topic = self.wire.topic(names.first().map_or("", String::as_str));
                if self.wire.fail_on_refusal(Some(topic)) {
                    self.pending.clear();
                } else if since.elapsed() > self.wire.config.message_timeout {
                    let why = self.wire.cluster.last_error.clone();
                    let code = names.iter().find_map(|n| self.wire.cluster.topic_error(n));
                    let text = match (code, why) {
                        (Some(3), _) => {
                            "UNKNOWN_TOPIC_OR_PART: Broker: Unknown topic or partition".into()
                        }
                        _ => answer::TIMED_OUT.to_string(),
                    };
                    self.pending.clear();
                    self.wire.fail(topic, text);
                }
                return Ok(());
            }
            let pending = self.pending.pop_front().expect("seen above");
            self.add(&pending)?;
        }
        Ok(())
    }

    /// Whether every topic of `names` has known partitions and the producer its id; looks
    /// them up when not, at most once per `retry.backoff.ms`.
    fn known(&mut self, names: &[String]) -> bool {
        let ready = |w: &Wire| {
            w.cluster.producer.is_some() && names.iter().all(|n| w.cluster.partitions(n).is_some())
        };
        if ready(&self.wire) {
            return true;
        }
        let backoff = self.wire.config.retry_backoff;
        if self.last_lookup.is_some_and(|at| at.elapsed() < backoff) {
            return false;
        }
        self.last_lookup = Some(Instant::now());
        let needed: Vec<usize> = names.iter().map(|n| self.wire.topic(n)).collect();
        self.wire
            .look_up(needed.into_iter().chain(self.acc.open_topics()));
        ready(&self.wire)
    }

    /// Write `p`'s rows into the open batches; the full ones are numbered and queued.
    fn add(&mut self, p: &Pending) -> Result<(), Failure> {
        let rows = Rows::of(&p.batch).map_err(|e| (None, e))?;
        let mut routes: HashMap<Option<&str>, usize> = HashMap::new();
        let fixed = p.fixed.as_deref().map(|t| self.wire.topic(t));
        for (given, actual) in &p.mapped {
            let i = self.wire.topic(actual);
            routes.insert(given.as_deref(), i);
        }
        for (i, name) in self.wire.topics.iter().enumerate() {
            if let Some(count) = self.wire.cluster.partitions(&name.name) {
                self.acc.partitions(i, count);
            }
        }
        let column = rows.topics();
        for i in 0..rows.len {
            let topic = match fixed {
                Some(t) => t,
                None => {
                    let given = column.and_then(|c| c.text(i));
                    *routes.get(&given).ok_or_else(|| {
                        let g = given.map(str::to_string);
                        (g, "the row's topic was not mapped".to_string())
                    })?
                }
            };
            let name = |w: &Wire| Some(w.topics[topic].name.clone());
            // no allocation for a row without headers
            let mut headers = Vec::new();
            rows.headers_of(i, &mut headers)
                .map_err(|e| (name(&self.wire), e))?;
            let mut digits = [0u8; 20];
            if let Some(stamp) = &self.stamp {
                headers.extend([
                    (STAMP_KEYS[0], Some(stamp.sink.as_bytes())),
                    (STAMP_KEYS[1], Some(stamp.batch.as_bytes())),
                    (STAMP_KEYS[2], Some(stamp.partition.as_bytes())),
                    (
                        STAMP_KEYS[3],
                        Some(decimal(p.sequence + i as u64, &mut digits)),
                    ),
                ]);
            }
            let fields = (rows.key(i), rows.value(i));
            self.acc
                .add(topic, rows.partition(i), p.timestamp, fields, &headers)
                .map_err(|e| (name(&self.wire), e.to_string()))?;
        }
        for full in self.acc.full.drain(..) {
            self.wire.enqueue(full);
        }
        Ok(())
    }

    /// Number and queue the closed batches, their partitions added to the open transaction
    /// first (a transactional producer).
    fn queue_closed(&mut self) {
        for full in self.acc.full.drain(..) {
            self.wire.enqueue(full);
        }
        self.add_partitions();
    }

    /// Send what can be sent; the acknowledged batches' buffers kept for the next batches.
    fn ship(&mut self) {
        self.wire.ship();
        self.keep_freed();
    }

    fn keep_freed(&mut self) {
        for buffer in self.wire.freed.drain(..) {
            self.acc.spares.keep(buffer);
        }
    }
}

impl BatchProducer for DirectWriter {
    /// Write every row of `batch` into record batches, sending the full ones; a batch whose
    /// topics are not known yet waits for them.
    fn send(&mut self, batch: &RecordBatch, to: Destination<'_>) -> Result<(), Failure> {
        Rows::of(batch).map_err(|e| (None, e))?;
        if let Some(failure) = self.deferred.take() {
            return Err(failure);
        }
        if self.txn.as_ref().is_some_and(|t| !t.open) {
            return Err((None, "no transaction is open".to_string()));
        }
        if self.wire.error.is_some() || batch.num_rows() == 0 {
            return Ok(());
        }
        let timestamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        self.pending.push_back(Pending {
            batch: batch.clone(),
            fixed: to.topic.map(str::to_string),
            mapped: to.topics.to_vec(),
            timestamp,
            sequence: self.sequence,
            since: Instant::now(),
        });
        self.sequence += batch.num_rows() as u64;
        self.drain()?;
        // As librdkafka's linger.ms: a batch open that long is sent, not kept until full.
        self.acc.close_older(self.wire.config.linger);
        self.queue_closed();
        self.ship();
        Ok(())
    }

    /// Ship the batches open past `linger.ms`, as librdkafka's background thread sends them
    /// while the caller has no rows to hand over (`send` does it after each batch).
    fn linger(&mut self) {
        if self.wire.error.is_some() || self.txn.as_ref().is_some_and(|t| !t.open) {
            return;
        }
        // the batches waiting for their topics' partitions (the lookup failed at send) too
        if let Err(failure) = self.drain() {
            self.deferred.get_or_insert(failure);
        }
        self.acc.close_older(self.wire.config.linger);
        if self.acc.full.is_empty() {
            return;
        }
        self.queue_closed();
        self.ship();
    }

    /// Recoveries so far from a retriable error or a lost connection.
    fn retries(&self) -> u64 {
        self.wire.retries
    }

    /// Whether the producer failed.
    fn failed(&self) -> bool {
        self.wire.error.is_some()
    }

    /// Write the waiting batches, send everything and wait up to `timeout_ms` for the answers:
    /// the records not acknowledged.
    fn flush(&mut self, timeout_ms: u64) -> Result<usize, Failure> {
        if let Some(failure) = self.deferred.take() {
            return Err(failure);
        }
        let deadline = Instant::now() + Duration::from_millis(timeout_ms);
        while !self.pending.is_empty() && self.wire.error.is_none() {
            self.drain()?;
            if self.pending.is_empty() || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(
                self.wire
                    .config
                    .retry_backoff
                    .max(Duration::from_millis(10)),
            );
        }
        let waiting: usize = self.pending.iter().map(|p| p.batch.num_rows()).sum();
        self.acc.close_all();
        self.queue_closed();
        let left = self.wire.flush(deadline);
        self.keep_freed();
        Ok(waiting + left)
    }

    /// Per topic name: records and key+value bytes acknowledged; the first failure.
    fn deliveries(&self) -> Deliveries {
        let mut rows = HashMap::new();
        let mut bytes = HashMap::new();
        for t in self.wire.topics.iter().filter(|t| t.rows > 0) {
            rows.insert(t.name.clone(), t.rows);
            bytes.insert(t.name.clone(), t.bytes);
        }
        let error = self.wire.error.as_ref().map(|(i, why)| {
            let name = self.wire.topics.get(*i).map_or("", |t| t.name.as_str());
            (name.to_string(), why.clone())
        });
        (rows, bytes, error)
    }

    fn init_transactions(&mut self, timeout_ms: u64) -> Result<(), Failure> {
        self.init(timeout_ms)
    }

    fn begin_transaction(&mut self) -> Result<(), Failure> {
        self.begin()
    }

    /// The metadata is sent with a NUL byte after it, as librdkafka's producer sends it (its
    /// readers take it as a C string): both engines' markers are the same bytes.
    fn send_offset(&mut self, marker: Marker<'_>, timeout_ms: u64) -> Result<(), Failure> {
        let mut bytes = marker.metadata.as_bytes().to_vec();
        bytes.push(0);
        let place = (marker.topic, marker.partition, marker.offset);
        self.commit_offset(marker.group, place, &bytes, timeout_ms)
    }

    fn commit_transaction(&mut self, timeout_ms: u64) -> Result<(), Failure> {
        self.commit(timeout_ms)
    }

    fn abort_transaction(&mut self, timeout_ms: u64) -> Result<(), Failure> {
        self.abort(timeout_ms)
    }

    fn committed_offsets(
        &mut self,
        group: &str,
        places: &[(&str, i32)],
        timeout_ms: u64,
    ) -> Result<Option<Vec<CommittedOffset>>, Failure> {
        self.fetch_offsets(group, places, timeout_ms)
    }
}

/// `n` in decimal, written at the end of `out`.
fn decimal(mut n: u64, out: &mut [u8; 20]) -> &[u8] {
    let mut at = out.len();
    loop {
        at -= 1;
        out[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &out[at..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_in_decimal() {
        let mut d = [0u8; 20];
        assert_eq!(decimal(0, &mut d), b"0");
        assert_eq!(decimal(1234567890, &mut d), b"1234567890");
        assert_eq!(decimal(u64::MAX, &mut d), u64::MAX.to_string().as_bytes());
    }
}
