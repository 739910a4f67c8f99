//! Read exact offset ranges of one cluster into Arrow record batches.
//!
//! The same semantics as the Python reader (`pyspark_dynamic_kafka.source.read`): reading stops
//! at each range's end even when more data exists, and does not hang when a range's last offsets
//! never arrive as records (transaction markers, compaction gaps, aborted records under
//! read_committed): a partition is done when a record at or past its end arrives, when the
//! consumer reports partition EOF at or past the end, or when its position is at or past the end.
//! Records that are gone (offset out of range; the topic or partition no longer exists) fail
//! with a data-loss error or, with `fail_on_data_loss` off, are skipped with a warning: reading
//! resumes at the earliest offset still available.

use std::time::{Duration, Instant};

use arrow_array::RecordBatch;

use crate::batch::{BatchBuilder, Record};
use crate::ffi::{Consumer, Event, Message};

const CONSUME_BATCH: usize = 10_000;
const CONSUME_TIMEOUT_MS: i32 = 200;
const WATERMARK_TIMEOUT_MS: i32 = 10_000;

/// Records [start, end) of one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    pub topic: String,
    pub partition: i32,
    pub start: i64,
    pub end: i64,
}

/// What a task carries for one cluster, besides its ranges.
#[derive(Debug, Clone)]
pub struct Settings {
    pub cluster: String,
    pub poll_timeout_ms: u64,
    pub include_headers: bool,
    pub fail_on_data_loss: bool,
    pub max_rows: usize,
    pub max_bytes: usize,
}

/// Why reading failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadFailure {
    /// Records of a range are gone and `fail_on_data_loss` is on.
    DataLoss(String),
    /// Anything else: no progress, a client error.
    Read(String),
}

struct Pending {
    range: Range,
    next: i64,
    /// The offset of the partition-EOF event seen last, unless a record came after it.
    eof: Option<i64>,
}

impl Pending {
    /// The consumer's position as it really is. librdkafka 2.12.1's batch consume
    /// (`rd_kafka_q_serve_rkmessages`) also moves a partition's position past the offset of an
    /// EOF *event*, to EOF + 1, though the record at EOF was not returned yet (checked here: 3
    /// records, EOF at 3, position 4; confluent-kafka's librdkafka reports 3). Trusting it would
    /// end a range one record early.
    fn position(&self, reported: i64) -> i64 {
        match self.eof {
            Some(eof) if reported == eof + 1 => eof,
            _ => reported,
        }
    }
}

/// Reads the ranges of one cluster; [`ClusterReader::next_batch`] yields bounded batches.
pub struct ClusterReader {
    consumer: Consumer,
    settings: Settings,
    /// Ranges still being read, in the caller's order.
    pending: Vec<Pending>,
    builder: BatchBuilder,
    warnings: Vec<String>,
    last_progress: Instant,
    started: bool,
    messages: Vec<Message>,
}

impl ClusterReader {
    pub fn new(consumer: Consumer, ranges: Vec<Range>, settings: Settings) -> Self {
        let builder = BatchBuilder::new(
            &settings.cluster,
            settings.include_headers,
            settings.max_rows,
            settings.max_bytes,
        );
        let pending = ranges
            .into_iter()
            .filter(|r| r.end > r.start)
            .map(|range| Pending {
                next: range.start,
                range,
                eof: None,
            })
            .collect();
        ClusterReader {
            consumer,
            settings,
            pending,
            builder,
            warnings: Vec::new(),
            last_progress: Instant::now(),
            started: false,
            messages: Vec::with_capacity(CONSUME_BATCH),
        }
    }

