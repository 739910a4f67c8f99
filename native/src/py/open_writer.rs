//! What the sink's two producers (`Producer`, `DirectProducer`) share: their writer, held until
//! closed and used without the GIL, and their failures as `WriteFailure`.

use std::sync::Mutex;

use pyo3::prelude::*;

use super::errors::WriteFailure;
use super::relock;
use crate::write::{Failure, Stamp};

/// A failure to write, as the `WriteFailure` Python sees: args (topic or None, reason).
pub fn raise((topic, text): Failure) -> PyErr {
    WriteFailure::new_err((topic, text))
}

/// The dedupe stamp a producer is given as (sink id, batch, Spark partition).
pub fn stamp_of(stamp: Option<(String, String, i32)>) -> Option<Stamp> {
    stamp.map(|(sink, batch, partition)| Stamp {
        sink,
        batch,
        partition: partition.to_string(),
    })
}

/// A producer's writer until the producer is closed.
pub struct OpenWriter<W>(Mutex<Option<W>>);

impl<W: Send> OpenWriter<W> {
    pub fn new(writer: W) -> Self {
        OpenWriter(Mutex::new(Some(writer)))
    }

    /// Run `f` on the writer without the GIL; an error once closed.
    pub fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut W) -> PyResult<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let mut guard = relock(&self.0);
            match guard.as_mut() {
                Some(writer) => f(writer),
                None => Err(raise((None, "the producer is closed".to_string()))),
            }
        })
    }

    /// Drop the writer without waiting, and without the GIL (records not yet acknowledged are
    /// dropped).
    pub fn close(&self, py: Python<'_>) {
        let writer = relock(&self.0).take();
        py.detach(move || drop(writer));
    }
}
