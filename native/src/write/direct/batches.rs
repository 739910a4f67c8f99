//! Rows gathered into one open record batch per partition ([`Accumulator`]), each written in
//! place ([`BatchWriter`]); a batch that would pass `batch.size` or `batch.num.messages` is
//! closed and queued whole ([`Full`]) for the producer to number and send.

use std::time::{Duration, Instant};

use super::partitioner::{partition_of_key, Sticky};
use super::spares::Spares;
use crate::protocol::batch_writer::{BatchWriter, Header};

/// How large a batch grows, and the largest record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `batch.size`: a batch's bytes.
    pub batch_size: usize,
    /// `batch.num.messages`: a batch's records.
    pub batch_records: i32,
    /// `message.max.bytes`: one record's bytes in its batch (librdkafka refuses a larger one).
    pub max_record: usize,
}

impl Default for Limits {
    fn default() -> Self {
        // librdkafka's defaults.
        Limits {
            batch_size: 1_000_000,
            batch_records: 10_000,
            max_record: 1_000_000,
        }
    }
}

/// An open batch, the key and value bytes of its records, and when it was opened.
#[derive(Debug)]
pub struct Open {
    pub writer: BatchWriter,
    pub bytes: u64,
    opened: Instant,
}

/// A closed batch of a topic's partition, to be numbered and sent.
#[derive(Debug)]
pub struct Full {
    pub topic: usize,
    pub partition: i32,
    pub open: Open,
}

/// One topic's partitions: their count and open batches, and where keyless rows go.
#[derive(Debug, Default)]
struct Partitions {
    open: Vec<Option<Open>>,
    sticky: Sticky,
}

/// The open batches of every topic (by index), and the closed ones not yet taken.
#[derive(Debug, Default)]
pub struct Accumulator {
    limits: Limits,
    topics: Vec<Partitions>,
    pub full: Vec<Full>,
    seed: u64,
    /// Acknowledged batches' buffers, for the batches opened next.
    pub spares: Spares,
}

/// How many batches' buffers (of `batch.size`) a producer keeps for its next batches.
const SPARE_BATCHES: usize = 16;

/// Why a record was refused (librdkafka's error name and text).
pub const TOO_LARGE: &str = "MSG_SIZE_TOO_LARGE: Broker: Message size too large";
pub const UNKNOWN_PARTITION: &str = "UNKNOWN_PARTITION: Local: Unknown partition";

impl Accumulator {
    pub fn new(limits: Limits, seed: u64) -> Self {
        Accumulator {
            limits,
            seed,
            spares: Spares::new(SPARE_BATCHES * limits.batch_size),
            ..Accumulator::default()
        }
    }

    /// Topic `topic` has `count` partitions (set before any of its rows is added).
    pub fn partitions(&mut self, topic: usize, count: i32) {
        if self.topics.len() <= topic {
            self.topics.resize_with(topic + 1, Partitions::default);
        }
        let open = &mut self.topics[topic].open;
        if open.len() < count.max(0) as usize {
            open.resize_with(count as usize, || None);
        }
    }

