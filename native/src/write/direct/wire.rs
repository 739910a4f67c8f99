//! The idempotent producer's requests ([`Wire`]): its id (InitProducerId), the leaders
//! (Metadata), and each partition's batches, numbered in order, sent to its leader in Produce
//! requests (at most `max.in.flight` per connection, answers read in order). A batch is kept
//! until answered: a retriable error ([`super::answer`]) or a lost connection has every batch
//! not acknowledged sent again in order after a lookup (the broker drops what it wrote); a fatal
//! error, or `message.timeout.ms` passed, fails the producer (its first failure reported).
//! Transactional batches carry the transactional bit ([`super::transaction`]).

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Instant;

use super::answer::{Outcome, TIMED_OUT};
use super::batches::Full;
use super::config::ProduceConfig;
use super::leaders::Cluster;
use super::queue::Part;
use crate::protocol::produce::{parse_produce, produce_request, ProducePartition};

/// Bytes of batches put in one request at most (brokers take 100 MB).
const REQUEST_BYTES: usize = 16 << 20;

/// A request in flight: its correlation id and the (topic, partition, base sequence) it carries.
struct InFlight {
    correlation: i32,
    parts: Vec<(usize, i32, i32)>,
}

/// A topic: its name and what its partitions acknowledged.
pub struct Topic {
    pub name: String,
    pub rows: u64,
    pub bytes: u64,
}

/// The producer's connections, batches and deliveries.
pub struct Wire {
    pub config: ProduceConfig,
    pub cluster: Cluster,
    pub topics: Vec<Topic>,
    pub(super) parts: HashMap<(usize, i32), Part>,
    in_flight: HashMap<i32, VecDeque<InFlight>>,
    /// The first failure: (topic index, the reason).
    pub error: Option<(usize, String)>,
    /// Partitions whose batch the broker refused for good (too large, not authorised): their
    /// batches are dropped, the other partitions written on (as librdkafka fails such records).
    refused: HashSet<(usize, i32)>,
    /// A retriable error or a lost connection: batches are sent again after a lookup.
    recover: bool,
    /// The producer failed as a whole: nothing more is sent.
    pub(super) dead: bool,
    /// Recoveries from a retriable error or a lost connection (all unacknowledged sent again).
    pub retries: u64,
    body: Vec<u8>,
    /// The acknowledged batches' buffers (for the accumulator's spares).
    pub freed: Vec<Vec<u8>>,
}

impl Wire {
    pub fn new(config: ProduceConfig) -> Self {
        Wire {
            cluster: Cluster::new(&config),
            config,
            topics: Vec::new(),
            parts: HashMap::new(),
            in_flight: HashMap::new(),
            error: None,
            refused: HashSet::new(),
            recover: false,
            dead: false,
            retries: 0,
            body: Vec::new(),
            freed: Vec::new(),
        }
    }

    /// The index of topic `name` (known from now on).
    pub fn topic(&mut self, name: &str) -> usize {
        if let Some(i) = self.topics.iter().position(|t| t.name == name) {
            return i;
        }
        self.topics.push(Topic {
            name: name.to_string(),
            rows: 0,
            bytes: 0,
        });
        self.topics.len() - 1
    }

    /// Look up the leaders of the topics in use (batches not acknowledged, and `more`), never of
    /// every topic written to: a lookup may create what it names, so a deleted one would return.
    pub fn look_up(&mut self, more: impl Iterator<Item = usize>) {
        let waiting = self.parts.iter().filter(|(_, p)| !p.batches.is_empty());
        let mut used: Vec<usize> = waiting.map(|(&(t, _), _)| t).chain(more).collect();
        used.sort_unstable();
        used.dedup();
        let names: Vec<String> = used.iter().map(|&t| self.topics[t].name.clone()).collect();
        let _ = self.cluster.refresh(&names, &self.config);
    }

    /// Fail the producer (the first failure is kept); nothing more is sent.
    pub fn fail(&mut self, topic: usize, why: String) {
        if self.error.is_none() {
            self.error = Some((topic, why));
        }
        self.dead = true;
        self.parts.clear();
        self.in_flight.clear();
        self.cluster.close();
    }

    /// Number a closed batch and queue it for its partition.
    pub fn enqueue(&mut self, full: Full) {
        if self.dead || self.refused.contains(&(full.topic, full.partition)) {
            return;
        }
        let (pid, epoch) = self.cluster.producer.unwrap_or((-1, -1));
        let transactional = self.config.transactional_id.is_some();
        let part = self.parts.entry((full.topic, full.partition)).or_default();
        part.push(full.open, (pid, epoch), transactional);
    }

