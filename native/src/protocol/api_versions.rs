//! ApiVersions (key 18, version 0, which every broker answers): which versions of each API a
//! broker speaks.

use super::primitives::{Api, Cursor, Malformed};

/// ApiVersions, at the version every broker answers.
pub const API_VERSIONS: Api = Api::new(18, &[0], "ApiVersions");

/// An ApiVersions v0 request.
pub fn api_versions_request(correlation: i32, client_id: &str) -> Vec<u8> {
    API_VERSIONS.preferred(correlation, client_id).finish()
}

/// `api` and the versions this client speaks, as a refusal names them (`FindCoordinator v2, v1`).
pub fn spoken(api: &Api) -> String {
    let versions: Vec<String> = api.versions.iter().map(i16::to_string).collect();
    format!("{} v{}", api.name, versions.join(", v"))
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

    /// The first of `api`'s versions (most preferred first) the broker speaks.
    pub fn pick(&self, api: &Api) -> Option<i16> {
        api.versions
            .iter()
            .copied()
            .find(|&v| self.offers(api.key, v))
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

    #[test]
    fn the_most_preferred_version_offered_is_picked_and_a_refusal_names_them_all() {
        // Produce 3..7, InitProducerId 0..0
        let versions = Versions(vec![(0, 3, 7), (22, 0, 0)]);
        let produce = Api::new(0, &[8, 7, 6, 5, 4, 3], "Produce");
        assert_eq!(versions.pick(&produce), Some(7));
        let init = Api::new(22, &[1, 0], "InitProducerId");
        assert_eq!(versions.pick(&init), Some(0));
        let fetch = Api::new(1, &[11], "Fetch");
        assert_eq!(versions.pick(&fetch), None);
        assert_eq!(spoken(&fetch), "Fetch v11");
        assert_eq!(spoken(&produce), "Produce v8, v7, v6, v5, v4, v3");
    }
}