    /// Data-loss warnings (with `fail_on_data_loss` off) since the last call.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// The next batch, or `None` when every range is read.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>, ReadFailure> {
        if !self.started {
            self.started = true;
            self.start()?;
        }
        let poll_timeout = Duration::from_millis(self.settings.poll_timeout_ms);
        while !self.pending.is_empty() {
            let mut messages = std::mem::take(&mut self.messages);
            let consumed = self
                .consumer
                .consume(CONSUME_BATCH, CONSUME_TIMEOUT_MS, &mut messages);
            if let Err(e) = consumed {
                self.messages = messages;
                return Err(self.failed(&e));
            }
            if !messages.is_empty() {
                self.last_progress = Instant::now();
                let accepted = self.accept(&messages);
                messages.clear();
                self.messages = messages;
                accepted?;
                if self.builder.due() {
                    return self.flush().map(Some);
                }
                continue;
            }
            self.messages = messages;
            self.finish_by_position()?;
            if !self.pending.is_empty() && self.last_progress.elapsed() > poll_timeout {
                return Err(ReadFailure::Read(self.stuck_message()));
            }
        }
        if self.builder.is_empty() {
            Ok(None)
        } else {
            self.flush().map(Some)
        }
    }

    /// Leave the consumer with no assignment and hand it back (to a pool, or to be closed).
    pub fn into_consumer(self) -> Consumer {
        let _ = self.consumer.unassign();
        self.consumer
    }

    fn start(&mut self) -> Result<(), ReadFailure> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let assignment: Vec<(&str, i32, i64)> = self
            .pending
            .iter()
            .map(|p| (p.range.topic.as_str(), p.range.partition, p.range.start))
            .collect();
        let parts: Vec<(&str, i32)> = assignment.iter().map(|(t, p, _)| (*t, *p)).collect();
        // librdkafka keeps a partition's pause flag across unassign/assign: a pooled consumer
        // that paused this partition at the end of an earlier range would never fetch it again.
        // Resumed before the assignment, as the Python reader does: a resume right after it
        // bumps the fetch version under the broker thread, which may then idle for its 1 s I/O
        // timeout before fetching (a partition not known yet is skipped by the resume).
        let assigned = self
            .consumer
            .resume(&parts)
            .and_then(|()| self.consumer.assign(&assignment));
        assigned.map_err(|e| self.failed(&e))
    }

    fn failed(&self, what: &str) -> ReadFailure {
        ReadFailure::Read(format!(
            "Reading from cluster '{}' failed: {what}",
            self.settings.cluster
        ))
    }

    fn flush(&mut self) -> Result<RecordBatch, ReadFailure> {
        self.builder
            .flush()
            .map_err(|e| ReadFailure::Read(format!("building an Arrow batch failed: {e}")))
    }

    fn find(&self, topic: &str, partition: i32) -> Option<usize> {
        self.pending
            .iter()
            .position(|p| p.range.partition == partition && p.range.topic == topic)
    }

    fn accept(&mut self, messages: &[Message]) -> Result<(), ReadFailure> {
        // The last partition seen: records come in runs of one partition.
        let mut last: Option<(i32, usize)> = None;
        for message in messages {
            if let Some(event) = message.event() {
                last = None;
                self.event(message, event)?;
                continue;
            }
            let partition = message.partition();
            let idx = match last {
                Some((p, idx))
                    if p == partition && self.pending[idx].range.topic == message.topic() =>
                {
                    Some(idx)
                }
                _ => self.find(message.topic(), partition),
            };
            let Some(idx) = idx else {
                last = None;
                continue; // fetched past the end of a finished range
            };
            let offset = message.offset();
            let end = self.pending[idx].range.end;
            if offset < end {
                self.builder.add(&Record {
                    key: message.key(),
                    value: message.value(),
                    topic: message.topic(),
                    partition,
                    offset,
                    timestamp: message.timestamp(),
                    headers: if self.settings.include_headers {
                        message.headers()
                    } else {
                        None
                    },
                });
                self.pending[idx].next = offset + 1;
            }
            self.pending[idx].eof = None;
            if offset + 1 >= end {
                self.done(idx)?;
                last = None;
            } else {
                last = Some((partition, idx));
            }
        }
        Ok(())
    }

    fn event(&mut self, message: &Message, event: Event) -> Result<(), ReadFailure> {
        let idx = self.find(message.topic(), message.partition());
        match (event, idx) {
            (Event::PartitionEof, Some(idx)) => {
                self.pending[idx].eof = Some(message.offset());
                if message.offset() >= self.pending[idx].range.end {
                    self.done(idx)?;
                }
                Ok(())
            }
            (Event::PartitionEof, None) => Ok(()),
            (Event::OutOfRange, Some(idx)) => self.out_of_range(idx, &message.error_text()),
            (Event::Gone, Some(idx)) => {
                self.lost(
                    idx,
                    "the topic or partition no longer exists",
                    &message.error_text(),
                )?;
                self.done(idx)
            }
            _ => Err(self.failed(&message.error_text())),
        }
    }

    fn done(&mut self, idx: usize) -> Result<(), ReadFailure> {
        let p = self.pending.remove(idx);
        self.consumer
            .pause(&[(p.range.topic.as_str(), p.range.partition)])
            .map_err(|e| self.failed(&e))
    }

    fn lost(&mut self, idx: usize, what: &str, error: &str) -> Result<(), ReadFailure> {
        let p = &self.pending[idx];
        let r = &p.range;
        let place = format!("{}/{}/{}", self.settings.cluster, r.topic, r.partition);
        let span = format!("[{}, {})", p.next, r.end);
        if self.settings.fail_on_data_loss {
            return Err(ReadFailure::DataLoss(format!(
                "Data loss: offsets {span} of {place} cannot be read: {what} ({error}). \
                 Set failOnDataLoss=false to skip records that are gone."
            )));
        }
        self.warnings.push(format!(
            "Data loss (failOnDataLoss=false): offsets {span} of {place}: {what}"
        ));
        Ok(())
    }

    fn out_of_range(&mut self, idx: usize, error: &str) -> Result<(), ReadFailure> {
        self.lost(
            idx,
            "they are no longer available (retention, or the topic was recreated)",
            error,
        )?;
        let (topic, partition) = {
            let r = &self.pending[idx].range;
            (r.topic.clone(), r.partition)
        };
        let (low, high) = self
            .consumer
            .watermarks(&topic, partition, WATERMARK_TIMEOUT_MS)
            .map_err(|e| self.failed(&e))?;
        let p = &mut self.pending[idx];
        let resume = p.next.max(low);
        if resume >= p.range.end.min(high) {
            return self.done(idx);
        }
        p.next = resume;
        // With auto.offset.reset=error librdkafka stops fetching the partition and refuses to
        // seek it; assigning it again restarts its fetch and leaves the others as they are.
        self.consumer
            .incremental_unassign(&[(topic.as_str(), partition)])
            .and_then(|()| {
                self.consumer
                    .incremental_assign(&[(topic.as_str(), partition, resume)])
            })
            .map_err(|e| self.failed(&e))
    }

    fn pending_parts(&self) -> Vec<(&str, i32)> {
        self.pending
            .iter()
            .map(|p| (p.range.topic.as_str(), p.range.partition))
            .collect()
    }

    fn finish_by_position(&mut self) -> Result<(), ReadFailure> {
        let positions = self
            .consumer
            .positions(&self.pending_parts())
            .map_err(|e| self.failed(&e))?;
        let done: Vec<usize> = positions
            .iter()
            .enumerate()
            .filter(|(i, pos)| self.pending[*i].position(**pos) >= self.pending[*i].range.end)
            .map(|(i, _)| i)
            .collect();
        for idx in done.into_iter().rev() {
            self.done(idx)?;
        }
        Ok(())
    }

    fn stuck_message(&self) -> String {
        let positions = self
            .consumer
            .positions(&self.pending_parts())
            .unwrap_or_else(|_| vec![-1001; self.pending.len()]);
        stuck_message(
            &self.settings.cluster,
            self.settings.poll_timeout_ms,
            self.pending
                .iter()
                .zip(positions)
                .map(|(p, pos)| (&p.range, p.position(pos))),
        )
    }
}