    /// Records not yet acknowledged.
    pub fn waiting(&self) -> usize {
        let batches = self.parts.values().flat_map(|p| &p.batches);
        batches.map(|b| b.records.max(0) as usize).sum()
    }

    /// Send what can be sent: for each leader, requests of each partition's next unsent batch
    /// while fewer than `max.in.flight` are in flight (else the oldest answer is read first).
    pub fn ship(&mut self) {
        if self.recover {
            self.settle(); // after a retriable error: the leaders looked up again first
        }
        if self.dead || self.fail_on_refusal(None) {
            return;
        }
        let mut by_leader: HashMap<i32, Vec<(usize, i32)>> = HashMap::new();
        for (&(topic, partition), part) in &self.parts {
            if !part.batches.iter().any(|b| !b.sent) {
                continue;
            }
            if let Some(leader) = self.cluster.leader(&self.topics[topic].name, partition) {
                by_leader
                    .entry(leader)
                    .or_default()
                    .push((topic, partition));
            }
        }
        for (leader, mut parts) in by_leader {
            parts.sort_unstable();
            loop {
                if self.dead || self.recover {
                    return;
                }
                let flying = self.in_flight.get(&leader).map_or(0, VecDeque::len);
                if flying >= self.config.max_in_flight {
                    self.receive(leader);
                    continue;
                }
                if !self.send(leader, &parts) {
                    // a partition's first batch in flight holds its next ones: its answer first
                    if flying > 0
                        && parts
                            .iter()
                            .any(|k| self.parts.get(k).is_some_and(Part::held))
                    {
                        self.receive(leader);
                        continue;
                    }
                    break;
                }
            }
        }
    }

    /// One request to `leader` of each of `parts`' next unsent batch; false when none is left.
    fn send(&mut self, leader: i32, parts: &[(usize, i32)]) -> bool {
        let mut carried = Vec::new();
        let mut size = 0;
        for &(topic, partition) in parts {
            let part = self.parts.get(&(topic, partition));
            let next = part.and_then(Part::next);
            if let (Some(part), Some(i)) = (part, next) {
                if size > 0 && size + part.batches[i].bytes.len() > REQUEST_BYTES {
                    break;
                }
                size += part.batches[i].bytes.len();
                carried.push((topic, partition, i));
            }
        }
        if carried.is_empty() {
            return false;
        }
        let request_parts: Vec<ProducePartition<'_>> = carried
            .iter()
            .map(|&(topic, partition, i)| ProducePartition {
                topic: &self.topics[topic].name,
                partition,
                batch: &self.parts[&(topic, partition)].batches[i].bytes,
            })
            .collect();
        let acks = (-1, self.config.broker_timeout_ms);
        let txn = self.config.transactional_id.as_deref();
        let sent = self.cluster.send(leader, |header| {
            produce_request(header, txn, acks, &request_parts)
        });
        let Ok(correlation) = sent else {
            self.recover = true; // not connected, or the connection broke
            return false;
        };
        let mut flown = Vec::with_capacity(carried.len());
        for (topic, partition, i) in carried {
            let batch = &mut self
                .parts
                .get_mut(&(topic, partition))
                .expect("above")
                .batches[i];
            batch.sent = true;
            flown.push((topic, partition, batch.base_sequence));
        }
        let flight = InFlight {
            correlation,
            parts: flown,
        };
        self.in_flight.entry(leader).or_default().push_back(flight);
        true
    }

