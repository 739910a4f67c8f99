//! AddOffsetsToTxn (key 25) at versions 0 to 2, the ones before the flexible versions (Kafka 4
//! speaks 0 to 4): a consumer group's offsets added to the transaction, asked of its
//! transaction coordinator before the offsets are committed (TxnOffsetCommit) to the group's.
//! Its answer is EndTxn's ([`super::end_txn::parse_error`]).

use super::init_producer_id::Transactional;
use super::primitives::{Api, Header};

/// AddOffsetsToTxn at the versions this path speaks, most preferred first (2 answers
/// PRODUCER_FENCED).
pub const ADD_OFFSETS_TO_TXN: Api = Api::new(25, &[2, 1, 0], "AddOffsetsToTxn");

/// An AddOffsetsToTxn request: `group`'s offsets in `txn`'s transaction.
pub fn add_offsets_request(header: Header<'_>, txn: &Transactional<'_>, group: &str) -> Vec<u8> {
    let mut r = txn.request(ADD_OFFSETS_TO_TXN, header);
    r.string(group);
    r.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::end_txn::parse_error;
    use crate::protocol::sample::request_header;

    #[test]
    fn a_groups_offsets_are_added_by_its_name() {
        let txn = Transactional {
            id: "t",
            producer_id: -2,
            epoch: 0,
        };
        let req = add_offsets_request(Header::new(1, 8, "me"), &txn, "sink.progress.0");
        let (mut c, named) = request_header(&req);
        assert_eq!(named, (25, 1, 8));
        assert_eq!(c.string().unwrap(), Some("t"));
        assert_eq!((c.i64().unwrap(), c.i16().unwrap()), (-2, 0));
        assert_eq!(c.string().unwrap(), Some("sink.progress.0"));
        assert_eq!(c.remaining(), 0);
        let body = [0, 0, 0, 9, 0, 51];
        assert_eq!(parse_error(&body), Ok(51));
    }
}
