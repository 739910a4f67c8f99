//! EndTxn (key 26) at versions 0 to 2, the ones before the flexible versions (Kafka 4 speaks 0
//! to 5): the transaction committed or aborted, asked of its transaction coordinator, which
//! writes the commit or abort markers to every partition the transaction added.

use super::init_producer_id::Transactional;
use super::primitives::{Api, Cursor, Header, Malformed};

/// EndTxn at the versions this path speaks, most preferred first (2 answers PRODUCER_FENCED).
pub const END_TXN: Api = Api::new(26, &[2, 1, 0], "EndTxn");

/// An EndTxn request: commit (`committed`) or abort `txn`'s transaction.
pub fn end_txn_request(header: Header<'_>, txn: &Transactional<'_>, committed: bool) -> Vec<u8> {
    let mut r = txn.request(END_TXN, header);
    r.i8(i8::from(committed));
    r.finish()
}

/// The error code of a response body of a throttle time then an error code (EndTxn and
/// AddOffsetsToTxn, versions 0 to 2).
pub fn parse_error(body: &[u8]) -> Result<i16, Malformed> {
    let mut c = Cursor::new(body);
    c.i32()?; // throttle time
    c.i16()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::sample::request_header;

    #[test]
    fn a_commit_names_the_producer_and_the_outcome() {
        let txn = Transactional {
            id: "t",
            producer_id: 7,
            epoch: 3,
        };
        for (committed, byte) in [(true, 1), (false, 0)] {
            let req = end_txn_request(Header::new(2, 5, "me"), &txn, committed);
            let (mut c, named) = request_header(&req);
            assert_eq!(named, (26, 2, 5));
            assert_eq!(c.string().unwrap(), Some("t"));
            assert_eq!((c.i64().unwrap(), c.i16().unwrap()), (7, 3));
            assert_eq!((c.i8().unwrap(), c.remaining()), (byte, 0));
        }
        let mut body = 0i32.to_be_bytes().to_vec();
        body.extend_from_slice(&90i16.to_be_bytes());
        assert_eq!(parse_error(&body), Ok(90));
        assert!(parse_error(&body[..5]).is_err());
    }
}
