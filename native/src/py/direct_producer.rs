//! The sink's `DirectProducer`: pyarrow record batches in, Produce requests out by the core's
//! own idempotent producer ([`crate::write::direct`]), deliveries counted per topic from the
//! answers (no Python object, and no report, per record); with a `transactional.id`, its
//! transactions (exactlyOnce): [`crate::write::direct::transaction`].

use std::collections::HashMap;
use std::time::Duration;

use arrow_array::RecordBatch;
use arrow_pyarrow::PyArrowType;
use pyo3::prelude::*;

use super::open_writer::{raise, stamp_of, OpenWriter};
use crate::write::direct::config::ProduceConfig;
use crate::write::direct::DirectWriter;

/// Produces the sink's columns of pyarrow record batches to one cluster over the direct
/// produce path.
///
/// Parameters: the full producer configuration (as librdkafka's producer would take it), and
/// the dedupe stamp (sink id, batch, Spark partition) whose headers every record carries, or
/// None.
#[pyclass(module = "pyspark_dynamic_kafka_core._core")]
pub struct DirectProducer {
    inner: OpenWriter<DirectWriter>,
}

/// The shortest pause between two looks for batches open past `linger.ms`.
const LINGER_TICK: Duration = Duration::from_millis(10);

#[pymethods]
impl DirectProducer {
    #[new]
    #[pyo3(signature = (config, stamp=None))]
    fn new(config: Vec<(String, String)>, stamp: Option<(String, String, i32)>) -> PyResult<Self> {
        // librdkafka's check first: a property it refuses is refused here too, in its words.
        crate::ffi::check_config(&config).map_err(|e| raise((None, e)))?;
        let config = ProduceConfig::from_config(&config).map_err(|e| raise((None, e)))?;
        let writer = DirectWriter::new(config, stamp_of(stamp));
        let tick = writer.linger_time().max(LINGER_TICK);
        let inner = OpenWriter::new(writer);
        // Every linger.ms, the batches open past it shipped while the caller hands over no rows
        // (Spark's iterator waiting for its source), as librdkafka's background thread ships them.
        inner
            .every("dynamic-kafka-linger", tick, DirectWriter::linger)
            .map_err(|e| raise((None, format!("cannot start the producer's thread: {e}"))))?;
        Ok(DirectProducer { inner })
    }

    /// Write every row of `batch` into record batches and send the full ones: to `topic` when
    /// given, else to the topic that `topics` maps the row's `topic` value to (None: a null
    /// value). Does nothing once the producer failed.
    #[pyo3(signature = (batch, topic=None, topics=Vec::new()))]
    fn send(
        &self,
        py: Python<'_>,
        batch: PyArrowType<RecordBatch>,
        topic: Option<String>,
        topics: Vec<(Option<String>, String)>,
    ) -> PyResult<()> {
        self.inner.with(py, |w| {
            w.send(&batch.0, topic.as_deref(), &topics).map_err(raise)
        })
    }

    /// Whether the producer failed.
    fn failed(&self, py: Python<'_>) -> PyResult<bool> {
        self.inner.with(py, |w| Ok(w.failed()))
    }

    /// Send everything and wait up to `timeout_ms` for the answers; the records still waiting.
    fn flush(&self, py: Python<'_>, timeout_ms: u64) -> PyResult<usize> {
        self.inner.with(py, |w| w.flush(timeout_ms).map_err(raise))
    }

    /// (records per topic, key+value bytes per topic, the first failure as (topic, reason) or
    /// None) acknowledged so far.
    #[allow(clippy::type_complexity)]
    fn deliveries(
        &self,
        py: Python<'_>,
    ) -> PyResult<(
        HashMap<String, u64>,
        HashMap<String, u64>,
        Option<(String, String)>,
    )> {
        self.inner.with(py, |w| Ok(w.deliveries()))
    }

    /// How many times the producer recovered from a retriable error or a lost connection
    /// (every batch not acknowledged then sent again after a metadata lookup): for tests and
    /// diagnostics.
    fn retries(&self, py: Python<'_>) -> PyResult<u64> {
        self.inner.with(py, |w| Ok(w.retries()))
    }

    /// Fence older producers of the configured `transactional.id` and end their transaction.
    fn init_transactions(&self, py: Python<'_>, timeout_ms: u64) -> PyResult<()> {
        self.inner
            .with(py, |w| w.init_transactions(timeout_ms).map_err(raise))
    }

    fn begin_transaction(&self, py: Python<'_>) -> PyResult<()> {
        self.inner
            .with(py, |w| w.begin_transaction().map_err(raise))
    }

    /// Commit offset `offset` of (`topic`, `partition`) with `metadata` for `group` inside the
    /// open transaction. The metadata is sent with a NUL byte after it, as librdkafka's
    /// producer sends it (its readers take it as a C string): both writers' markers are the
    /// same bytes.
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
        let mut bytes = metadata.into_bytes();
        bytes.push(0);
        self.inner.with(py, |w| {
            w.send_offset(&group, (&topic, partition, offset), &bytes, timeout_ms)
                .map_err(raise)
        })
    }

    /// Send every batch, wait for them, then commit the open transaction.
    fn commit_transaction(&self, py: Python<'_>, timeout_ms: u64) -> PyResult<()> {
        self.inner
            .with(py, |w| w.commit_transaction(timeout_ms).map_err(raise))
    }

    /// Abort the open transaction (batches not sent are dropped).
    fn abort_transaction(&self, py: Python<'_>, timeout_ms: u64) -> PyResult<()> {
        self.inner
            .with(py, |w| w.abort_transaction(timeout_ms).map_err(raise))
    }

    /// Drop the producer and its connections (records not yet acknowledged are dropped).
    fn close(&self, py: Python<'_>) {
        self.inner.close(py);
    }
}