fn stuck_message<'a>(
    cluster: &str,
    poll_timeout_ms: u64,
    stuck: impl Iterator<Item = (&'a Range, i64)>,
) -> String {
    let parts: Vec<String> = stuck
        .map(|(r, pos)| {
            format!(
                "{cluster}/{}/{} range [{}, {}) stuck at position {pos}",
                r.topic, r.partition, r.start, r.end
            )
        })
        .collect();
    format!(
        "No progress for kafkaConsumer.pollTimeoutMs={poll_timeout_ms} ms: {}. \
         The cluster may be unreachable or the records may have been deleted.",
        parts.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_one_past_an_eof_event_is_the_eof() {
        let range = Range {
            topic: "t".into(),
            partition: 0,
            start: 0,
            end: 10,
        };
        let mut p = Pending {
            range,
            next: 3,
            eof: None,
        };
        assert_eq!(p.position(4), 4);
        p.eof = Some(3);
        assert_eq!(p.position(4), 3);
        assert_eq!(p.position(6), 6); // control records moved it further
    }

    #[test]
    fn stuck_message_names_each_range_and_position() {
        let r = Range {
            topic: "orders".into(),
            partition: 2,
            start: 5,
            end: 9,
        };
        let s = Range {
            topic: "pay".into(),
            partition: 0,
            start: 0,
            end: 1,
        };
        let text = stuck_message("east", 1500, [(&r, 7), (&s, -1001)].into_iter());
        assert_eq!(
            text,
            "No progress for kafkaConsumer.pollTimeoutMs=1500 ms: east/orders/2 range [5, 9) \
             stuck at position 7; east/pay/0 range [0, 1) stuck at position -1001. The cluster \
             may be unreachable or the records may have been deleted."
        );
    }
}
