//! Test support: a client configuration from string pairs.

/// `pairs` as the owned (key, value) configuration the clients take.
pub fn config(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
