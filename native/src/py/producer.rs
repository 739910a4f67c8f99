//! The sink's `Producer`: pyarrow record batches in, records to librdkafka ([`crate::write`]),
//! deliveries counted in Rust (no Python object per record).

use std::collections::HashMap;

use arrow_array::RecordBatch;
use arrow_pyarrow::PyArrowType;
use pyo3::prelude::*;

use super::open_writer::{raise, stamp_of, OpenWriter};
use crate::ffi::Producer as RdProducer;
use crate::write::Writer;

/// Produces the sink's columns of pyarrow record batches to one cluster.
///
/// Parameters: the full librdkafka producer configuration, and the dedupe stamp (sink id, batch,
/// Spark partition) whose headers every record carries, or None.
#[pyclass(module = "pyspark_dynamic_kafka_core._core")]
pub struct Producer {
    inner: OpenWriter<Writer>,
}

fn millis(timeout_ms: u64) -> i32 {
    timeout_ms.min(i32::MAX as u64) as i32
}

#[pymethods]
impl Producer {
    #[new]
    #[pyo3(signature = (config, stamp=None))]
    fn new(config: Vec<(String, String)>, stamp: Option<(String, String, i32)>) -> PyResult<Self> {
        let producer = RdProducer::new(&config).map_err(|e| raise((None, e)))?;
        Ok(Producer {
            inner: OpenWriter::new(Writer {
                producer,
                stamp: stamp_of(stamp),
                sequence: 0,
            }),
        })
    }

    /// Hand every row of `batch` to librdkafka: to `topic` when given, else to the topic that
    /// `topics` maps the row's `topic` value to (None: a null value). Stops early when a delivery
    /// already failed; serves delivery reports.
    #[pyo3(signature = (batch, topic=None, topics=Vec::new()))]
    fn send(
        &self,
        py: Python<'_>,
        batch: PyArrowType<RecordBatch>,
        topic: Option<String>,
        topics: Vec<(Option<String>, String)>,
    ) -> PyResult<()> {
        self.inner.with(py, |state| {
            state
                .send(&batch.0, topic.as_deref(), &topics)
                .map_err(raise)
        })
    }

    /// Whether a delivery report failed.
    fn failed(&self, py: Python<'_>) -> PyResult<bool> {
        self.inner.with(py, |state| Ok(state.producer.failed()))
    }

    /// Wait up to `timeout_ms` for the acknowledgements; the number of records still waiting.
    fn flush(&self, py: Python<'_>, timeout_ms: u64) -> PyResult<usize> {
        self.inner
            .with(py, |state| Ok(state.producer.flush(millis(timeout_ms))))
    }

    /// (records per topic, key+value bytes per topic, the first failure as (topic, reason) or
    /// None) of the delivery reports so far.
    #[allow(clippy::type_complexity)]
    fn deliveries(
        &self,
        py: Python<'_>,
    ) -> PyResult<(
        HashMap<String, u64>,
        HashMap<String, u64>,
        Option<(String, String)>,
    )> {
        self.inner.with(py, |state| {
            let delivered = state.producer.delivered();
            let name = |i: usize| state.producer.topic_name(i).to_string();
            let mut rows = HashMap::new();
            let mut bytes = HashMap::new();
            for (i, (n, b)) in delivered.rows.iter().zip(&delivered.bytes).enumerate() {
                if *n > 0 {
                    rows.insert(name(i), *n);
                    bytes.insert(name(i), *b);
                }
            }
            let error = delivered.error.map(|(i, text)| (name(i), text));
            Ok((rows, bytes, error))
        })
    }

    /// Fence older producers of the configured `transactional.id` and end their transaction.
    fn init_transactions(&self, py: Python<'_>, timeout_ms: u64) -> PyResult<()> {
        self.inner.with(py, |s| {
            s.producer
                .init_transactions(millis(timeout_ms))
                .map_err(|e| raise((None, e)))
        })
    }

    fn begin_transaction(&self, py: Python<'_>) -> PyResult<()> {
        self.inner.with(py, |s| {
            s.producer.begin_transaction().map_err(|e| raise((None, e)))
        })
    }

    /// Commit offset `offset` of (`topic`, `partition`) with `metadata` for `group` inside the
    /// open transaction.
    #[allow(clippy::too_many_arguments)]
    fn send_offset(
        &self,
        py: Python<'_>,
        group: String,
        topic: String,
        partition: i32,
        offset: i64,
        metadata: String,
        timeout_ms: u64,
    ) -> PyResult<()> {
        self.inner.with(py, |s| {
            s.producer
                .send_offset(
                    &group,
                    (&topic, partition, offset),
                    &metadata,
                    millis(timeout_ms),
                )
                .map_err(|e| raise((None, e)))
        })
    }

    fn commit_transaction(&self, py: Python<'_>, timeout_ms: u64) -> PyResult<()> {
        self.inner.with(py, |s| {
            s.producer
                .commit_transaction(millis(timeout_ms))
                .map_err(|e| raise((None, e)))
        })
    }

    fn abort_transaction(&self, py: Python<'_>, timeout_ms: u64) -> PyResult<()> {
        self.inner.with(py, |s| {
            s.producer
                .abort_transaction(millis(timeout_ms))
                .map_err(|e| raise((None, e)))
        })
    }

    /// Destroy the producer without waiting (records not yet acknowledged are dropped).
    fn close(&self, py: Python<'_>) {
        self.inner.close(py);
    }
}