    /// Add a record of create time `timestamp` to topic `topic`'s partition `partition`, or
    /// the partitioner's when `None` (a batch it opens is written in a spare buffer if any);
    /// an error (librdkafka's) for a partition the topic does not have or a record larger than
    /// `message.max.bytes`.
    pub fn add(
        &mut self,
        topic: usize,
        partition: Option<i32>,
        timestamp: i64,
        (key, value): (Option<&[u8]>, Option<&[u8]>),
        headers: &[Header<'_>],
    ) -> Result<(), &'static str> {
        let limits = self.limits;
        let fields = BatchWriter::fields_size(key, value, headers);
        let size = BatchWriter::record_size(fields);
        if size > limits.max_record {
            return Err(TOO_LARGE);
        }
        let parts = &mut self.topics[topic];
        let count = parts.open.len() as i32;
        if count == 0 {
            return Err(UNKNOWN_PARTITION);
        }
        let full = |open: &Option<Open>| {
            open.as_ref().is_some_and(|o| {
                let w = &o.writer;
                w.count() >= limits.batch_records || w.size() + size > limits.batch_size
            })
        };
        let p = match (partition, key) {
            (Some(p), _) => p,
            (None, Some(key)) => partition_of_key(key, count),
            (None, None) => {
                // Java's sticky partitioner: a full batch moves keyless rows on.
                let p = parts.sticky.current(count, self.seed);
                if full(&parts.open[p as usize]) {
                    parts.sticky.next(count);
                }
                parts.sticky.current(count, self.seed)
            }
        };
        if !(0..count).contains(&p) {
            return Err(UNKNOWN_PARTITION);
        }
        let slot = &mut parts.open[p as usize];
        if full(slot) {
            let open = slot.take().expect("full");
            self.full.push(Full {
                topic,
                partition: p,
                open,
            });
        }
        let slot = &mut parts.open[p as usize];
        let open = slot.get_or_insert_with(|| Open {
            writer: match self.spares.take() {
                Some(buffer) => BatchWriter::within(buffer, timestamp),
                None => BatchWriter::new(timestamp, limits.batch_size),
            },
            bytes: 0,
            opened: Instant::now(),
        });
        open.writer
            .push_sized(timestamp, (key, value), headers, fields);
        let kv = key.map_or(0, <[u8]>::len) + value.map_or(0, <[u8]>::len);
        open.bytes += kv as u64;
        Ok(())
    }

