//! The `Reader`: exact ranges of one cluster read into pyarrow record batches ([`crate::read`]),
//! their Avro keys or values decoded in the same call by the [`AvroDecoder`]s it was given.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use arrow_array::RecordBatch;
use arrow_pyarrow::ToPyArrow;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::avro::{asked_to_python, Asked, AvroDecoder};
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
/// value-byte bounds of a batch, (for a consumer of its own) whether the direct fetch path
/// may read (a pooled `Consumer` is given `direct` when made), and the decoders of its Avro
/// columns as (column, [`AvroDecoder`]): each batch's column is decoded with its decoder's
/// `decode(values, headers, ask=True)` before the batch is handed over, and `take_decoded`
/// gives what each said.
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
    /// The decoders of Avro columns, by column.
    decoders: Mutex<Vec<(String, Py<AvroDecoder>)>>,
    /// What the decoders said of the last batch's columns, until taken.
    decoded: Mutex<Vec<(String, Py<PyAny>)>>,
}

/// A decoder's answer for a batch's column, or `None` where the column or its bytes are not
/// what it decodes (Python asks the decoder itself then, which raises as it always has).
fn decode_column(batch: &RecordBatch, column: &str, decoder: &AvroDecoder) -> Option<Asked> {
    let values = batch.column_by_name(column)?;
    let headers = batch.column_by_name("headers");
    decoder.decode_or_missing(values, headers).ok()
}

#[pymethods]
impl Reader {
    #[new]
    #[pyo3(signature = (cluster, config, ranges, poll_timeout_ms, include_headers, fail_on_data_loss, max_rows=65536, max_bytes=33554432, direct=true, decoders=Vec::new()))]
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
        decoders: Vec<(String, Py<AvroDecoder>)>,
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
            decoders: Mutex::new(decoders),
            decoded: Mutex::new(Vec::new()),
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        relock(&self.decoded).clear();
        let decoders: Vec<(String, Py<AvroDecoder>)> = relock(&self.decoders)
            .iter()
            .map(|(column, decoder)| (column.clone(), decoder.clone_ref(py)))
            .collect();
        let next = {
            let mut guard = self.lock();
            let Some(reader) = guard.as_mut() else {
                return Ok(None);
            };
            py.detach(|| {
                let batch = reader.next_batch()?;
                let decoded: Vec<(String, Asked)> = match &batch {
                    Some(batch) => decoders
                        .iter()
                        .filter_map(|(column, decoder)| {
                            let asked = decode_column(batch, column, decoder.get())?;
                            Some((column.clone(), asked))
                        })
                        .collect(),
                    None => Vec::new(),
                };
                Ok((batch, decoded))
            })
        };
        match next {
            Ok((Some(batch), decoded)) => {
                let decoded = decoded
                    .into_iter()
                    .map(|(column, asked)| Ok((column, asked_to_python(py, asked)?.unbind())))
                    .collect::<PyResult<Vec<_>>>()?;
                *relock(&self.decoded) = decoded;
                batch.to_pyarrow(py).map(Some)
            }
            Ok((None, _)) => {
                self.close(py);
                Ok(None)
            }
            Err(failure) => {
                self.close(py);
                Err(raise(failure))
            }
        }
    }

    /// What the decoders said of the last batch's columns, by column (each once): as
    /// `AvroDecoder.decode(values, headers, ask=True)` answers; a column left out is the
    /// caller's to decode.
    fn take_decoded(&self) -> HashMap<String, Py<PyAny>> {
        std::mem::take(&mut *relock(&self.decoded))
            .into_iter()
            .collect()
    }

    /// Stop decoding `column` in the next batches (its decoder reads otherwise from now on).
    fn stop_decoding(&self, column: &str) {
        relock(&self.decoders).retain(|(name, _)| name != column);
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
