//! Connections to brokers kept across the readers of one pooled consumer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::connection::broker::Broker;

/// A broker's id and address.
pub type BrokerKey = (i32, String, u16);
/// Open connections to brokers, kept across readers of one pooled consumer, the bytes of Fetch
/// responses received from each broker id and the requests sent again on a new connection
/// (shared: readable while a reader holds them).
#[derive(Default)]
pub struct Brokers {
    pub(super) open: HashMap<BrokerKey, Broker>,
    received: Arc<Mutex<HashMap<i32, u64>>>,
    reconnects: Arc<AtomicU64>,
}

impl Brokers {
    /// Bytes of Fetch responses received per broker id so far.
    pub fn received(&self) -> HashMap<i32, u64> {
        self.received
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Requests sent again on a new connection so far (their first connection broke, timed
    /// out, or was closed while kept).
    pub fn reconnects(&self) -> u64 {
        self.reconnects.load(Ordering::Relaxed)
    }

    /// The connections, for a reader (these keep counting into the same totals).
    pub fn lend(&mut self) -> Brokers {
        Brokers {
            open: std::mem::take(&mut self.open),
            received: Arc::clone(&self.received),
            reconnects: Arc::clone(&self.reconnects),
        }
    }

    /// The connections a reader hands back (none after it fell back to librdkafka).
    pub fn restore(&mut self, lent: Brokers) {
        self.open = lent.open;
    }

    pub(super) fn reconnected(&self) {
        self.reconnects.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn count(&self, broker: i32, bytes: usize) {
        let mut received = self.received.lock().unwrap_or_else(PoisonError::into_inner);
        *received.entry(broker).or_default() += bytes as u64;
    }
}
