//! `pyspark_dynamic_kafka_core._core`: the compiled read core of pyspark-dynamic-kafka.
//!
//! librdkafka (vendored, statically linked) fills Arrow builders directly; batches reach pyarrow
//! through the Arrow C Data Interface without a copy and without a Python object per record.

mod batch;
mod fetch;
mod ffi;
mod read;
mod rows;
mod sink;
#[cfg(test)]
mod test_config;

use arrow_pyarrow::ToPyArrow;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard};

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;

use crate::read::{Brokers, ClusterReader, Range, ReadFailure, Settings};

create_exception!(
    _core,
    DataLossError,
    PyException,
    "Records of a range are gone."
);
create_exception!(_core, ReadError, PyException, "Reading a cluster failed.");
create_exception!(
    _core,
    ClientError,
    PyException,
    "librdkafka refused the client configuration."
);

fn raise(failure: ReadFailure) -> PyErr {
    match failure {
        ReadFailure::DataLoss(text) => DataLossError::new_err(text),
        ReadFailure::Read(text) => ReadError::new_err(text),
    }
}

/// A librdkafka consumer that readers borrow one at a time, so that a pool can keep it connected
/// across tasks (`close` destroys it; so does dropping it).
#[pyclass(module = "pyspark_dynamic_kafka_core._core")]
struct Consumer {
    // None while a reader holds the consumer, and after close.
    inner: Mutex<Option<ffi::Consumer>>,
    closed: std::sync::atomic::AtomicBool,
    statistics: ffi::Statistics,
    /// The direct fetch path's settings, or why the cluster is read with librdkafka.
    direct: Result<fetch::DirectConfig, String>,
    /// The direct path's open broker connections (lent with the consumer) and byte counts.
    brokers: Mutex<Brokers>,
}

