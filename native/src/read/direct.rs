//! Reading ranges through the direct fetch path ([`crate::fetch`]): one Fetch request at a time
//! to each leader of the pending partitions in turn, its batches parsed into the builder until a
//! batch is due. No progress within the poll timeout fails as librdkafka's reading does (the
//! "stuck" message, positions from this path); any other problem is returned as a reason, and
//! the reader goes on with librdkafka's consumer.

use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;

use super::{ClusterReader, ReadFailure};
use crate::batch::{BatchBuilder, Record};
use crate::fetch::aborted::Aborted;
use crate::fetch::records::{self, BatchHead, Problem};
use crate::fetch::wire::{self, FetchPartition};
use crate::fetch::{parse_fetch, Broker, DirectConfig};
use crate::ffi::Leaders;

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

/// A broker's id and address.
pub type BrokerKey = (i32, String, u16);
/// Open connections to brokers, kept across readers of one pooled consumer, and the bytes of
/// Fetch responses received from each broker id (shared: readable while a reader holds them).
#[derive(Default)]
pub struct Brokers {
    open: HashMap<BrokerKey, Broker>,
    received: Arc<Mutex<HashMap<i32, u64>>>,
}

impl Brokers {
    /// Bytes of Fetch responses received per broker id so far.
    pub fn received(&self) -> HashMap<i32, u64> {
        self.received
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The connections, for a reader (these keep counting into the same totals).
    pub fn lend(&mut self) -> Brokers {
        Brokers {
            open: std::mem::take(&mut self.open),
            received: Arc::clone(&self.received),
        }
    }

    /// The connections a reader hands back (none after it fell back to librdkafka).
    pub fn restore(&mut self, lent: Brokers) {
        self.open = lent.open;
    }

    fn count(&self, broker: i32, bytes: usize) {
        let mut received = self.received.lock().unwrap_or_else(PoisonError::into_inner);
        *received.entry(broker).or_default() += bytes as u64;
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
        }
    }
}

