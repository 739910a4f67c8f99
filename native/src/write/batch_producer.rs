//! The sink's producer of one cluster, whichever engine writes: librdkafka's
//! ([`super::Writer`]) or the direct produce path's ([`super::direct::DirectWriter`]). The one
//! Python `Producer` (`py/producer.rs`) serves either through [`BatchProducer`], as the
//! package's `BatchProducer` Protocol serves its Python and compiled producers.

use std::collections::HashMap;

use arrow_array::RecordBatch;

use super::Failure;

/// Per topic name: the records and key+value bytes acknowledged so far; the first failure as
/// (topic, reason).
pub type Deliveries = (
    HashMap<String, u64>,
    HashMap<String, u64>,
    Option<(String, String)>,
);

/// Where a batch's rows go: to `topic` when given, else to the topic that `topics` maps each
/// row's `topic` value to (None: a null value).
#[derive(Clone, Copy)]
pub struct Destination<'a> {
    pub topic: Option<&'a str>,
    pub topics: &'a [(Option<String>, String)],
}

/// An offset committed inside a transaction: `offset` of (`topic`, `partition`) with
/// `metadata`, for consumer group `group` (the sink's progress marker).
#[derive(Clone, Copy)]
pub struct Marker<'a> {
    pub group: &'a str,
    pub topic: &'a str,
    pub partition: i32,
    pub offset: i64,
    pub metadata: &'a str,
}

/// An offset a group committed: (topic, partition, offset (-1: none), its metadata).
pub type CommittedOffset = (String, i32, i64, Option<String>);

/// A sink's producer of one cluster: rows in, deliveries counted, and Kafka's transactions.
pub trait BatchProducer: Send {
    /// Write every row of `batch` to its topic; does nothing more once a record failed.
    fn send(&mut self, batch: &RecordBatch, to: Destination<'_>) -> Result<(), Failure>;

    /// Whether a record failed.
    fn failed(&self) -> bool;

    /// Send everything and wait up to `timeout_ms` for the acknowledgements: the records still
    /// waiting.
    fn flush(&mut self, timeout_ms: u64) -> Result<usize, Failure>;

    /// What was acknowledged so far, and the first failure.
    fn deliveries(&self) -> Deliveries;

    /// Recoveries from a retriable error or a lost connection, where the engine counts them.
    fn retries(&self) -> u64;

    /// Fence older producers of the configured `transactional.id` and end their transaction.
    fn init_transactions(&mut self, timeout_ms: u64) -> Result<(), Failure>;

    /// Begin a transaction.
    fn begin_transaction(&mut self) -> Result<(), Failure>;

    /// Commit `marker`'s offset for its group inside the open transaction.
    fn send_offset(&mut self, marker: Marker<'_>, timeout_ms: u64) -> Result<(), Failure>;

    /// Send everything, wait for it, then commit the open transaction.
    fn commit_transaction(&mut self, timeout_ms: u64) -> Result<(), Failure>;

    /// Abort the open transaction.
    fn abort_transaction(&mut self, timeout_ms: u64) -> Result<(), Failure>;

    /// The stable offsets (none pending in a transaction) `group` committed on `places`
    /// (topic, partition), where the engine asks for them itself; `None` where it does not (the
    /// caller asks a consumer).
    fn committed_offsets(
        &mut self,
        _group: &str,
        _places: &[(&str, i32)],
        _timeout_ms: u64,
    ) -> Result<Option<Vec<CommittedOffset>>, Failure> {
        Ok(None)
    }

    /// Ship what waited past `linger.ms` while no rows came, where the engine has no thread of
    /// its own for it (called by one of the producer's: [`crate::py::open_writer`]).
    fn linger(&mut self) {}
}
