//! FindCoordinator (key 10) at version 1 or 2, the last before the flexible and batched
//! versions (Kafka 4 speaks 1 to 6): which broker coordinates a transactional id (key type 1)
//! or a consumer group (key type 0), asked of any broker.

use super::primitives::{Api, Cursor, Header, Malformed};

/// FindCoordinator at the versions this path speaks, most preferred first.
pub const FIND_COORDINATOR: Api = Api::new(10, &[2, 1], "FindCoordinator");
/// The key type of a consumer group's coordinator.
pub const GROUP: i8 = 0;
/// The key type of a transactional id's coordinator.
pub const TRANSACTION: i8 = 1;

/// A FindCoordinator request (version 1 or 2) for `key` of `key_type`.
pub fn find_coordinator_request(header: Header<'_>, key: &str, key_type: i8) -> Vec<u8> {
    let mut r = FIND_COORDINATOR.request(header);
    r.string(key);
    r.i8(key_type);
    r.finish()
}

/// What the broker answered: an error code (and its message), or the coordinator's node id and
/// address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coordinator {
    pub error: i16,
    pub message: Option<String>,
    pub node: i32,
    pub host: String,
    pub port: i32,
}

/// The coordinator of a FindCoordinator v1/v2 response body.
pub fn parse_find_coordinator(body: &[u8]) -> Result<Coordinator, Malformed> {
    let mut c = Cursor::new(body);
    c.i32()?; // throttle time
    Ok(Coordinator {
        error: c.i16()?,
        message: c.string()?.map(str::to_string),
        node: c.i32()?,
        host: c.string()?.unwrap_or_default().to_string(),
        port: c.i32()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::sample::request_header;

    #[test]
    fn a_transactions_coordinator_is_asked_by_its_id_and_key_type() {
        let req = find_coordinator_request(Header::new(2, 4, "me"), "sink.east.0", TRANSACTION);
        let (mut c, named) = request_header(&req);
        assert_eq!(named, (10, 2, 4));
        assert_eq!(c.string().unwrap(), Some("sink.east.0"));
        assert_eq!((c.i8().unwrap(), c.remaining()), (1, 0));
        let mut body = 0i32.to_be_bytes().to_vec();
        body.extend_from_slice(&0i16.to_be_bytes());
        body.extend_from_slice(&(-1i16).to_be_bytes());
        body.extend_from_slice(&3i32.to_be_bytes());
        body.extend_from_slice(&4i16.to_be_bytes());
        body.extend_from_slice(b"host");
        body.extend_from_slice(&9092i32.to_be_bytes());
        let found = parse_find_coordinator(&body).unwrap();
        let want = Coordinator {
            error: 0,
            message: None,
            node: 3,
            host: "host".into(),
            port: 9092,
        };
        assert_eq!(found, want);
        assert!(parse_find_coordinator(&body[..body.len() - 1]).is_err());
    }
}
