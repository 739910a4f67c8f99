//! ApiVersions (key 18, version 0, which every broker answers): which versions of each API a
//! broker speaks.

use super::primitives::{Cursor, Malformed, Request};

/// ApiVersions' API key.
pub const API_VERSIONS: i16 = 18;

/// An ApiVersions v0 request.
pub fn api_versions_request(correlation: i32, client_id: &str) -> Vec<u8> {
    Request::new(API_VERSIONS, 0, correlation, client_id).finish()
}

/// The versions a broker offers: (API key, lowest, highest).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Versions(Vec<(i16, i16, i16)>);

impl Versions {
    /// Whether the broker speaks `version` of the API `key`.
    pub fn offers(&self, key: i16, version: i16) -> bool {
        self.0
            .iter()
            .any(|&(k, min, max)| k == key && min <= version && version <= max)
    }
}

/// The versions of an ApiVersions v0 response body (none when it answers an error).
pub fn parse_versions(body: &[u8]) -> Result<Versions, Malformed> {
    let mut c = Cursor::new(body);
    if c.i16()? != 0 {
        return Ok(Versions::default());
    }
    let mut out = Vec::new();
    for _ in 0..c.count()? {
        out.push((c.i16()?, c.i16()?, c.i16()?));
    }
    Ok(Versions(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_api_versions_answer_says_which_versions_are_offered() {
        let mut body = vec![0, 0, 0, 0, 0, 2];
        body.extend_from_slice(&[0, 0, 0, 0, 0, 9]); // Produce 0..9
        body.extend_from_slice(&[0, 1, 0, 4, 0, 17]); // Fetch 4..17
        let versions = parse_versions(&body).unwrap();
        assert!(versions.offers(1, 11) && versions.offers(0, 9));
        assert!(!versions.offers(1, 18) && !versions.offers(17, 1));
        body[12..18].copy_from_slice(&[0, 1, 0, 0, 0, 10]); // Fetch 0..10
        assert!(!parse_versions(&body).unwrap().offers(1, 11));
        assert_eq!(
            parse_versions(&[0, 35, 0, 0, 0, 0]).unwrap(),
            Versions::default()
        );
        assert!(parse_versions(&body[..9]).is_err());
    }
}
