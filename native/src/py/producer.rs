//! The sink's `Producer`: pyarrow record batches in, records to librdkafka ([`crate::write`]),
//! deliveries counted in Rust (no Python object per record).

use std::collections::HashMap;
use std::sync::Mutex;

use arrow_array::RecordBatch;
use arrow_pyarrow::PyArrowType;
use pyo3::prelude::*;

use super::errors::WriteFailure;
use super::relock;
use crate::ffi::Producer as RdProducer;
use crate::write::{Failure, Stamp, Writer};

/// Produces the sink's columns of pyarrow record batches to one cluster.
///
/// Parameters: the full librdkafka producer configuration, and the dedupe stamp (sink id, batch,
/// Spark partition) whose headers every record carries, or None.
#[pyclass(module = "pyspark_dynamic_kafka_core._core")]
pub struct Producer {
    inner: Mutex<Option<Writer>>,
}

fn raise((topic, text): Failure) -> PyErr {
    WriteFailure::new_err((topic, text))
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
        let stamp = stamp.map(|(sink, batch, partition)| Stamp {
            sink,
            batch,
            partition: partition.to_string(),
        });
        Ok(Producer {
            inner: Mutex::new(Some(Writer {
                producer,
                stamp,
                sequence: 0,
            })),
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
        self.with(py, |state| {
            state
                .send(&batch.0, topic.as_deref(), &topics)
                .map_err(raise)
        })
    }

    /// Whether a delivery report failed.
    fn failed(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |state| Ok(state.producer.failed()))
    }

    /// Wait up to `timeout_ms` for the acknowledgements; the number of records still waiting.
    fn flush(&self, py: Python<'_>, timeout_ms: u64) -> PyResult<usize> {
        self.with(py, |state| Ok(state.producer.flush(millis(timeout_ms))))
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
        self.with(py, |state| {
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
        self.with(py, |s| {
            s.producer
                .init_transactions(millis(timeout_ms))
                .map_err(|e| raise((None, e)))
        })
    }

    fn begin_transaction(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |s| {
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
        self.with(py, |s| {
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
        self.with(py, |s| {
            s.producer
                .commit_transaction(millis(timeout_ms))
                .map_err(|e| raise((None, e)))
        })
    }

    fn abort_transaction(&self, py: Python<'_>, timeout_ms: u64) -> PyResult<()> {
        self.with(py, |s| {
            s.producer
                .abort_transaction(millis(timeout_ms))
                .map_err(|e| raise((None, e)))
        })
    }

    /// Destroy the producer without waiting (records not yet acknowledged are dropped).
    fn close(&self, py: Python<'_>) {
        let state = relock(&self.inner).take();
        py.detach(move || drop(state));
    }
}

impl Producer {
    /// Run `f` on the producer without the GIL; an error once closed.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Writer) -> PyResult<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let mut guard = relock(&self.inner);
            match guard.as_mut() {
                Some(state) => f(state),
                None => Err(raise((None, "the producer is closed".to_string()))),
            }
        })
    }
}
