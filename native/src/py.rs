//! The Python face of the core (module `pyspark_dynamic_kafka_core._core`): pyo3 classes and
//! exceptions only, each a thin binding over the logic in [`crate::read`], [`crate::write`], [`crate::avro`] and [`crate::encode`].
//!
//! - [`consumer`]: `Consumer`, pooled, lent to one reader at a time;
//! - [`reader`]: `Reader`, a cluster's ranges into pyarrow batches;
//! - [`producer`]: `Producer`, the sink's batches to librdkafka or over the direct produce path;
//! - [`open_writer`]: the producer's writer until closed, its linger thread, `WriteFailure`;
//! - [`avro`]: `AvroDecoder`, Avro keys or values into a pyarrow array;
//! - [`avro_encoder`]: `AvroEncoder`, a pyarrow column into Confluent-framed Avro payloads;
//! - [`errors`]: the exceptions.

pub mod avro;
pub mod avro_encoder;
pub mod consumer;
pub mod errors;
pub mod open_writer;
pub mod producer;
pub mod reader;

use std::sync::{Mutex, MutexGuard};

use arrow_pyarrow::ToPyArrow;
use pyo3::prelude::*;

use crate::{ffi, into_arrow};

/// Lock, also after a panic poisoned the lock (the state is then dropped or closed anyway).
pub fn relock<T>(lock: &Mutex<T>) -> MutexGuard<'_, T> {
    lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The Arrow schema of the batches (a pyarrow.Schema), with `headers` when `include_headers`.
#[pyfunction(name = "arrow_schema")]
pub fn schema_of(py: Python<'_>, include_headers: bool) -> PyResult<Bound<'_, PyAny>> {
    into_arrow::schema(include_headers).to_pyarrow(py)
}

/// None when librdkafka accepts every property, else its reason.
#[pyfunction]
pub fn config_problem(config: Vec<(String, String)>) -> Option<String> {
    ffi::check_config(&config).err()
}

/// None when the direct fetch path serves a consumer of this configuration (with `produce`:
/// the direct produce path a producer of it), else why librdkafka's consumer (producer) serves
/// the cluster (asked once per configuration by the driver).
#[pyfunction]
#[pyo3(signature = (config, produce=false))]
pub fn direct_problem(config: Vec<(String, String)>, produce: bool) -> Option<String> {
    if produce {
        crate::write::direct::config::ProduceConfig::from_config(&config).err()
    } else {
        crate::read::DirectConfig::from_config(&config).err()
    }
}

/// The version of the statically linked librdkafka.
#[pyfunction]
pub fn librdkafka_version() -> String {
    ffi::librdkafka_version()
}
