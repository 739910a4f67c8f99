//! InitProducerId (key 22) at version 0 or 1 (the last before the flexible versions): an
//! idempotent producer's id and epoch, asked of any broker; or, with a transactional id and
//! its transaction timeout, a transactional producer's, asked of its transaction coordinator
//! (which fences the id's older producers and ends their open transaction).

use super::primitives::{Api, Cursor, Header, Malformed, Request};

/// InitProducerId at the versions this path speaks (the last before the flexible versions).
pub const INIT_PRODUCER_ID: Api = Api::new(22, &[1, 0], "InitProducerId");

/// An InitProducerId request: for an idempotent producer (`transactional` None), or for the
/// transactional id and transaction timeout (ms) given.
pub fn init_producer_id_request(header: Header<'_>, transactional: Option<(&str, i32)>) -> Vec<u8> {
    let mut r = INIT_PRODUCER_ID.request(header);
    match transactional {
        Some((id, timeout_ms)) => {
            r.string(id);
            r.i32(timeout_ms);
        }
        None => {
            r.null_string(); // transactional id
            r.i32(-1); // transaction timeout: none without a transactional id
        }
    }
    r.finish()
}

/// A transactional producer as its transaction's requests name it: its transactional id, and
/// the producer id and epoch InitProducerId gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transactional<'a> {
    pub id: &'a str,
    pub producer_id: i64,
    pub epoch: i16,
}

impl<'a> Transactional<'a> {
    /// `id`'s producer of (producer id, epoch) `producer`.
    pub fn new(id: &'a str, (producer_id, epoch): (i64, i16)) -> Self {
        Transactional {
            id,
            producer_id,
            epoch,
        }
    }

    /// A request of `api` with `header`, its body begun as the transaction coordinator's
    /// requests begin: the id, producer id and epoch.
    pub fn request(&self, api: Api, header: Header<'_>) -> Request {
        let mut r = api.request(header);
        r.string(self.id);
        r.i64(self.producer_id);
        r.i16(self.epoch);
        r
    }
}

/// What the broker answered: an error code, or the producer's id and epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerId {
    pub error: i16,
    pub id: i64,
    pub epoch: i16,
}

/// The producer id of an InitProducerId v0/v1 response body.
pub fn parse_init_producer_id(body: &[u8]) -> Result<ProducerId, Malformed> {
    let mut c = Cursor::new(body);
    c.i32()?; // throttle time
    Ok(ProducerId {
        error: c.i16()?,
        id: c.i64()?,
        epoch: c.i16()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::sample::request_header;

    #[test]
    fn an_idempotent_producer_asks_without_a_transactional_id() {
        let req = init_producer_id_request(Header::new(1, 9, "me"), None);
        let (mut c, named) = request_header(&req);
        assert_eq!(named, (22, 1, 9));
        assert_eq!(c.string().unwrap(), None);
        assert_eq!((c.i32().unwrap(), c.remaining()), (-1, 0));
        let mut body = 0i32.to_be_bytes().to_vec();
        body.extend_from_slice(&0i16.to_be_bytes());
        body.extend_from_slice(&4711i64.to_be_bytes());
        body.extend_from_slice(&2i16.to_be_bytes());
        let id = parse_init_producer_id(&body).unwrap();
        assert_eq!(
            id,
            ProducerId {
                error: 0,
                id: 4711,
                epoch: 2
            }
        );
        assert!(parse_init_producer_id(&body[..13]).is_err());
    }

    #[test]
    fn a_transactional_producer_names_its_id_and_timeout() {
        let req = init_producer_id_request(Header::new(0, 2, "me"), Some(("sink.east.3", 60_000)));
        let (mut c, named) = request_header(&req);
        assert_eq!(named, (22, 0, 2));
        assert_eq!(c.string().unwrap(), Some("sink.east.3"));
        assert_eq!((c.i32().unwrap(), c.remaining()), (60_000, 0));
    }
}
