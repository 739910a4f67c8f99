//! Reading ranges with librdkafka's consumer: what the direct path does not serve, and the rest
//! of the ranges after it hands over. Records arrive as librdkafka's messages, events (partition
//! EOF, an offset out of range, a partition gone) between them; a range ends at its last record,
//! a record past it, partition EOF at or past its end, or the consumer's position.

use std::time::{Duration, Instant};

use arrow_array::RecordBatch;

use super::{ClusterReader, ReadFailure};
use crate::ffi::{Event, Message};
use crate::into_arrow::Record;

/// Messages taken from librdkafka at most per call, and how long a call waits for the first.
pub(super) const CONSUME_BATCH: usize = 10_000;
const CONSUME_TIMEOUT_MS: i32 = 200;

impl ClusterReader {
    /// The next due batch read with librdkafka's consumer (assigned at the first call, from
    /// where each range stands); `None` when every range is read.
    pub(super) fn read_librdkafka(&mut self) -> Result<Option<RecordBatch>, ReadFailure> {
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
        self.finish()
    }

    fn start(&mut self) -> Result<(), ReadFailure> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let assignment: Vec<(&str, i32, i64)> = self
            .pending
            .iter()
            .map(|p| (p.range.topic.as_str(), p.range.partition, p.next))
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

    fn accept(&mut self, messages: &[Message]) -> Result<(), ReadFailure> {
        // The last partition seen: records come in runs of one partition.
        let mut last: Option<(usize, i32, usize)> = None;
        // The last topic's handle and name: the name is looked up once per run, not per record.
        let mut topic: (usize, &str) = (0, "");
        for message in messages {
            if let Some(event) = message.event() {
                last = None;
                self.event(message, event)?;
                continue;
            }
            let partition = message.partition();
            let id = message.topic_id();
            if id != topic.0 || id == 0 {
                topic = (id, message.topic());
            }
            let idx = match last {
                Some((t, p, idx)) if t == id && p == partition => Some(idx),
                _ => self.find(topic.1, partition),
            };
            let Some(idx) = idx else {
                last = None;
                continue; // fetched past the end of a finished range
            };
            let offset = message.offset();
            let end = self.pending[idx].range.end;
            if offset < end {
                let added = self.builder.add(&Record {
                    key: message.key(),
                    value: message.value(),
                    topic: topic.1,
                    partition,
                    offset,
                    timestamp: message.timestamp(),
                    headers: if self.settings.include_headers {
                        message.headers()
                    } else {
                        None
                    },
                });
                added.map_err(|e| self.failed(&e))?;
                self.pending[idx].next = offset + 1;
            }
            self.pending[idx].eof = None;
            if offset + 1 >= end {
                self.done(idx)?;
                last = None;
            } else {
                last = Some((id, partition, idx));
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
                    None,
                )?;
                self.done(idx)
            }
            _ => Err(self.failed(&message.error_text())),
        }
    }

    pub(super) fn done(&mut self, idx: usize) -> Result<(), ReadFailure> {
        let p = self.pending.remove(idx);
        self.consumer
            .pause(&[(p.range.topic.as_str(), p.range.partition)])
            .map_err(|e| self.failed(&e))
    }
}
