//! The sink's produce loop, without pyo3: the rows of an Arrow record batch handed to
//! librdkafka one by one, each to its topic (fixed, or the `topic` column mapped), with the
//! dedupe stamp's headers when the sink asks for them; a full local queue is served, not failed.

pub mod batch_producer;
pub mod direct;

use std::collections::HashMap;

use arrow_array::RecordBatch;

use batch_producer::{BatchProducer, Deliveries, Destination, Marker};

use crate::ffi::{Outgoing, Producer, Sent};
use crate::from_arrow::Rows;

/// The dedupe headers' keys, in the order a record carries them (after its own headers).
pub(crate) const STAMP_KEYS: [&str; 4] = [
    "dynamic_kafka.sink",
    "dynamic_kafka.batch",
    "dynamic_kafka.partition",
    "dynamic_kafka.sequence",
];
/// How long a full local queue is served before a record is handed over again.
const QUEUE_FULL_POLL_MS: i32 = 100;
/// Rows between two looks at the delivery reports' first error.
const ERROR_CHECK_ROWS: usize = 1024;

pub struct Stamp {
    pub sink: String,
    pub batch: String,
    pub partition: String,
}

/// A producer of one cluster and the sequence its dedupe stamp has reached.
pub struct Writer {
    pub producer: Producer,
    pub stamp: Option<Stamp>,
    pub sequence: u64,
}

/// Why a batch was not (wholly) handed over: the topic concerned, if any, and the reason.
pub type Failure = (Option<String>, String);

/// How each row's topic is found: one topic for all, or the `topic` column's values mapped.
enum Topics {
    Fixed(usize),
    ByColumn {
        known: HashMap<String, usize>,
        null: Option<usize>,
    },
}

impl Writer {
    fn topics(&mut self, to: Destination<'_>) -> Result<Topics, Failure> {
        let mut index = |name: &str| {
            self.producer
                .topic(name)
                .map_err(|e| (Some(name.to_string()), e))
        };
        if let Some(name) = to.topic {
            return Ok(Topics::Fixed(index(name)?));
        }
        let (mut known, mut null) = (HashMap::new(), None);
        for (given, actual) in to.topics {
            let i = index(actual)?;
            match given {
                Some(g) => {
                    known.insert(g.clone(), i);
                }
                None => null = Some(i),
            }
        }
        Ok(Topics::ByColumn { known, null })
    }

    /// Hand every row of `batch` to librdkafka. Stops early when a delivery already failed;
    /// serves delivery reports.
    fn hand_over(&mut self, batch: &RecordBatch, to: Destination<'_>) -> Result<(), Failure> {
        let rows = Rows::of(batch).map_err(|e| (None, e))?;
        let topics = self.topics(to)?;
        let column = rows.topics();
        for i in 0..rows.len {
            if i % ERROR_CHECK_ROWS == ERROR_CHECK_ROWS - 1 && self.producer.failed() {
                break;
            }
            let topic = match &topics {
                Topics::Fixed(t) => *t,
                Topics::ByColumn { known, null, .. } => {
                    let given = column.and_then(|c| c.text(i));
                    let found = match given {
                        Some(g) => known.get(g).copied(),
                        None => *null,
                    };
                    found.ok_or_else(|| {
                        let g = given.map(str::to_string);
                        (g, "the row's topic was not mapped".to_string())
                    })?
                }
            };
            let sequence = self
                .stamp
                .as_ref()
                .map(|_| (self.sequence + i as u64).to_string());
            // no allocation for a row without headers
            let mut headers = Vec::new();
            rows.headers_of(i, &mut headers).map_err(|e| {
                let name = self.producer.topic_name(topic).to_string();
                (Some(name), e.to_string())
            })?;
            if let (Some(stamp), Some(sequence)) = (&self.stamp, &sequence) {
                headers.extend([
                    (STAMP_KEYS[0], Some(stamp.sink.as_bytes())),
                    (STAMP_KEYS[1], Some(stamp.batch.as_bytes())),
                    (STAMP_KEYS[2], Some(stamp.partition.as_bytes())),
                    (STAMP_KEYS[3], Some(sequence.as_bytes())),
                ]);
            }
            let record = Outgoing {
                topic,
                partition: rows.partition(i),
                key: rows.key(i),
                value: rows.value(i),
                headers: &headers,
            };
            loop {
                match self.producer.send(&record) {
                    Sent::Queued => break,
                    Sent::QueueFull => self.producer.poll(QUEUE_FULL_POLL_MS),
                    Sent::Failed(e) => {
                        let name = self.producer.topic_name(topic).to_string();
                        return Err((Some(name), e));
                    }
                }
            }
        }
        self.sequence += rows.len as u64;
        self.producer.poll(0);
        Ok(())
    }
}

/// librdkafka's timeouts are `int` milliseconds.
fn millis(timeout_ms: u64) -> i32 {
    timeout_ms.min(i32::MAX as u64) as i32
}

fn unnamed(why: String) -> Failure {
    (None, why)
}

impl BatchProducer for Writer {
    fn send(&mut self, batch: &RecordBatch, to: Destination<'_>) -> Result<(), Failure> {
        self.hand_over(batch, to)
    }

    fn failed(&self) -> bool {
        self.producer.failed()
    }

    fn flush(&mut self, timeout_ms: u64) -> Result<usize, Failure> {
        Ok(self.producer.flush(millis(timeout_ms)))
    }

    fn deliveries(&self) -> Deliveries {
        let delivered = self.producer.delivered();
        let name = |i: usize| self.producer.topic_name(i).to_string();
        let mut rows = HashMap::new();
        let mut bytes = HashMap::new();
        for (i, (n, b)) in delivered.rows.iter().zip(&delivered.bytes).enumerate() {
            if *n > 0 {
                rows.insert(name(i), *n);
                bytes.insert(name(i), *b);
            }
        }
        let error = delivered.error.map(|(i, text)| (name(i), text));
        (rows, bytes, error)
    }

    /// librdkafka retries inside; not counted here.
    fn retries(&self) -> u64 {
        0
    }

    fn init_transactions(&mut self, timeout_ms: u64) -> Result<(), Failure> {
        let producer = &self.producer;
        producer
            .init_transactions(millis(timeout_ms))
            .map_err(unnamed)
    }

    fn begin_transaction(&mut self) -> Result<(), Failure> {
        self.producer.begin_transaction().map_err(unnamed)
    }

    fn send_offset(&mut self, marker: Marker<'_>, timeout_ms: u64) -> Result<(), Failure> {
        let place = (marker.topic, marker.partition, marker.offset);
        let (group, metadata) = (marker.group, marker.metadata);
        let producer = &self.producer;
        producer
            .send_offset(group, place, metadata, millis(timeout_ms))
            .map_err(unnamed)
    }

    fn commit_transaction(&mut self, timeout_ms: u64) -> Result<(), Failure> {
        let producer = &self.producer;
        producer
            .commit_transaction(millis(timeout_ms))
            .map_err(unnamed)
    }

    fn abort_transaction(&mut self, timeout_ms: u64) -> Result<(), Failure> {
        let producer = &self.producer;
        producer
            .abort_transaction(millis(timeout_ms))
            .map_err(unnamed)
    }
}
