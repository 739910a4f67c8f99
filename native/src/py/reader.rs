//! The `Reader`: exact ranges of one cluster read into pyarrow record batches ([`crate::read`]).

use std::sync::{Mutex, MutexGuard};

use arrow_pyarrow::ToPyArrow;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::consumer::Consumer;
use super::errors::{raise, ClientError};
use super::relock;
use crate::ffi;
use crate::read::{Brokers, ClusterReader, DirectConfig, Range, Settings};

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
/// the poll timeout, whether to emit `headers`, whether lost records fail, the row and
/// value-byte bounds of a batch, and (for a consumer of its own) whether the direct fetch path
/// may read (a pooled `Consumer` is given `direct` when made).
#[pyclass(module = "pyspark_dynamic_kafka_core._core")]
pub struct Reader {
    // A pyclass must be Sync: the reader (Send, not Sync) is only reached through the lock.
    inner: Mutex<Option<ClusterReader>>,
    home: Option<Py<Consumer>>,
    /// Warnings of a reader already closed (its last `__next__` closes it), until taken.
    left: Mutex<Vec<String>>,
    /// Why librdkafka's consumer read, as the reader said when it closed.
    fallback: Mutex<Option<String>>,
    /// Why the direct path sent requests again on new connections, as said when it closed.
    reconnects: Mutex<Vec<String>>,
}

#[pymethods]
impl Reader {
    #[new]
    #[pyo3(signature = (cluster, config, ranges, poll_timeout_ms, include_headers, fail_on_data_loss, max_rows=65536, max_bytes=33554432, direct=true))]
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
        direct: bool,
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
                DirectConfig::chosen(&config, direct),
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
            reconnects: Mutex::new(Vec::new()),
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

    /// Why the direct fetch path sent requests again on new connections (their first
    /// connection broke, or went unanswered past the request timeout), one line each.
    fn reconnects(&self) -> Vec<String> {
        match self.lock().as_ref() {
            Some(reader) => reader.reconnects().to_vec(),
            None => relock(&self.reconnects).clone(),
        }
    }

    /// Unassign the consumer and give it back, or close it when it is the reader's own (also
    /// done when the reader is exhausted or fails; a dropped reader closes its consumer).
    fn close(&self, py: Python<'_>) {
        let reader = self.lock().take();
        let Some(mut reader) = reader else { return };
        relock(&self.left).extend(reader.take_warnings());
        *relock(&self.fallback) = reader.fallback().map(str::to_string);
        *relock(&self.reconnects) = reader.reconnects().to_vec();
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
