//! Test support: the transaction coordinators' answers fuzzed (see [`super`]): FindCoordinator,
//! InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn and
//! OffsetFetch (and Produce's), on arbitrary bytes, on valid encodings (written as a broker writes them, here
//! or in [`crate::protocol::sample`]) read back, and on those mutated.

use proptest::prelude::*;

use super::{bytes, mutate, mutations};
use crate::protocol::add_partitions_to_txn::{parse_partition_errors, PartitionError};
use crate::protocol::end_txn::parse_error;
use crate::protocol::find_coordinator::{parse_find_coordinator, Coordinator};
use crate::protocol::init_producer_id::{parse_init_producer_id, ProducerId};
use crate::protocol::offset_fetch::parse_offset_fetch;
use crate::protocol::produce::parse_produce;
use crate::protocol::sample::{committed, offset_fetch_body, producer_id_body};

fn string(s: Option<&str>, out: &mut Vec<u8>) {
    match s {
        None => out.extend_from_slice(&(-1i16).to_be_bytes()),
        Some(s) => {
            out.extend_from_slice(&(s.len() as i16).to_be_bytes());
            out.extend_from_slice(s.as_bytes());
        }
    }
}

fn coordinator_body(c: &Coordinator) -> Vec<u8> {
    let mut b = 0i32.to_be_bytes().to_vec();
    b.extend_from_slice(&c.error.to_be_bytes());
    string(c.message.as_deref(), &mut b);
    b.extend_from_slice(&c.node.to_be_bytes());
    string(Some(&c.host), &mut b);
    b.extend_from_slice(&c.port.to_be_bytes());
    b
}

/// Partition errors as AddPartitionsToTxn and TxnOffsetCommit answer them: each topic once, its
/// partitions in a row.
fn partition_errors_body(errors: &[PartitionError]) -> Vec<u8> {
    let runs: Vec<&[PartitionError]> = errors.chunk_by(|a, b| a.0 == b.0).collect();
    let mut b = 7i32.to_be_bytes().to_vec();
    b.extend_from_slice(&(runs.len() as i32).to_be_bytes());
    for run in runs {
        string(Some(&run[0].0), &mut b);
        b.extend_from_slice(&(run.len() as i32).to_be_bytes());
        for (_, partition, error) in run {
            b.extend_from_slice(&partition.to_be_bytes());
            b.extend_from_slice(&error.to_be_bytes());
        }
    }
    b
}

/// Every transaction answer's parser on `data`: no panic (AddOffsetsToTxn's answer is EndTxn's,
/// TxnOffsetCommit's AddPartitionsToTxn's).
fn parse_everything(data: &[u8]) {
    let _ = parse_find_coordinator(data);
    let _ = parse_init_producer_id(data);
    let _ = parse_partition_errors(data);
    let _ = parse_error(data);
    let _ = parse_offset_fetch(data);
    for version in 3..=8 {
        let _ = parse_produce(version, data);
    }
}

fn name() -> impl Strategy<Value = String> {
    "[a-z0-9._-]{0,12}"
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_break_a_transaction_answers_parser(data in bytes(200)) {
        parse_everything(&data);
    }

    #[test]
    fn transaction_answers_read_back_and_survive_damage(
        error in any::<i16>(),
        message in prop::option::of(name()),
        (node, port) in (any::<i32>(), any::<i32>()),
        host in name(),
        (id, epoch) in (any::<i64>(), any::<i16>()),
        errors in prop::collection::vec((name(), any::<i32>(), any::<i16>()), 0..6),
        offsets in prop::collection::vec(
            (name(), any::<i32>(), any::<i64>(), prop::option::of(bytes(20)), any::<i16>()),
            0..6,
        ),
        damage in mutations(),
    ) {
        let c = Coordinator { error, message, node, host, port };
        let body = coordinator_body(&c);
        prop_assert_eq!(parse_find_coordinator(&body).unwrap(), c);
        parse_everything(&mutate(body, &damage));
        let p = ProducerId { error, id, epoch };
        let body = producer_id_body(&p);
        prop_assert_eq!(parse_init_producer_id(&body).unwrap(), p);
        parse_everything(&mutate(body, &damage));
        let body = partition_errors_body(&errors);
        prop_assert_eq!(&parse_partition_errors(&body).unwrap(), &errors);
        parse_everything(&mutate(body, &damage));
        let mut body = 3i32.to_be_bytes().to_vec();
        body.extend_from_slice(&error.to_be_bytes());
        prop_assert_eq!(parse_error(&body).unwrap(), error);
        parse_everything(&mutate(body, &damage));
        let parts: Vec<_> = offsets
            .iter()
            .map(|(t, p, o, m, e)| (t.as_str(), *p, *o, m.as_deref(), *e))
            .collect();
        let body = offset_fetch_body(&parts, error);
        prop_assert_eq!(parse_offset_fetch(&body).unwrap(), (error, committed(&parts)));
        parse_everything(&mutate(body, &damage));
    }
}
