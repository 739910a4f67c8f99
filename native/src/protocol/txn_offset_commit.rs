//! TxnOffsetCommit (key 28) at versions 0 to 2, the ones before the flexible versions (Kafka 4
//! speaks 0 to 6): a consumer group's offsets committed inside a transaction, asked of the
//! group's coordinator after AddOffsetsToTxn; they become visible when the transaction commits.
//! Its answer is AddPartitionsToTxn's ([`super::add_partitions_to_txn::parse_partition_errors`]).

use super::init_producer_id::Transactional;
use super::primitives::{Api, Header};

/// TxnOffsetCommit at the versions this path speaks, most preferred first (2 adds the leader
/// epoch).
pub const TXN_OFFSET_COMMIT: Api = Api::new(28, &[2, 1, 0], "TxnOffsetCommit");

/// One offset to commit: topic, partition, offset and metadata.
pub struct Offset<'a> {
    pub topic: &'a str,
    pub partition: i32,
    pub offset: i64,
    pub metadata: &'a [u8],
}

/// A TxnOffsetCommit request: `offsets` of `group` inside `txn`'s transaction, those of one
/// topic next to each other (each run of one topic is one topic entry). The metadata is
/// written as given (a string's bytes).
pub fn txn_offset_commit_request(
    header: Header<'_>,
    txn: &Transactional<'_>,
    group: &str,
    offsets: &[Offset<'_>],
) -> Vec<u8> {
    let mut r = TXN_OFFSET_COMMIT.request(header);
    r.string(txn.id);
    r.string(group);
    r.i64(txn.producer_id);
    r.i16(txn.epoch);
    r.by_topic(
        offsets,
        |o| o.topic,
        |r, o| {
            r.i32(o.partition);
            r.i64(o.offset);
            if header.version >= 2 {
                r.i32(-1); // the leader epoch of the last record consumed: none
            }
            let len = o.metadata.len().min(i16::MAX as usize);
            r.i16(len as i16);
            r.raw(&o.metadata[..len]);
        },
    );
    r.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::add_partitions_to_txn::parse_partition_errors;
    use crate::protocol::sample::request_header;

    #[test]
    fn offsets_are_committed_for_the_group_with_their_metadata() {
        let txn = Transactional {
            id: "t",
            producer_id: 5,
            epoch: 2,
        };
        let offsets = [
            Offset {
                topic: "a",
                partition: 0,
                offset: 41,
                metadata: b"m\0",
            },
            Offset {
                topic: "a",
                partition: 1,
                offset: 42,
                metadata: b"",
            },
        ];
        for &version in TXN_OFFSET_COMMIT.versions {
            let req = txn_offset_commit_request(Header::new(version, 1, "me"), &txn, "g", &offsets);
            let (mut c, named) = request_header(&req);
            assert_eq!(named, (28, version, 1));
            assert_eq!(
                (c.string().unwrap(), c.string().unwrap()),
                (Some("t"), Some("g"))
            );
            assert_eq!((c.i64().unwrap(), c.i16().unwrap()), (5, 2));
            assert_eq!(c.count().unwrap(), 1);
            assert_eq!((c.string().unwrap(), c.count().unwrap()), (Some("a"), 2));
            for (partition, offset, metadata) in [(0, 41, "m\0"), (1, 42, "")] {
                assert_eq!((c.i32().unwrap(), c.i64().unwrap()), (partition, offset));
                if version >= 2 {
                    assert_eq!(c.i32().unwrap(), -1);
                }
                assert_eq!(c.string().unwrap(), Some(metadata));
            }
            assert_eq!(c.remaining(), 0);
        }
        let body = [
            0, 0, 0, 0, 0, 0, 0, 1, 0, 1, b'a', 0, 0, 0, 1, 0, 0, 0, 0, 0, 16,
        ];
        let answered = parse_partition_errors(&body).unwrap();
        assert_eq!(answered, vec![("a".into(), 0, 16)]);
    }
}
