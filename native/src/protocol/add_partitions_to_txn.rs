//! AddPartitionsToTxn (key 24) at versions 0 to 2, the client's versions before the flexible
//! ones (Kafka 4 speaks 0 to 5; 4 and up are the brokers' own, batching transactions): the
//! partitions a transaction writes, added by its transaction coordinator before their first
//! Produce in it; and what each partition answered.

use super::init_producer_id::Transactional;
use super::primitives::{Api, Cursor, Header, Malformed};

/// AddPartitionsToTxn at the versions this path speaks, most preferred first (2 answers
/// PRODUCER_FENCED).
pub const ADD_PARTITIONS_TO_TXN: Api = Api::new(24, &[2, 1, 0], "AddPartitionsToTxn");

/// An AddPartitionsToTxn request: `topics`' partitions (topic, partitions) in `txn`'s
/// transaction.
pub fn add_partitions_request(
    header: Header<'_>,
    txn: &Transactional<'_>,
    topics: &[(&str, Vec<i32>)],
) -> Vec<u8> {
    let mut r = txn.request(ADD_PARTITIONS_TO_TXN, header);
    r.i32(topics.len() as i32);
    for (topic, partitions) in topics {
        r.string(topic);
        r.i32(partitions.len() as i32);
        for p in partitions {
            r.i32(*p);
        }
    }
    r.finish()
}

/// What one partition answered: (topic, partition, error code).
pub type PartitionError = (String, i32, i16);

/// Each partition's error code of a response body of a throttle time then topics of
/// (partition, error code) (AddPartitionsToTxn and TxnOffsetCommit, versions 0 to 2).
pub fn parse_partition_errors(body: &[u8]) -> Result<Vec<PartitionError>, Malformed> {
    let mut c = Cursor::new(body);
    c.i32()?; // throttle time
    let mut out = Vec::new();
    for _ in 0..c.count()? {
        let topic = c.string()?.unwrap_or_default();
        for _ in 0..c.count()? {
            let partition = c.i32()?;
            out.push((topic.to_string(), partition, c.i16()?));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::sample::request_header;

    #[test]
    fn partitions_are_added_per_topic_and_answered_per_partition() {
        let txn = Transactional {
            id: "t",
            producer_id: 12,
            epoch: 1,
        };
        let topics = [("a", vec![0, 2]), ("b", vec![1])];
        let req = add_partitions_request(Header::new(2, 3, "me"), &txn, &topics);
        let (mut c, named) = request_header(&req);
        assert_eq!(named, (24, 2, 3));
        assert_eq!(c.string().unwrap(), Some("t"));
        assert_eq!((c.i64().unwrap(), c.i16().unwrap()), (12, 1));
        assert_eq!(c.count().unwrap(), 2);
        assert_eq!((c.string().unwrap(), c.count().unwrap()), (Some("a"), 2));
        assert_eq!((c.i32().unwrap(), c.i32().unwrap()), (0, 2));
        assert_eq!((c.string().unwrap(), c.count().unwrap()), (Some("b"), 1));
        assert_eq!((c.i32().unwrap(), c.remaining()), (1, 0));
        let mut body = 0i32.to_be_bytes().to_vec();
        body.extend_from_slice(&1i32.to_be_bytes());
        body.extend_from_slice(&1i16.to_be_bytes());
        body.push(b'a');
        body.extend_from_slice(&2i32.to_be_bytes());
        for (p, e) in [(0i32, 0i16), (2, 51)] {
            body.extend_from_slice(&p.to_be_bytes());
            body.extend_from_slice(&e.to_be_bytes());
        }
        let answered = parse_partition_errors(&body).unwrap();
        assert_eq!(answered, vec![("a".into(), 0, 0), ("a".into(), 2, 51)]);
        assert!(parse_partition_errors(&body[..body.len() - 1]).is_err());
    }
}