    /// The topics (by index) with a batch open.
    pub fn open_topics(&self) -> impl Iterator<Item = usize> + '_ {
        let open = |(i, t): (usize, &Partitions)| t.open.iter().any(Option::is_some).then_some(i);
        self.topics.iter().enumerate().filter_map(open)
    }

    /// Close every open batch (each queued in [`Accumulator::full`]).
    pub fn close_all(&mut self) {
        self.close_older(Duration::ZERO);
    }

    /// Close the batches open for `linger` or longer (`linger.ms`: they are sent, not kept
    /// until full).
    pub fn close_older(&mut self, linger: Duration) {
        for (topic, parts) in self.topics.iter_mut().enumerate() {
            for (p, slot) in parts.open.iter_mut().enumerate() {
                if slot.as_ref().is_none_or(|o| o.opened.elapsed() < linger) {
                    continue;
                }
                if let Some(open) = slot.take() {
                    self.full.push(Full {
                        topic,
                        partition: p as i32,
                        open,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An accumulator of topic 0 (`partitions` partitions) with the limits (`batch.size`,
    /// `batch.num.messages`, `message.max.bytes`) given.
    fn one_topic(limits: (usize, i32, usize), seed: u64, partitions: i32) -> Accumulator {
        let (batch_size, batch_records, max_record) = limits;
        let limits = Limits {
            batch_size,
            batch_records,
            max_record,
        };
        let mut acc = Accumulator::new(limits, seed);
        acc.partitions(0, partitions);
        acc
    }

    /// Every batch closed: (partition, records) of each, in the order they were closed.
    fn closed_all(acc: &mut Accumulator) -> Vec<(i32, i32)> {
        acc.close_all();
        acc.full
            .iter()
            .map(|f| (f.partition, f.open.writer.count()))
            .collect()
    }

    #[test]
    fn keyed_rows_go_where_java_puts_them_and_batches_close_at_their_limits() {
        let mut acc = one_topic((200, 3, 150), 0, 8);
        for key in ["21", "foobar", "21", "21", "21"] {
            acc.add(0, None, 5, (Some(key.as_bytes()), Some(b"v")), &[])
                .unwrap();
        }
        // "21" -> 4 (three records close the batch), "foobar" -> 6
        assert_eq!(acc.full.len(), 1);
        assert_eq!(
            (acc.full[0].partition, acc.full[0].open.writer.count()),
            (4, 3)
        );
        assert_eq!(acc.full[0].open.bytes, 9);
        let big = vec![0u8; 151];
        assert_eq!(acc.add(0, None, 5, (None, Some(&big)), &[]), Err(TOO_LARGE));
        assert_eq!(
            acc.add(0, Some(8), 5, (None, None), &[]),
            Err(UNKNOWN_PARTITION)
        );
        assert_eq!(closed_all(&mut acc), vec![(4, 3), (4, 1), (6, 1)]);
    }

    #[test]
    fn keyless_rows_stay_on_one_partition_until_its_batch_is_full() {
        let mut acc = one_topic((1_000, 2, 1_000), 1, 3);
        for _ in 0..5 {
            acc.add(0, None, 0, (None, Some(b"v")), &[]).unwrap();
        }
        assert_eq!(closed_all(&mut acc), vec![(0, 1), (1, 2), (2, 2)]);
    }

    #[test]
    fn batches_open_past_the_linger_are_closed_the_others_kept() {
        let mut acc = Accumulator::new(Limits::default(), 0);
        acc.partitions(0, 2);
        acc.add(0, Some(0), 0, (None, Some(b"a")), &[]).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        acc.add(0, Some(1), 0, (None, Some(b"b")), &[]).unwrap();
        acc.close_older(Duration::from_millis(10));
        let closed: Vec<i32> = acc.full.iter().map(|f| f.partition).collect();
        assert_eq!(closed, vec![0]);
        acc.close_all();
        assert_eq!(acc.full.len(), 2);
    }

    /// Step 1 of issue 44: 1,000,000 rows (a ~10-byte string key, a 100-byte value) from Arrow
    /// batches of 10,000 rows into sealed batches of 8 partitions. `cargo test --release --
    /// --ignored --nocapture cost_per_record`.
    #[test]
    #[ignore]
    fn cost_per_record() {
        use crate::from_arrow::Rows;
        use arrow_array::{BinaryArray, RecordBatch, StringArray};
        use std::sync::Arc;
        let value = [b'x'; 100];
        let arrow: Vec<RecordBatch> = (0..100)
            .map(|b| {
                let keys: Vec<String> = (0..10_000)
                    .map(|i| format!("key{:07}", b * 10_000 + i))
                    .collect();
                let values: Vec<&[u8]> = (0..10_000).map(|_| &value[..]).collect();
                RecordBatch::try_from_iter([
                    ("key", Arc::new(StringArray::from(keys)) as _),
                    ("value", Arc::new(BinaryArray::from(values)) as _),
                ])
                .unwrap()
            })
            .collect();
        // CPU time of this thread (ns): the machine is shared, wall time is not the cost.
        let cpu = || {
            let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
            s.split_whitespace().next().unwrap().parse::<u64>().unwrap()
        };
        let mut acc = Accumulator::new(Limits::default(), 0);
        acc.partitions(0, 8);
        for round in 0..5 {
            let started = std::time::Instant::now();
            let cpu_started = cpu();
            let mut sealed = 0usize;
            let mut seq = 0i32;
            for batch in &arrow {
                let rows = Rows::of(batch).unwrap();
                for i in 0..rows.len {
                    acc.add(
                        0,
                        rows.partition(i),
                        1_700_000_000_000,
                        (rows.key(i), rows.value(i)),
                        &[],
                    )
                    .unwrap();
                }
                acc.close_all();
                for full in acc.full.drain(..) {
                    let n = full.open.writer.count();
                    let batch = full.open.writer.seal(1, 0, seq, false);
                    sealed += batch.len();
                    seq += n;
                    acc.spares.keep(batch); // acknowledged at once: written in again
                }
            }
            let ns = started.elapsed().as_nanos() as f64 / 1e6;
            let cpu_ns = (cpu() - cpu_started) as f64 / 1e6;
            println!(
                "round {round}: {cpu_ns:.1} ns/record CPU, {ns:.1} wall, {sealed} bytes sealed"
            );
        }
    }
}
