//! The sink's `Producer`'s writer, held until closed and used without the GIL (and by a thread
//! of the producer's: [`OpenWriter::every`]), and its failures as `WriteFailure`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

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
pub struct OpenWriter<W>(Arc<Mutex<Option<W>>>);

impl<W: Send + 'static> OpenWriter<W> {
    pub fn new(writer: W) -> Self {
        OpenWriter(Arc::new(Mutex::new(Some(writer))))
    }

    /// Run `f` on the writer every `tick` in a thread named `name`, until the producer is
    /// closed or dropped (the thread holds no strong reference to the writer).
    pub fn every(&self, name: &str, tick: Duration, f: fn(&mut W)) -> std::io::Result<()> {
        let writer = Arc::downgrade(&self.0);
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || loop {
                std::thread::sleep(tick);
                let Some(strong) = writer.upgrade() else {
                    return;
                };
                let mut guard = relock(&strong);
                match guard.as_mut() {
                    Some(w) => f(w),
                    None => return,
                }
            })
            .map(drop)
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