    /// Read the oldest answer of `leader` and act on each partition's part of it.
    fn receive(&mut self, leader: i32) {
        let Some(flight) = self
            .in_flight
            .get_mut(&leader)
            .and_then(VecDeque::pop_front)
        else {
            return;
        };
        let mut body = std::mem::take(&mut self.body);
        let answered = self.cluster.receive(leader, flight.correlation, &mut body);
        let parsed = answered.and_then(|version| {
            parse_produce(version, &body)
                .map_err(|m| format!("a malformed Produce answer: {}", m.0))
        });
        self.body = body;
        let answers = match parsed {
            Ok((answers, _throttle)) => answers,
            Err(_) => {
                // The connection is gone: what it carried is sent again on a new one.
                self.cluster.drop_connection(leader);
                self.in_flight.remove(&leader);
                self.recover = true;
                return;
            }
        };
        for (topic, partition, base) in flight.parts {
            let name = &self.topics[topic].name;
            let answer = answers
                .iter()
                .find(|a| a.partition == partition && a.topic == *name);
            let Some(answer) = answer else {
                self.recover = true;
                continue;
            };
            let Some(part) = self.parts.get_mut(&(topic, partition)) else {
                continue;
            };
            let Some(i) = part.batches.iter().position(|b| b.base_sequence == base) else {
                continue;
            };
            match super::answer::outcome(answer.error, i == 0 && !self.recover) {
                Outcome::Written => {
                    part.acked = true;
                    let batch = part.batches.remove(i).expect("found above");
                    let t = &mut self.topics[topic];
                    t.rows += batch.records.max(0) as u64;
                    t.bytes += batch.kv;
                    self.freed.push(batch.bytes);
                }
                Outcome::Retry => {
                    part.batches[i].sent = false;
                    self.recover = true;
                }
                Outcome::Refused(name) => {
                    let why = super::answer::text(name, answer.error, answer.message.as_deref());
                    if self.error.is_none() {
                        self.error = Some((topic, why));
                    }
                    part.batches.clear();
                    self.refused.insert((topic, partition));
                }
                Outcome::Fatal(name) => {
                    let why = super::answer::text(name, answer.error, answer.message.as_deref());
                    self.fail(topic, why);
                    return;
                }
            }
        }
    }

    /// Read every answer in flight.
    fn answer_all(&mut self) {
        let leaders: Vec<i32> = self.in_flight.keys().copied().collect();
        for leader in leaders {
            while !self.dead && self.in_flight.get(&leader).is_some_and(|q| !q.is_empty()) {
                self.receive(leader);
            }
        }
    }

    /// Abort: answers in flight read, batches not acknowledged dropped (whether any were).
    pub fn drop_batches(&mut self) -> bool {
        self.answer_all();
        self.in_flight.clear();
        self.recover = false;
        let dropped = self.parts.values().any(|p| !p.batches.is_empty());
        self.parts.retain(|_, p| p.batches.is_empty());
        dropped
    }

    /// Wait for every answer in flight; after a retriable error, every batch not acknowledged
    /// is unsent again, the leaders looked up again after `retry.backoff.ms`.
    fn settle(&mut self) {
        self.answer_all();
        if self.recover && !self.dead {
            self.in_flight.clear();
            for batch in self.parts.values_mut().flat_map(|p| p.batches.iter_mut()) {
                batch.sent = false;
            }
            self.retries += 1;
            std::thread::sleep(self.config.retry_backoff);
            self.look_up(std::iter::empty());
            self.recover = false;
        }
    }

    /// Fail with the message timeout when a batch waited past it.
    fn expire(&mut self) {
        let timeout = self.config.message_timeout;
        let expired = self.parts.iter().find(|(_, p)| {
            p.batches
                .front()
                .is_some_and(|b| b.created.elapsed() > timeout)
        });
        if let Some((&(topic, _), _)) = expired {
            self.fail(topic, TIMED_OUT.to_string());
        }
    }

    /// Send every batch and wait for their answers until `deadline`: the records not
    /// acknowledged then (none after a failure: they failed).
    pub fn flush(&mut self, deadline: Instant) -> usize {
        loop {
            self.ship();
            self.settle();
            if self.parts.values().all(|p| p.batches.is_empty()) {
                return self.waiting();
            }
            self.expire();
            if self.fail_on_refusal(None) || Instant::now() >= deadline {
                return self.waiting();
            }
            if !self.any_leader() {
                std::thread::sleep(self.config.retry_backoff);
                self.look_up(std::iter::empty());
            }
        }
    }

    /// Fail on a broker's refusal (authentication, TLS), naming `topic` (else a topic with
    /// batches waiting): whether it failed.
    pub fn fail_on_refusal(&mut self, topic: Option<usize>) -> bool {
        let Some(why) = self.cluster.refused.take() else {
            return false;
        };
        let waiting = self.parts.iter().find(|(_, p)| !p.batches.is_empty());
        let topic = topic.or(waiting.map(|(&(t, _), _)| t));
        self.fail(topic.unwrap_or(0), why);
        true
    }

    /// Whether some partition with batches to send has a known leader.
    fn any_leader(&self) -> bool {
        self.parts.iter().any(|(&(topic, partition), p)| {
            !p.batches.is_empty()
                && self
                    .cluster
                    .leader(&self.topics[topic].name, partition)
                    .is_some()
        })
    }
}