impl Direct {
    /// Its connections, for the next reader of the same consumer.
    pub fn into_brokers(self) -> Brokers {
        self.brokers
    }
}

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
    fn fetch(&mut self, d: &mut Direct) -> Result<(), String> {
        if d.leaders.is_none() {
            let mut topics: Vec<&str> = self
                .pending
                .iter()
                .map(|p| p.range.topic.as_str())
                .collect();
            topics.sort_unstable();
            topics.dedup();
            let timeout = d.config.socket_timeout.as_millis().min(i32::MAX as u128) as i32;
            d.leaders = Some(self.consumer.leaders(&topics, timeout)?);
        }
        let leaders = d.leaders.as_ref().expect("looked up above");
        let mut ids: Vec<i32> = Vec::with_capacity(self.pending.len());
        for p in &self.pending {
            let key = (p.range.topic.clone(), p.range.partition);
            let leader = *leaders
                .leaders
                .get(&key)
                .ok_or_else(|| format!("no leader known for {}/{}", key.0, key.1))?;
            ids.push(leader);
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
        let request = |c: i32, id: &str| wire::fetch_request(c, id, &limits, &parts);
        // A connection is kept only while its requests succeed. One kept from an earlier
        // reader may have been closed by the broker meanwhile (idle): connect once more.
        let mut body = std::mem::take(&mut d.body);
        let kept = d.brokers.open.remove(&key).and_then(|mut kept| {
            let answered = kept.call(request, &mut body).is_ok();
            answered.then_some(kept)
        });
        let called = match kept {
            Some(kept) => Ok(kept),
            None => Broker::connect(&key.1, key.2, &d.config)
                .and_then(|mut b| b.call(request, &mut body).map(|()| b)),
        };
        d.body = body;
        d.brokers.open.insert(key, called?);
        d.brokers.count(broker_id, d.body.len() + 8);
        let fetched = parse_fetch(&d.body)?;
        if !fetched.throttle.is_zero() {
            d.throttled
                .insert(broker_id, Instant::now() + fetched.throttle);
        }
        for data in fetched.partitions {
            if data.error != 0 {
                return Err(format!(
                    "partition {}/{} answered error code {}",
                    data.topic, data.partition, data.error
                ));
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

    /// Parse the next record batch of the current response; whether records were added.
    fn parse_one(&mut self, d: &mut Direct) -> Result<bool, String> {
        let Direct {
            body,
            parts,
            config,
            scratch,
            ..
        } = d;
        let Some(part) = parts.front_mut() else {
            return Ok(false);
        };
        let idx = self.find(&part.topic, part.partition);
        let rest = &body[part.records.clone()];
        let head = match idx {
            Some(_) => records::head(rest).map_err(|p| p.to_string())?,
            None => None,
        };
        let (Some(idx), Some(h)) = (idx, head) else {
            parts.pop_front();
            return Ok(false);
        };
        let batch = &rest[..h.size];
        let max = config.max_response;
        let hidden = if config.limits.read_committed {
            part.aborted.hides(&h, batch, max)
        } else {
            Ok(h.is_control())
        };
        let hidden = hidden.map_err(|p| p.to_string())?;
        let pending = &self.pending[idx];
        let (next, end) = (pending.next, pending.range.end);
        let before = self.builder.rows();
        if !hidden && h.last_offset >= next {
            let (topic, partition) = (pending.range.topic.as_str(), pending.range.partition);
            let payload = records::payload(&h, batch, scratch, max).map_err(|p| p.to_string())?;
            let wanted = Wanted {
                topic,
                partition,
                offsets: next..end,
                headers: self.settings.include_headers,
            };
            append(&mut self.builder, &h, payload, &wanted).map_err(|p| p.to_string())?;
        }
        // Only a batch read whole moves the position: a handover from here reads it again.
        part.records.start += h.size;
        let pending = &mut self.pending[idx];
        if h.last_offset >= next {
            pending.next = h.last_offset + 1;
            self.last_progress = Instant::now();
        }
        if pending.next >= end {
            self.pending.remove(idx);
        }
        Ok(self.builder.rows() > before)
    }
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

/// Where a batch's records go: their partition, and which offsets of it are wanted.
struct Wanted<'a> {
    topic: &'a str,
    partition: i32,
    offsets: Range<i64>,
    headers: bool,
}

/// The records of one batch (head `h`, records section `payload`) whose offsets are wanted,
/// appended to `builder`: all of them, or none when the batch does not parse to its end.
fn append(
    builder: &mut BatchBuilder,
    h: &BatchHead,
    payload: &[u8],
    wanted: &Wanted<'_>,
) -> Result<(), Problem> {
    for r in records::records(h, payload, wanted.headers)? {
        if wanted.offsets.contains(&r.offset) {
            builder.add(&Record {
                key: r.key,
                value: r.value,
                topic: wanted.topic,
                partition: wanted.partition,
                offset: r.offset,
                timestamp: r.timestamp,
                headers: r.headers,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fetch::records::head;
    use crate::fetch::sample::{batch, raw_batch, record, Item};

    #[test]
    fn a_batch_failing_half_way_appends_nothing() {
        let items: [Item<'_>; 3] = [
            (0, None, Some(b"a"), vec![]),
            (1, None, Some(b"b"), vec![]),
            (2, None, Some(b"c"), vec![]),
        ];
        let mut bytes: Vec<u8> = items[..2]
            .iter()
            .enumerate()
            .flat_map(|(i, r)| record(i, r))
            .collect();
        let mut third = record(2, &items[2]);
        third[0] += 2; // its length says two bytes more than its fields
        bytes.extend_from_slice(&third);
        bytes.extend_from_slice(&[0, 0]);
        let wanted = Wanted {
            topic: "t",
            partition: 0,
            offsets: 0..10,
            headers: false,
        };
        let mut builder = BatchBuilder::new("east", false, 100, 1 << 20);
        let broken = raw_batch(0, 0, -1, 2, 3, &bytes);
        let h = head(&broken).unwrap().unwrap();
        assert!(append(&mut builder, &h, &broken[records::HEAD_LEN..], &wanted).is_err());
        assert_eq!(builder.rows(), 0);
        let whole = batch(0, 0, -1, &items);
        let h = head(&whole).unwrap().unwrap();
        append(&mut builder, &h, &whole[records::HEAD_LEN..], &wanted).unwrap();
        assert_eq!(builder.rows(), 3);
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
