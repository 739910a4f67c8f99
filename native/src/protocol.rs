//! Kafka's wire protocol as the direct fetch path speaks it, laid out as the `kafka-protocol`
//! crate lays it out: no pyo3, no librdkafka, no I/O here, only bytes in and values out. Each API
//! is declared once, as an `Api` constant of its module (key, versions spoken, name).
//!
//! - [`primitives`]: integers, strings, arrays, bytes and varints (read and written); an API
//!   (its key, the versions spoken, its name) and a request's header;
//! - [`flexible`]: the flexible versions' compact strings and arrays and tagged fields;
//! - [`api_versions`]: ApiVersions, which versions a broker speaks and which of an API's to use;
//! - [`metadata`]: which broker leads each partition, and where brokers listen;
//! - [`fetch`]: the Fetch request and its response;
//! - [`produce`]: the Produce request and its response;
//! - [`init_producer_id`]: InitProducerId, an idempotent or transactional producer's id and
//!   epoch;
//! - [`find_coordinator`]: FindCoordinator, a transactional id's or a group's coordinator;
//! - [`add_partitions_to_txn`]: AddPartitionsToTxn, the partitions a transaction writes;
//! - [`add_offsets_to_txn`]: AddOffsetsToTxn, a group's offsets in a transaction;
//! - [`txn_offset_commit`]: TxnOffsetCommit, those offsets committed inside the transaction;
//! - [`end_txn`]: EndTxn, a transaction committed or aborted;
//! - [`offset_fetch`]: OffsetFetch, the offsets a group committed (the sink's progress markers);
//! - [`batch_frame`]: where a record batch ends in a response, and its CRC-32C;
//! - [`records`]: record batches (magic 2) and their records and control records;
//! - [`batch_writer`]: record batches written, as an idempotent or transactional producer sends
//!   them;
//! - [`aborted`]: read_committed's filter of aborted transactions;
//! - [`sasl`]: SaslHandshake and SaslAuthenticate;
//! - [`compression`]: gzip, snappy, lz4 and zstd;
//! - [`error`]: why bytes cannot be read;
//! - `fuzz`: the parsers fuzzed (tests only).

pub mod aborted;
pub mod add_offsets_to_txn;
pub mod add_partitions_to_txn;
pub mod api_versions;
pub mod batch_frame;
pub mod batch_writer;
pub mod compression;
pub mod end_txn;
pub mod error;
pub mod fetch;
pub mod find_coordinator;
pub mod flexible;
#[cfg(test)]
mod fuzz;
pub mod init_producer_id;
pub mod metadata;
pub mod offset_fetch;
pub mod primitives;
pub mod produce;
pub mod records;
#[cfg(test)]
pub mod sample;
pub mod sasl;
pub mod txn_offset_commit;
