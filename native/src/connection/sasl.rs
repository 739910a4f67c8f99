//! SASL for the direct fetch path: PLAIN and SCRAM-SHA-256/512 (the mechanisms librdkafka is
//! given as `sasl.mechanism`, with `sasl.username` and `sasl.password`), spoken after the TLS
//! handshake and ApiVersions, as rskafka and the Java client do: SaslHandshake names the
//! mechanism, SaslAuthenticate carries each step. OAUTHBEARER and GSSAPI stay with librdkafka.

use std::time::Duration;

use super::broker::{Broker, Refusal};
use super::property;
use super::scram::{nonce, Hash, Scram};
use crate::protocol::error::{error_name, UNSUPPORTED_SASL_MECHANISM};
use crate::protocol::sasl::{self, Authenticated};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    Plain,
    Scram(Hash),
}

/// A cluster's SASL credentials (the password never shows in `Debug`).
#[derive(Clone)]
pub struct Sasl {
    mechanism: Mechanism,
    user: String,
    password: String,
}

impl std::fmt::Debug for Sasl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Sasl {{ mechanism: {}, user: {:?} }}",
            self.name(),
            self.user
        )
    }
}

impl Sasl {
    /// The SASL settings of this configuration, or why the direct path does not serve it.
    pub fn from_config(config: &[(String, String)]) -> Result<Self, String> {
        let name = property(config, "sasl.mechanism")
            .or_else(|| property(config, "sasl.mechanisms"))
            .unwrap_or("GSSAPI");
        let mechanism = match name.to_ascii_uppercase().as_str() {
            "PLAIN" => Mechanism::Plain,
            "SCRAM-SHA-256" => Mechanism::Scram(Hash::Sha256),
            "SCRAM-SHA-512" => Mechanism::Scram(Hash::Sha512),
            _ => {
                return Err(format!(
                    "sasl.mechanism is {name} (the direct path speaks PLAIN and SCRAM)"
                ))
            }
        };
        Ok(Sasl {
            mechanism,
            user: property(config, "sasl.username")
                .unwrap_or_default()
                .to_string(),
            password: property(config, "sasl.password")
                .unwrap_or_default()
                .to_string(),
        })
    }

    /// The mechanism's name as Kafka knows it.
    pub fn name(&self) -> &'static str {
        match self.mechanism {
            Mechanism::Plain => "PLAIN",
            Mechanism::Scram(Hash::Sha256) => "SCRAM-SHA-256",
            Mechanism::Scram(Hash::Sha512) => "SCRAM-SHA-512",
        }
    }

    /// Authenticate `broker`'s connection; how long the broker keeps the session, if it says.
    pub fn authenticate(&self, broker: &mut Broker) -> Result<Option<Duration>, Refusal> {
        let mut body = Vec::new();
        let name = self.name();
        broker
            .call(|c, id| sasl::handshake_request(c, id, name), &mut body)
            .map_err(|no| Refusal::Unreachable(no.why))?;
        let handshake = sasl::parse_handshake(&body).map_err(|m| malformed(m.0))?;
        if handshake.error == UNSUPPORTED_SASL_MECHANISM {
            return Err(Refusal::Refused(format!(
                "the broker does not enable SASL mechanism {name} (it enables {})",
                handshake.mechanisms.join(", ")
            )));
        }
        if handshake.error != 0 {
            return Err(self.refused(handshake.error, None));
        }
        let last = match self.mechanism {
            Mechanism::Plain => {
                let step = format!("\0{}\0{}", self.user, self.password);
                self.step(broker, step.as_bytes(), &mut body)?
            }
            Mechanism::Scram(hash) => {
                let nonce = nonce().map_err(Refusal::Unreachable)?;
                let mut scram = Scram::new(hash, &self.user, &self.password, &nonce);
                let first = self.step(broker, scram.first().as_bytes(), &mut body)?;
                let answer = scram
                    .answer(&text(&first.step)?)
                    .map_err(Refusal::Refused)?;
                let last = self.step(broker, answer.as_bytes(), &mut body)?;
                scram.verify(&text(&last.step)?).map_err(Refusal::Refused)?;
                last
            }
        };
        Ok((last.session_lifetime_ms > 0)
            .then(|| Duration::from_millis(last.session_lifetime_ms as u64)))
    }

    fn step(
        &self,
        broker: &mut Broker,
        step: &[u8],
        body: &mut Vec<u8>,
    ) -> Result<Authenticated, Refusal> {
        broker
            .call(|c, id| sasl::authenticate_request(c, id, step), body)
            .map_err(|no| Refusal::Unreachable(no.why))?;
        let answer = sasl::parse_authenticate(body).map_err(|m| malformed(m.0))?;
        if answer.error != 0 {
            return Err(self.refused(answer.error, answer.message));
        }
        Ok(answer)
    }

    fn refused(&self, code: i16, message: Option<String>) -> Refusal {
        let why = message
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| format!("error code {code} ({})", error_name(code)));
        Refusal::Refused(format!("SASL/{} authentication failed: {why}", self.name()))
    }
}

fn malformed(what: &str) -> Refusal {
    Refusal::Refused(format!("a malformed SASL answer: {what}"))
}

fn text(step: &[u8]) -> Result<String, Refusal> {
    String::from_utf8(step.to_vec()).map_err(|_| malformed("a SCRAM message that is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_config::config;

    #[test]
    fn mechanisms_from_the_configuration_and_no_password_in_debug() {
        let sasl = Sasl::from_config(&config(&[
            ("sasl.mechanisms", "scram-sha-512"),
            ("sasl.username", "reader"),
            ("sasl.password", "hunter2"),
        ]))
        .unwrap();
        assert_eq!(sasl.name(), "SCRAM-SHA-512");
        assert!(!format!("{sasl:?}").contains("hunter2"));
        let plain = [("sasl.mechanism", "PLAIN")];
        assert_eq!(Sasl::from_config(&config(&plain)).unwrap().name(), "PLAIN");
        for (k, v) in [
            ("sasl.mechanism", "OAUTHBEARER"),
            ("sasl.mechanisms", "GSSAPI"),
        ] {
            let why = Sasl::from_config(&config(&[(k, v)])).unwrap_err();
            assert!(why.contains(v), "{why}");
        }
        assert!(Sasl::from_config(&[]).unwrap_err().contains("GSSAPI"));
    }
}
