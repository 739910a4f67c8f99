//! Read exact offset ranges of one cluster into Arrow record batches.
//!
//! The same semantics as the Python reader (`pyspark_dynamic_kafka.source.executor.read`): reading stops
//! at each range's end even when more data exists, and does not hang when a range's last offsets
//! never arrive as records (transaction markers, compaction gaps, aborted records under
//! read_committed): a partition is done when a record at or past its end arrives, when the
//! consumer reports partition EOF at or past the end, or when its position is at or past the end.
//! Records that are gone (offset out of range; the topic or partition no longer exists) fail
//! with a data-loss error or, with `fail_on_data_loss` off, are skipped with a warning: reading
//! resumes at the earliest offset still available.

use std::time::{Duration, Instant};

use arrow_array::RecordBatch;

pub mod direct;
mod librdkafka;
mod loss;
mod position;

use crate::ffi::{Consumer, Message};
use crate::into_arrow::BatchBuilder;
pub use direct::config::DirectConfig;
pub use direct::Brokers;
use direct::{Direct, Stop};
use position::Pending;

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
    /// The direct fetch path while it reads; `None` once librdkafka's consumer does.
    direct: Option<Direct>,
    /// Why librdkafka's consumer reads (or read part of) the ranges; `None` while direct.
    fallback: Option<String>,
    /// Why the direct path sent requests again on new connections, in order.
    reconnects: Vec<String>,
}

impl ClusterReader {
    /// A reader of `ranges`; `direct` is the direct fetch path's configuration, or why the
    /// cluster is read with librdkafka's consumer; `brokers` are its connections to reuse.
    pub fn new(
        consumer: Consumer,
        ranges: Vec<Range>,
        settings: Settings,
        direct: Result<DirectConfig, String>,
        brokers: Brokers,
    ) -> Self {
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
        // Nothing the direct path waits for may take longer than the poll timeout.
        let poll_timeout = Duration::from_millis(settings.poll_timeout_ms.max(1));
        ClusterReader {
            consumer,
            settings,
            pending,
            builder,
            warnings: Vec::new(),
            last_progress: Instant::now(),
            started: false,
            messages: Vec::with_capacity(librdkafka::CONSUME_BATCH),
            fallback: direct.as_ref().err().cloned(),
            reconnects: Vec::new(),
            direct: direct.ok().map(|mut config| {
                config.connection.request_timeout =
                    config.connection.request_timeout.min(poll_timeout);
                Direct::new(config, brokers)
            }),
        }
    }

    /// `None` while the direct fetch path reads; else why librdkafka's consumer reads.
    pub fn fallback(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// Why the direct path sent requests again on new connections (one line each: the broker,
    /// and why its connection was given up).
    pub fn reconnects(&self) -> &[String] {
        &self.reconnects
    }

    /// Data-loss warnings (with `fail_on_data_loss` off) since the last call.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// The next batch, or `None` when every range is read.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>, ReadFailure> {
        if let Some(mut direct) = self.direct.take() {
            let read = self.read_direct(&mut direct);
            self.reconnects.extend(direct.take_reconnects());
            match read {
                Ok(Some(batch)) => {
                    self.direct = Some(direct);
                    return Ok(Some(batch));
                }
                Ok(None) => {
                    self.direct = Some(direct);
                    return self.finish();
                }
                Err(Stop::Failed(failure)) => return Err(failure),
                Err(Stop::Fallback(reason)) => {
                    // librdkafka's consumer goes on from where the direct path stopped.
                    self.fallback = Some(reason);
                    self.last_progress = Instant::now();
                }
            }
        }
        self.read_librdkafka()
    }

    /// What the builder still holds, or `None` when it is empty.
    fn finish(&mut self) -> Result<Option<RecordBatch>, ReadFailure> {
        if self.builder.is_empty() {
            Ok(None)
        } else {
            self.flush().map(Some)
        }
    }

    /// Leave the consumer with no assignment and hand it back (to a pool, or to be closed),
    /// with the direct path's connections while it still reads (none after a fallback).
    pub fn into_consumer(self) -> (Consumer, Brokers) {
        let _ = self.consumer.unassign();
        let brokers = self.direct.map(Direct::into_brokers).unwrap_or_default();
        (self.consumer, brokers)
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
}
