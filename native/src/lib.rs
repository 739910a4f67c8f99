//! `pyspark_dynamic_kafka_core._core`: the compiled core of pyspark-dynamic-kafka.
//!
//! Kafka's bytes go straight into Arrow builders (and the sink's Arrow batches straight to
//! librdkafka); batches cross to pyarrow through the Arrow C Data Interface without a copy and
//! without a Python object per record.
//!
//! Module map (each file, kept true by `tests/unit/test_module_map.py`):
//!
//! - `lib.rs`: this map and the Python module's registration;
//! - `py.rs`: the Python face: pyo3 classes and exceptions only, thin bindings over `read`, `write`, `avro` and `encode`;
//! - `py/consumer.rs`: `Consumer`: a pooled librdkafka consumer and the direct path's connections, lent to one reader at a time;
//! - `py/reader.rs`: `Reader`: a cluster's ranges into pyarrow record batches, their Avro columns decoded in the same call;
//! - `py/producer.rs`: `Producer`: the sink's Arrow batches to librdkafka or over the direct produce path, deliveries counted in Rust;
//! - `py/open_writer.rs`: the producer's writer until closed, used without the GIL (and by its linger thread), and `WriteFailure`;
//! - `py/avro.rs`: `AvroDecoder`: Avro keys or values (Confluent's wire formats) into a pyarrow array;
//! - `py/avro_encoder.rs`: `AvroEncoder`: a pyarrow column into Confluent-framed Avro payloads;
//! - `py/errors.rs`: the exceptions raised to Python;
//! - `protocol.rs`: Kafka's wire protocol: no pyo3, no librdkafka, no I/O;
//! - `protocol/primitives.rs`: integers, strings, arrays, bytes and varints, read and written; an
//!   API (key, versions spoken, name) and a request's header;
//! - `protocol/flexible.rs`: the flexible versions' encoding: unsigned varints, compact strings and arrays, tagged fields;
//! - `protocol/api_versions.rs`: ApiVersions: which versions a broker speaks and which of an API's
//!   to use;
//! - `protocol/metadata.rs`: Metadata: which broker leads each partition, where brokers listen;
//! - `protocol/fetch.rs`: the Fetch request and its response;
//! - `protocol/produce.rs`: the Produce request (v3 to v8) and its response;
//! - `protocol/init_producer_id.rs`: InitProducerId: an idempotent or transactional producer's id and epoch;
//! - `protocol/find_coordinator.rs`: FindCoordinator: a transactional id's or a group's coordinator;
//! - `protocol/add_partitions_to_txn.rs`: AddPartitionsToTxn: the partitions a transaction writes, and each partition's answer;
//! - `protocol/add_offsets_to_txn.rs`: AddOffsetsToTxn: a group's offsets in a transaction;
//! - `protocol/txn_offset_commit.rs`: TxnOffsetCommit: a group's offsets committed inside a transaction;
//! - `protocol/end_txn.rs`: EndTxn: a transaction committed or aborted;
//! - `protocol/offset_fetch.rs`: OffsetFetch (v7, stable offsets): the offsets a group committed, the sink's progress markers;
//! - `protocol/batch_frame.rs`: where a record batch ends in a response (its length bounded first), and its CRC-32C;
//! - `protocol/records.rs`: record batches (magic 2), their records and control records;
//! - `protocol/batch_writer.rs`: record batches written as an idempotent or transactional producer sends them, with their CRC-32C;
//! - `protocol/sasl.rs`: SaslHandshake and SaslAuthenticate;
//! - `protocol/aborted.rs`: read_committed's filter of aborted transactions (the Java consumer's rules);
//! - `protocol/compression.rs`: gzip, snappy, lz4 and zstd, bounded;
//! - `protocol/error.rs`: why bytes cannot be read: malformed, or unsupported here;
//! - `protocol/fuzz.rs`: test support: the parsers fuzzed with proptest (record batches, compression, read_committed's filter);
//! - `protocol/fuzz/responses.rs`: test support: Fetch, Metadata, ApiVersions and SASL answers fuzzed;
//! - `protocol/fuzz/transactions.rs`: test support: the transaction coordinators' answers (and Produce's) fuzzed;
//! - `protocol/sample.rs`: test support: batches and answers as a broker writes them;
//! - `connection.rs`: connections to brokers, shared by the direct fetch and produce paths: settings, security;
//! - `connection/broker.rs`: a connection to a broker: ApiVersions, requests one at a time or pipelined;
//! - `connection/stream.rs`: a connection's bytes, plain or TLS, each request's reads and writes held to one deadline;
//! - `connection/tls.rs`: TLS on librdkafka's OpenSSL, from librdkafka's properties;
//! - `connection/sasl.rs`: SASL PLAIN and SCRAM;
//! - `connection/scram.rs`: SCRAM-SHA-256/512's client side (RFC 5802, 7677);
//! - `connection/kept.rs`: what a process makes once for all its connections (TLS contexts, salted passwords);
//! - `read.rs`: reading exact offset ranges of one cluster into Arrow batches;
//! - `read/direct.rs`: the direct fetch path: Fetch requests to each leader (or the replica it names), batches parsed in place;
//! - `read/direct/pool.rs`: connections kept across the readers of one pooled consumer;
//! - `read/direct/parse.rs`: a Fetch response's batches into the builder, each whole or not at all;
//! - `read/direct/replica.rs`: preferred read replicas a leader names (KIP-392), followed;
//! - `read/direct/config.rs`: what the direct path takes from a consumer configuration, or why it does not serve it;
//! - `read/librdkafka.rs`: reading with librdkafka's consumer (and after a handover);
//! - `read/position.rs`: where a range stands, ranges ended by the consumer's position, the "stuck" message;
//! - `read/loss.rs`: records gone: data loss, or a warning and reading on;
//! - `avro.rs`: Avro keys or values into an Arrow column of the reader schema's Spark type, as the Python decoder gives it;
//! - `avro/framing.rs`: Confluent's wire formats: the schema a record names and where its body starts;
//! - `avro/records.rs`: a batch's records framed, a record's schema header found in its headers;
//! - `avro/assembly.rs`: the decoded values put in row order, with each record's schema id;
//! - `avro/writer.rs`: one writer schema's bodies decoded by arrow-avro, record by record after a failure;
//! - `avro/conform.rs`: arrow-avro's Arrow types made Spark's, or why they cannot be;
//! - `avro/union.rs`: unions of several types made Spark's struct of members (or a long, a double);
//! - `avro/tests.rs`: test support: the decoder over whole batches;
//! - `encode.rs`: Arrow columns into Confluent-framed Avro, the bytes the Python encoder writes;
//! - `encode/plan.rs`: a writer schema as the encoder walks it, or why the core does not encode it;
//! - `encode/bound.rs`: a plan bound to a column of its Spark type, one row written as an Avro body;
//! - `encode/body.rs`: Avro's binary encoding of the values, decimals as fastavro writes them;
//! - `encode/views.rs`: the Arrow arrays a bound column reads: bytes-like values of any layout, lists' offsets;
//! - `encode/tests.rs`: test support: the encoder's bytes against hand-worked ones;
//! - `write.rs`: the sink's produce loop (librdkafka's);
//! - `write/batch_producer.rs`: the sink's producer whichever engine writes: the trait both serve;
//! - `write/direct.rs`: the direct produce path: rows into record batches, sent by the core's own idempotent (or transactional) producer;
//! - `write/direct/batches.rs`: one open record batch per partition, closed at `batch.size`;
//! - `write/direct/partitioner.rs`: the Java producer's partitioner: murmur2 for keys, sticky without;
//! - `write/direct/config.rs`: what the direct produce path takes from a producer configuration, or why it does not serve it;
//! - `write/direct/leaders.rs`: Metadata, InitProducerId and the connections to each leader;
//! - `write/direct/queue.rs`: a partition's batches in order until acknowledged, its first batch sent alone;
//! - `write/direct/spares.rs`: acknowledged batches' buffers kept for the next batches (no fresh pages, no growth by copies);
//! - `write/direct/wire.rs`: batches numbered, sent in Produce requests, answered, retried or failed;
//! - `write/direct/answer.rs`: a Produce error code: written, retried or fatal;
//! - `write/direct/transaction.rs`: a transactional producer: init, begin, partitions added before their first Produce, offsets, commit and abort;
//! - `write/direct/coordinator.rs`: the transaction and group coordinators: found, connected, their errors retried, found again or fatal;
//! - `write/direct/stand_in.rs`: test support: the producer against a stand-in broker that refuses a new partition's first batch and logs the topics each lookup names;
//! - `into_arrow.rs`: Kafka records into Arrow columns (the source's schema);
//! - `from_arrow.rs`: Arrow columns into Kafka records (the sink's rows);
//! - `ffi.rs`: librdkafka's C API, the crate's only `unsafe`: configuration, errors;
//! - `ffi/consumer.rs`: the consumer and its calls;
//! - `ffi/producer.rs`: the producer, its delivery reports and transactions;
//! - `ffi/message.rs`: a consumed message or event;
//! - `ffi/statistics.rs`: librdkafka's statistics documents;
//! - `test_config.rs`: test support: a configuration from string pairs.

mod avro;
mod connection;
mod encode;
mod ffi;
mod from_arrow;
mod into_arrow;
mod protocol;
mod py;
mod read;
#[cfg(test)]
mod test_config;
mod write;

use pyo3::prelude::*;

use py::errors::{ClientError, DataLossError, ReadError, WriteFailure};

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<py::consumer::Consumer>()?;
    m.add_class::<py::reader::Reader>()?;
    m.add_class::<py::producer::Producer>()?;
    m.add_class::<py::avro::AvroDecoder>()?;
    m.add_class::<py::avro_encoder::AvroEncoder>()?;
    m.add_function(wrap_pyfunction!(py::schema_of, m)?)?;
    m.add_function(wrap_pyfunction!(py::config_problem, m)?)?;
    m.add_function(wrap_pyfunction!(py::direct_problem, m)?)?;
    m.add_function(wrap_pyfunction!(py::librdkafka_version, m)?)?;
    m.add("DataLossError", m.py().get_type::<DataLossError>())?;
    m.add("ReadError", m.py().get_type::<ReadError>())?;
    m.add("ClientError", m.py().get_type::<ClientError>())?;
    m.add("WriteFailure", m.py().get_type::<WriteFailure>())?;
    Ok(())
}
