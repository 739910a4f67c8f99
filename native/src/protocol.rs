//! Kafka's wire protocol as the direct fetch path speaks it, laid out as the `kafka-protocol`
//! crate lays it out: no pyo3, no librdkafka, no I/O here, only bytes in and values out.
//!
//! - [`primitives`]: integers, strings, arrays, bytes and varints (read and written);
//! - [`api_versions`]: ApiVersions, which versions a broker speaks;
//! - [`metadata`]: which broker leads each partition, and where brokers listen;
//! - [`fetch`]: the Fetch request and its response;
//! - [`produce`]: the Produce request and its response;
//! - [`init_producer_id`]: InitProducerId, an idempotent producer's id and epoch;
//! - [`batch_frame`]: where a record batch ends in a response, and its CRC-32C;
//! - [`records`]: record batches (magic 2) and their records and control records;
//! - [`batch_writer`]: record batches written, as an idempotent producer sends them;
//! - [`aborted`]: read_committed's filter of aborted transactions;
//! - [`sasl`]: SaslHandshake and SaslAuthenticate;
//! - [`compression`]: gzip, snappy, lz4 and zstd;
//! - [`error`]: why bytes cannot be read;
//! - `fuzz`: the parsers fuzzed (tests only).

pub mod aborted;
pub mod api_versions;
pub mod batch_frame;
pub mod batch_writer;
pub mod compression;
pub mod error;
pub mod fetch;
#[cfg(test)]
mod fuzz;
pub mod init_producer_id;
pub mod metadata;
pub mod primitives;
pub mod produce;
pub mod records;
#[cfg(test)]
pub mod sample;
pub mod sasl;
