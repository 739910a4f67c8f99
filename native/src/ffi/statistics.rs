//! librdkafka's statistics (`statistics.interval.ms`): the latest JSON document a consumer
//! emitted, kept by a statistics callback and readable from any thread.
//!
//! librdkafka hands a document to the callback when the application serves the consumer's queue
//! (the reader does, while it reads; [`super::Consumer::serve_idle`] does for an idle consumer).

use std::ffi::{c_char, c_int, c_void};
use std::slice;
use std::sync::{Arc, Mutex, MutexGuard};

use rdkafka_sys as rd;

use super::Conf;

/// The latest statistics document of one consumer (`None` until librdkafka emitted one).
#[derive(Clone, Default)]
pub struct Statistics(Arc<Mutex<Option<String>>>);

impl Statistics {
    /// The latest document, as librdkafka wrote it.
    pub fn latest(&self) -> Option<String> {
        self.slot().clone()
    }

    fn slot(&self) -> MutexGuard<'_, Option<String>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Register the callback on `conf`, storing into this value. The client created from
    /// `conf` must not outlive it: the consumer owns a clone and destroys its client first.
    pub(super) fn install(&self, conf: &mut Conf) {
        let opaque = Arc::as_ptr(&self.0) as *mut c_void;
        // SAFETY: the handle is live; `opaque` points into the Arc the consumer keeps alive
        // until after rd_kafka_destroy, and the callback only reads it as that Mutex.
        unsafe {
            rd::rd_kafka_conf_set_opaque(conf.0.as_ptr(), opaque);
            rd::rd_kafka_conf_set_stats_cb(conf.0.as_ptr(), Some(on_statistics));
        }
    }
}

/// librdkafka's statistics callback: keeps a copy of the document (returns 0: librdkafka frees
/// its buffer). Runs on the thread that serves the consumer's queue; never panics.
unsafe extern "C" fn on_statistics(
    _rk: *mut rd::rd_kafka_t,
    json: *mut c_char,
    json_len: usize,
    opaque: *mut c_void,
) -> c_int {
    if json.is_null() || opaque.is_null() {
        return 0;
    }
    // SAFETY: librdkafka passes `json_len` readable bytes at `json` for the call, and the opaque
    // pointer set by `Statistics::install`, whose Arc outlives the client.
    let (bytes, slot) = unsafe {
        (
            slice::from_raw_parts(json as *const u8, json_len),
            &*(opaque as *const Mutex<Option<String>>),
        )
    };
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    let text = String::from_utf8_lossy(&bytes[..end]).into_owned();
    *slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(text);
    0
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::super::Consumer;
    use crate::test_config::config;

    #[test]
    fn a_consumer_keeps_its_latest_statistics_document() {
        let consumer = Consumer::new(&config(&[
            ("client.id", "stats-test"),
            ("group.id", "stats-test"),
            ("statistics.interval.ms", "50"),
        ]))
        .unwrap();
        let statistics = consumer.statistics();
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut seen = Vec::new();
        while seen.len() < 2 && Instant::now() < deadline {
            // Waits on the queue up to 100 ms; serving it runs the callback.
            consumer.consume(1, 100, &mut Vec::new()).unwrap();
            consumer.serve_idle().unwrap();
            if let Some(doc) = statistics.latest() {
                if seen.last() != Some(&doc) {
                    seen.push(doc);
                }
            }
        }
        assert_eq!(seen.len(), 2, "two statistics documents within 60 s");
        for doc in &seen {
            assert!(doc.starts_with('{') && doc.ends_with('}'), "{doc}");
            assert!(doc.contains("\"client_id\": \"stats-test\""), "{doc}");
            assert!(doc.contains("\"type\": \"consumer\""), "{doc}");
        }
    }

    #[test]
    fn no_statistics_without_an_interval() {
        let consumer =
            Consumer::new(&config(&[("client.id", "quiet"), ("group.id", "quiet")])).unwrap();
        consumer.consume(1, 300, &mut Vec::new()).unwrap();
        consumer.serve_idle().unwrap();
        assert_eq!(consumer.statistics().latest(), None);
    }
}
