//! SaslHandshake (key 17, v1) and SaslAuthenticate (key 36, v1): the mechanism a client asks
//! for, then each step of the mechanism's exchange as opaque bytes (KIP-152), and the session's
//! lifetime after the last step (KIP-368).

use super::primitives::{Api, Cursor, Malformed};

/// SaslHandshake and SaslAuthenticate, at the one version each this client speaks.
pub const SASL_HANDSHAKE: Api = Api::new(17, &[1], "SaslHandshake");
pub const SASL_AUTHENTICATE: Api = Api::new(36, &[1], "SaslAuthenticate");

/// A SaslHandshake v1 request for `mechanism`.
pub fn handshake_request(correlation: i32, client_id: &str, mechanism: &str) -> Vec<u8> {
    let mut r = SASL_HANDSHAKE.preferred(correlation, client_id);
    r.string(mechanism);
    r.finish()
}

/// A SaslHandshake answer: its error code (0: the mechanism is enabled) and the mechanisms
/// the broker enables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handshake {
    pub error: i16,
    pub mechanisms: Vec<String>,
}

pub fn parse_handshake(body: &[u8]) -> Result<Handshake, Malformed> {
    let mut c = Cursor::new(body);
    let error = c.i16()?;
    let mut mechanisms = Vec::new();
    for _ in 0..c.count()? {
        mechanisms.push(c.string()?.unwrap_or_default().to_string());
    }
    Ok(Handshake { error, mechanisms })
}

/// A SaslAuthenticate v1 request carrying one step of the exchange.
pub fn authenticate_request(correlation: i32, client_id: &str, step: &[u8]) -> Vec<u8> {
    let mut r = SASL_AUTHENTICATE.preferred(correlation, client_id);
    r.bytes(step);
    r.finish()
}

/// A SaslAuthenticate answer: its error code and message, the server's step, and (after the
/// last step) how long the broker keeps the session before it must authenticate again (0: no
/// limit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    pub error: i16,
    pub message: Option<String>,
    pub step: Vec<u8>,
    pub session_lifetime_ms: i64,
}

pub fn parse_authenticate(body: &[u8]) -> Result<Authenticated, Malformed> {
    let mut c = Cursor::new(body);
    let error = c.i16()?;
    let message = c.string()?.map(str::to_string);
    let step = body[c.bytes_range()?].to_vec();
    let session_lifetime_ms = c.i64()?;
    Ok(Authenticated {
        error,
        message,
        step,
        session_lifetime_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::sample::request_header;

    #[test]
    fn requests_carry_the_mechanism_and_the_step() {
        let h = handshake_request(3, "me", "PLAIN");
        let (mut c, named) = request_header(&h);
        assert_eq!(named, (17, 1, 3));
        assert_eq!(c.string().unwrap(), Some("PLAIN"));
        let a = authenticate_request(4, "me", b"\0u\0p");
        let (mut c, named) = request_header(&a);
        assert_eq!(named, (36, 1, 4));
        let step = c.bytes_range().unwrap();
        assert_eq!(&a[step], b"\0u\0p");
    }

    #[test]
    fn answers_give_errors_mechanisms_steps_and_the_session_lifetime() {
        let mut body = vec![0, 33, 0, 0, 0, 2, 0, 5];
        body.extend_from_slice(b"PLAIN");
        body.extend_from_slice(&[0, 13]);
        body.extend_from_slice(b"SCRAM-SHA-512");
        let h = parse_handshake(&body).unwrap();
        assert_eq!(
            (h.error, h.mechanisms),
            (33, vec!["PLAIN".into(), "SCRAM-SHA-512".into()])
        );
        let mut body = vec![0, 58, 0, 3];
        body.extend_from_slice(b"bad");
        body.extend_from_slice(&[0, 0, 0, 2, b'v', b'=']);
        body.extend_from_slice(&60_000i64.to_be_bytes());
        let a = parse_authenticate(&body).unwrap();
        assert_eq!(a.error, 58);
        assert_eq!(a.message.as_deref(), Some("bad"));
        assert_eq!(
            (a.step.as_slice(), a.session_lifetime_ms),
            (&b"v="[..], 60_000)
        );
        assert!(parse_authenticate(&body[..body.len() - 1]).is_err());
    }
}
