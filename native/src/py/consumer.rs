//! The pooled `Consumer`: a librdkafka consumer and the direct path's connections, lent to one
//! reader at a time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use pyo3::prelude::*;

use super::errors::{ClientError, ReadError};
use super::relock;
use crate::ffi;
use crate::read::{Brokers, DirectConfig};

/// A librdkafka consumer that readers borrow one at a time, so that a pool can keep it connected
/// across tasks (`close` destroys it; so does dropping it).
#[pyclass(module = "pyspark_dynamic_kafka_core._core")]
pub struct Consumer {
    // None while a reader holds the consumer, and after close.
    inner: Mutex<Option<ffi::Consumer>>,
    closed: AtomicBool,
    statistics: ffi::Statistics,
    /// The direct fetch path's settings, or why the cluster is read with librdkafka.
    pub(super) direct: Result<DirectConfig, String>,
    /// The direct path's open broker connections (lent with the consumer) and byte counts.
    brokers: Mutex<Brokers>,
}

#[pymethods]
impl Consumer {
    #[new]
    #[pyo3(signature = (config, direct=true))]
    fn new(config: Vec<(String, String)>, direct: bool) -> PyResult<Self> {
        let consumer = ffi::Consumer::new(&config).map_err(ClientError::new_err)?;
        Ok(Consumer {
            direct: DirectConfig::chosen(&config, direct),
            brokers: Mutex::new(Brokers::default()),
            statistics: consumer.statistics(),
            inner: Mutex::new(Some(consumer)),
            closed: AtomicBool::new(false),
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

    /// Requests the direct fetch path sent again on a new connection, over every reader of this
    /// consumer (their first connection broke, or went unanswered past the request timeout).
    fn direct_reconnects(&self) -> u64 {
        relock(&self.brokers).reconnects()
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
    pub(super) fn lend(&self) -> PyResult<(ffi::Consumer, Brokers)> {
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
    pub(super) fn give_back(&self, py: Python<'_>, consumer: ffi::Consumer, brokers: Brokers) {
        if self.closed.load(Ordering::SeqCst) {
            py.detach(move || drop(consumer));
        } else {
            relock(&self.brokers).restore(brokers);
            *relock(&self.inner) = Some(consumer);
        }
    }
}
