//! The sink's `Producer`: pyarrow record batches in, records out to one cluster by either
//! engine behind [`crate::write::batch_producer::BatchProducer`]: librdkafka's producer
//! ([`crate::write::Writer`]) or the core's own over the direct produce path
//! ([`crate::write::direct`], with a thread of its own for `linger.ms`); deliveries counted in
//! Rust (no Python object, and no report, per record), and Kafka's transactions (exactlyOnce).

use std::time::Duration;

use arrow_array::RecordBatch;
use arrow_pyarrow::PyArrowType;
use pyo3::prelude::*;

use super::open_writer::{raise, stamp_of, OpenWriter};
use crate::ffi::Producer as RdProducer;
use crate::write::batch_producer::{
    BatchProducer, CommittedOffset, Deliveries, Destination, Marker,
};
use crate::write::direct::config::ProduceConfig;
use crate::write::direct::DirectWriter;
use crate::write::{Stamp, Writer};

/// The shortest pause between two looks for batches open past `linger.ms` (direct path).
const LINGER_TICK: Duration = Duration::from_millis(10);

type Engine = Box<dyn BatchProducer>;

/// Produces the sink's columns of pyarrow record batches to one cluster.
///
/// Parameters: the full producer configuration (librdkafka's), the dedupe stamp (sink id,
/// batch, Spark partition) whose headers every record carries, or None, and whether the direct
/// produce path writes (else librdkafka's producer).
#[pyclass(module = "pyspark_dynamic_kafka_core._core")]
pub struct Producer {
    inner: OpenWriter<Engine>,
}

fn librdkafka(config: &[(String, String)], stamp: Option<Stamp>) -> PyResult<OpenWriter<Engine>> {
    let producer = RdProducer::new(config).map_err(|e| raise((None, e)))?;
    let sequence = 0;
    Ok(OpenWriter::new(Box::new(Writer {
        producer,
        stamp,
        sequence,
    })))
}

fn direct(config: &[(String, String)], stamp: Option<Stamp>) -> PyResult<OpenWriter<Engine>> {
    // librdkafka's check first: a property it refuses is refused here too, in its words.
    crate::ffi::check_config(config).map_err(|e| raise((None, e)))?;
    let config = ProduceConfig::from_config(config).map_err(|e| raise((None, e)))?;
    let writer = DirectWriter::new(config, stamp);
    let tick = writer.linger_time().max(LINGER_TICK);
    let inner: OpenWriter<Engine> = OpenWriter::new(Box::new(writer));
    // Every linger.ms, the batches open past it shipped while the caller hands over no rows
    // (Spark's iterator waiting for its source), as librdkafka's background thread ships them.
    inner
        .every("dynamic-kafka-linger", tick, |w| w.linger())
        .map_err(|e| raise((None, format!("cannot start the producer's thread: {e}"))))?;
    Ok(inner)
}

#[pymethods]
impl Producer {
    #[new]
    #[pyo3(signature = (config, stamp=None, direct=false))]
    fn new(
        config: Vec<(String, String)>,
        stamp: Option<(String, String, i32)>,
        direct: bool,
    ) -> PyResult<Self> {
        let open = if direct { self::direct } else { librdkafka };
        Ok(Producer {
            inner: open(&config, stamp_of(stamp))?,
        })
    }

    /// Write every row of `batch`: to `topic` when given, else to the topic that `topics` maps
    /// the row's `topic` value to (None: a null value). Does nothing more once a record failed.
    #[pyo3(signature = (batch, topic=None, topics=Vec::new()))]
    fn send(
        &self,
        py: Python<'_>,
        batch: PyArrowType<RecordBatch>,
        topic: Option<String>,
        topics: Vec<(Option<String>, String)>,
    ) -> PyResult<()> {
        let to = Destination {
            topic: topic.as_deref(),
            topics: &topics,
        };
        self.inner.with(py, |w| w.send(&batch.0, to).map_err(raise))
    }

    /// Whether a record failed.
    fn failed(&self, py: Python<'_>) -> PyResult<bool> {
        self.inner.with(py, |w| Ok(w.failed()))
    }

    /// Send everything and wait up to `timeout_ms` for the acknowledgements; the records still
    /// waiting.
    fn flush(&self, py: Python<'_>, timeout_ms: u64) -> PyResult<usize> {
        self.inner.with(py, |w| w.flush(timeout_ms).map_err(raise))
    }

    /// (records per topic, key+value bytes per topic, the first failure as (topic, reason) or
    /// None) acknowledged so far.
    fn deliveries(&self, py: Python<'_>) -> PyResult<Deliveries> {
        self.inner.with(py, |w| Ok(w.deliveries()))
    }

    /// Recoveries so far from a retriable error or a lost connection on the direct path
    /// (every batch not acknowledged then sent again after a metadata lookup; librdkafka's are
    /// not counted): for tests and diagnostics.
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
        let marker = Marker {
            group: &group,
            topic: &topic,
            partition,
            offset,
            metadata: &metadata,
        };
        self.inner
            .with(py, |w| w.send_offset(marker, timeout_ms).map_err(raise))
    }

    /// Send everything, wait for it, then commit the open transaction.
    fn commit_transaction(&self, py: Python<'_>, timeout_ms: u64) -> PyResult<()> {
        self.inner
            .with(py, |w| w.commit_transaction(timeout_ms).map_err(raise))
    }

    /// Abort the open transaction (on the direct path, batches not yet sent are dropped).
    fn abort_transaction(&self, py: Python<'_>, timeout_ms: u64) -> PyResult<()> {
        self.inner
            .with(py, |w| w.abort_transaction(timeout_ms).map_err(raise))
    }

    /// The stable offsets `group` committed on `places` ((topic, partition) pairs), where the
    /// engine asks for them itself (the direct path's transactional producer): each place's
    /// (topic, partition, offset (-1: none), metadata); None where it does not.
    fn committed(
        &self,
        py: Python<'_>,
        group: String,
        places: Vec<(String, i32)>,
        timeout_ms: u64,
    ) -> PyResult<Option<Vec<CommittedOffset>>> {
        let places: Vec<(&str, i32)> = places.iter().map(|(t, p)| (t.as_str(), *p)).collect();
        self.inner.with(py, |w| {
            w.committed_offsets(&group, &places, timeout_ms)
                .map_err(raise)
        })
    }

    /// Drop the producer without waiting (records not yet acknowledged are dropped).
    fn close(&self, py: Python<'_>) {
        self.inner.close(py);
    }
}