#[pymethods]
impl Consumer {
    #[new]
    fn new(config: Vec<(String, String)>) -> PyResult<Self> {
        let consumer = ffi::Consumer::new(&config).map_err(ClientError::new_err)?;
        Ok(Consumer {
            direct: fetch::DirectConfig::from_config(&config),
            brokers: Mutex::new(Brokers::default()),
            statistics: consumer.statistics(),
            inner: Mutex::new(Some(consumer)),
            closed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The latest librdkafka statistics document (JSON) of the consumer, or None: librdkafka
    /// emits one every `statistics.interval.ms` (a property of the configuration; 0, its
    /// default, emits none) when its queue is served. A reader serves it while it reads; an
    /// idle consumer's queue is served here first, without waiting (what else it holds is
    /// stale: an idle consumer has no assignment).
    fn statistics(&self, py: Python<'_>) -> PyResult<Option<String>> {
        let mut guard = relock(&self.inner);
        if let Some(consumer) = guard.as_mut() {
            py.detach(move || consumer.serve_idle())
                .map_err(|e| ReadError::new_err(format!("serving the consumer failed: {e}")))?;
        }
        drop(guard);
        Ok(self.statistics.latest())
    }

    /// Bytes of Fetch responses the direct fetch path received from each broker id, over every
    /// reader of this consumer (librdkafka's own fetches are in `statistics()`).
    fn direct_bytes(&self) -> std::collections::HashMap<i32, u64> {
        relock(&self.brokers).received()
    }

    /// Close the consumer (a reader holding it closes it when it finishes).
    fn close(&self, py: Python<'_>) {
        self.closed.store(true, Ordering::SeqCst);
        let consumer = relock(&self.inner).take();
        let brokers = relock(&self.brokers).lend();
        if let Some(consumer) = consumer {
            py.detach(move || drop(consumer));
        }
        drop(brokers);
    }

    /// Whether no reader holds the consumer and it is not closed.
    fn available(&self) -> bool {
        relock(&self.inner).is_some()
    }
}

impl Consumer {
    /// Lend the librdkafka consumer and the direct path's connections to a reader; an error
    /// when another reader holds them.
    fn lend(&self) -> PyResult<(ffi::Consumer, Brokers)> {
        let consumer = relock(&self.inner).take().ok_or_else(|| {
            ReadError::new_err(if self.closed.load(Ordering::SeqCst) {
                "the consumer is closed"
            } else {
                "the consumer is in use by another reader"
            })
        })?;
        Ok((consumer, relock(&self.brokers).lend()))
    }

    /// Take the consumer and connections back from a reader, or close them when it was
    /// closed meanwhile.
    fn give_back(&self, py: Python<'_>, consumer: ffi::Consumer, brokers: Brokers) {
        if self.closed.load(Ordering::SeqCst) {
            py.detach(move || drop(consumer));
        } else {
            relock(&self.brokers).restore(brokers);
            *relock(&self.inner) = Some(consumer);
        }
    }
}

/// Where a reader's librdkafka consumer comes from.
#[derive(FromPyObject)]
enum Source {
    /// A pooled consumer, lent for the reader's life.
    Pooled(Py<Consumer>),
    /// The full configuration of a consumer of the reader's own.
    Config(Vec<(String, String)>),
}

/// Reads exact ranges of one cluster and yields pyarrow record batches.
///
/// Parameters: the cluster id (the `cluster` column), a [`Consumer`] to borrow (given back,
/// unassigned, when the reader finishes) or the full librdkafka consumer configuration of a
/// consumer of its own (closed when it finishes), the ranges as (topic, partition, start, end),
/// the poll timeout, whether to emit `headers`, whether lost records fail, and the row and
/// value-byte bounds of a batch.
#[pyclass(module = "pyspark_dynamic_kafka_core._core")]
struct Reader {
    // A pyclass must be Sync: the reader (Send, not Sync) is only reached through the lock.
    inner: Mutex<Option<ClusterReader>>,
    home: Option<Py<Consumer>>,
    /// Warnings of a reader already closed (its last `__next__` closes it), until taken.
    left: Mutex<Vec<String>>,
    /// Why librdkafka's consumer read, as the reader said when it closed.
    fallback: Mutex<Option<String>>,
}

#[pymethods]
impl Reader {
    #[new]
    #[pyo3(signature = (cluster, config, ranges, poll_timeout_ms, include_headers, fail_on_data_loss, max_rows=65536, max_bytes=33554432))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        cluster: String,
        config: Source,
        ranges: Vec<(String, i32, i64, i64)>,
        poll_timeout_ms: u64,
        include_headers: bool,
        fail_on_data_loss: bool,
        max_rows: usize,
        max_bytes: usize,
    ) -> PyResult<Self> {
        if max_rows == 0 || max_bytes == 0 {
            return Err(PyValueError::new_err(
                "max_rows and max_bytes must be positive",
            ));
        }
        let (consumer, brokers, home, direct) = match config {
            Source::Pooled(home) => {
                let (consumer, brokers) = home.borrow(py).lend()?;
                let direct = home.borrow(py).direct.clone();
                (consumer, brokers, Some(home), direct)
            }
            Source::Config(config) => (
                ffi::Consumer::new(&config).map_err(ClientError::new_err)?,
                Brokers::default(),
                None,
                fetch::DirectConfig::from_config(&config),
            ),
        };
        let ranges = ranges
            .into_iter()
            .map(|(topic, partition, start, end)| Range {
                topic,
                partition,
                start,
                end,
            })
            .collect();
        let settings = Settings {
            cluster,
            poll_timeout_ms,
            include_headers,
            fail_on_data_loss,
            max_rows,
            max_bytes,
        };
        let reader = ClusterReader::new(consumer, ranges, settings, direct, brokers);
        Ok(Reader {
            inner: Mutex::new(Some(reader)),
            home,
            left: Mutex::new(Vec::new()),
            fallback: Mutex::new(None),
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let next = {
            let mut guard = self.lock();
            let Some(reader) = guard.as_mut() else {
                return Ok(None);
            };
            py.detach(|| reader.next_batch())
        };
        match next {
            Ok(Some(batch)) => batch.to_pyarrow(py).map(Some),
            Ok(None) => {
                self.close(py);
                Ok(None)
            }
            Err(failure) => {
                self.close(py);
                Err(raise(failure))
            }
        }
    }

    /// Data-loss warnings (with fail_on_data_loss off) since the last call.
    fn take_warnings(&self) -> Vec<String> {
        let mut warnings = std::mem::take(&mut *relock(&self.left));
        if let Some(reader) = self.lock().as_mut() {
            warnings.extend(reader.take_warnings());
        }
        warnings
    }

    /// None while the ranges are read with the direct fetch path (Fetch requests parsed in
    /// place); else why librdkafka's consumer reads them, or read them from some point on.
    fn fallback(&self) -> Option<String> {
        match self.lock().as_ref() {
            Some(reader) => reader.fallback().map(str::to_string),
            None => relock(&self.fallback).clone(),
        }
    }

    /// Unassign the consumer and give it back, or close it when it is the reader's own (also
    /// done when the reader is exhausted or fails; a dropped reader closes its consumer).
    fn close(&self, py: Python<'_>) {
        let reader = self.lock().take();
        let Some(mut reader) = reader else { return };
        relock(&self.left).extend(reader.take_warnings());
        *relock(&self.fallback) = reader.fallback().map(str::to_string);
        let (consumer, brokers) = py.detach(move || reader.into_consumer());
        match &self.home {
            Some(home) => home.borrow(py).give_back(py, consumer, brokers),
            None => py.detach(move || drop((consumer, brokers))),
        }
    }
}

impl Reader {
    fn lock(&self) -> MutexGuard<'_, Option<ClusterReader>> {
        relock(&self.inner)
    }
}

/// Lock, also after a panic poisoned the lock (the state is then dropped or closed anyway).
fn relock<T>(lock: &Mutex<T>) -> MutexGuard<'_, T> {
    lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The Arrow schema of the batches (a pyarrow.Schema), with `headers` when `include_headers`.
#[pyfunction(name = "arrow_schema")]
fn schema_of(py: Python<'_>, include_headers: bool) -> PyResult<Bound<'_, PyAny>> {
    batch::schema(include_headers).to_pyarrow(py)
}

/// None when librdkafka accepts every property, else its reason.
#[pyfunction]
fn config_problem(config: Vec<(String, String)>) -> Option<String> {
    ffi::check_config(&config).err()
}

/// The version of the statically linked librdkafka.
#[pyfunction]
fn librdkafka_version() -> String {
    ffi::librdkafka_version()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Consumer>()?;
    m.add_class::<Reader>()?;
    m.add_class::<sink::Producer>()?;
    m.add_function(wrap_pyfunction!(schema_of, m)?)?;
    m.add_function(wrap_pyfunction!(config_problem, m)?)?;
    m.add_function(wrap_pyfunction!(librdkafka_version, m)?)?;
    m.add("DataLossError", m.py().get_type::<DataLossError>())?;
    m.add("ReadError", m.py().get_type::<ReadError>())?;
    m.add("ClientError", m.py().get_type::<ClientError>())?;
    m.add("WriteFailure", m.py().get_type::<sink::WriteFailure>())?;
    Ok(())
}
