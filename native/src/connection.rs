//! Connections to Kafka brokers, shared by the direct fetch path (`read/direct`) and the direct
//! produce path (`write/direct`): TCP or TLS ([`tls`], [`stream`]), ApiVersions, SASL PLAIN and
//! SCRAM ([`sasl`], [`scram`]), and requests over them ([`broker`]); what a process makes
//! once for all its connections ([`kept`]).

pub mod broker;
pub mod kept;
pub mod sasl;
pub mod scram;
pub mod stream;
pub mod tls;

use std::time::Duration;

use sasl::Sasl;
use tls::Tls;

/// How to connect to a cluster's brokers.
#[derive(Debug, Clone)]
pub struct Connection {
    pub client_id: String,
    /// How long a connect or a request's whole answer may take.
    pub request_timeout: Duration,
    /// How much longer a broker may hold an answer (a Fetch's `fetch.wait.max.ms`).
    pub held: Duration,
    /// The largest response taken (`receive.message.max.bytes`).
    pub max_response: usize,
    /// TLS, for `security.protocol` SSL and SASL_SSL.
    pub tls: Option<Tls>,
    /// SASL, for `security.protocol` SASL_PLAINTEXT and SASL_SSL.
    pub sasl: Option<Sasl>,
}

/// The value of `key` (the last one given), trimmed.
pub fn property<'a>(config: &'a [(String, String)], key: &str) -> Option<&'a str> {
    config
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.trim())
}

/// TLS and SASL as `security.protocol` asks for them, or why they cannot be given here.
pub fn security(config: &[(String, String)]) -> Result<(Option<Tls>, Option<Sasl>), String> {
    let protocol = property(config, "security.protocol").unwrap_or("plaintext");
    let (tls, sasl) = match protocol.to_ascii_lowercase().as_str() {
        "plaintext" => (false, false),
        "ssl" => (true, false),
        "sasl_plaintext" => (false, true),
        "sasl_ssl" => (true, true),
        _ => return Err(format!("security.protocol is {protocol}")),
    };
    let sasl = sasl.then(|| Sasl::from_config(config)).transpose()?;
    let tls = tls.then(|| Tls::from_config(config)).transpose()?;
    Ok((tls, sasl))
}
