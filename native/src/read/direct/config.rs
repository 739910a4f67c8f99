//! What the direct fetch path takes from a cluster's consumer configuration, or why it does not
//! serve the cluster (librdkafka's consumer reads it then): every `security.protocol`, with TLS
//! ([`crate::connection::tls`]) and SASL PLAIN or SCRAM ([`crate::connection::sasl`]); not `client.rack` (its requests
//! carry no rack id). How long a request may go unanswered: [`request_timeout`].

use std::time::Duration;

pub(super) use crate::connection::property;
use crate::connection::{security, Connection};
use crate::protocol::fetch::FetchLimits;

/// What the direct path needs from a cluster's consumer configuration.
#[derive(Debug, Clone)]
pub struct DirectConfig {
    /// How to connect to the cluster's brokers: `request_timeout` is how long a connect or a
    /// request's whole answer may take before the path gives up on the connection
    /// ([`request_timeout`]); a Fetch response may take `fetch.wait.max.ms` longer (`held`: the
    /// broker holds it that long when it has no data). `max_response` is also the largest
    /// decompressed batch this path takes (`receive.message.max.bytes`, as librdkafka bounds a
    /// response); larger ones are handed to librdkafka.
    pub connection: Connection,
    pub limits: FetchLimits,
    /// Whether each record batch's CRC-32C is checked (`check.crcs`; on unless turned off, as
    /// the Java consumer under Spark's source checks them).
    pub check_crcs: bool,
    /// The bootstrap servers (`bootstrap.servers`, or `metadata.broker.list`), asked in turn
    /// for the partitions' leaders.
    pub bootstrap: Vec<(String, u16)>,
}

/// `host:port` pairs of a comma-separated server list (a `protocol://` prefix and IPv6
/// brackets allowed, as librdkafka takes them).
pub fn servers(list: &str) -> Result<Vec<(String, u16)>, String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|server| {
            let address = server.rsplit("://").next().unwrap_or(server);
            let (host, port) = address
                .rsplit_once(':')
                .ok_or_else(|| format!("bootstrap server {server} has no port"))?;
            let port = port
                .parse()
                .map_err(|_| format!("bootstrap server {server} has no port"))?;
            Ok((
                host.trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_string(),
                port,
            ))
        })
        .collect()
}

pub fn number(config: &[(String, String)], key: &str, default: i32) -> Result<i32, String> {
    match property(config, key) {
        None => Ok(default),
        Some(v) => v.parse().map_err(|_| format!("{key}={v} is not a number")),
    }
}

/// The Java consumer's bound on a request without an answer (`request.timeout.ms`'s default).
pub const JAVA_REQUEST_TIMEOUT_MS: i32 = 30_000;

/// How long a request may go unanswered before its connection is given up: the user's
/// `request.timeout.ms` (the Java consumer's bound, which Spark's users write) or
/// `socket.timeout.ms` (librdkafka's), the shorter when both are set (each client would give
/// up by then); neither set, the Java consumer's default, 30 s, not librdkafka's 60 s: a
/// connection that went silent is dropped after 30 s, as the Java consumer drops it.
pub fn request_timeout(config: &[(String, String)]) -> Result<Duration, String> {
    let set = |key| {
        property(config, key)
            .is_some()
            .then(|| number(config, key, 0))
            .transpose()
    };
    let ms = match (set("request.timeout.ms")?, set("socket.timeout.ms")?) {
        (Some(request), Some(socket)) => request.min(socket),
        (Some(one), None) | (None, Some(one)) => one,
        (None, None) => JAVA_REQUEST_TIMEOUT_MS,
    };
    Ok(Duration::from_millis(ms.max(1) as u64))
}

impl DirectConfig {
    /// [`DirectConfig::from_config`], or, when `direct` is false (tests reading through
    /// librdkafka on purpose), why not.
    pub fn chosen(config: &[(String, String)], direct: bool) -> Result<Self, String> {
        if direct {
            Self::from_config(config)
        } else {
            Err("the direct path is turned off (direct=False)".into())
        }
    }

    /// The direct path's settings for this configuration, or why it does not apply (the
    /// consumer's librdkafka reads the cluster then).
    pub fn from_config(config: &[(String, String)]) -> Result<Self, String> {
        let (tls, sasl) = security(config)?;
        if property(config, "client.rack").is_some_and(|r| !r.is_empty()) {
            return Err("client.rack is set (follower fetching)".into());
        }
        let bootstrap = property(config, "bootstrap.servers")
            .or_else(|| property(config, "metadata.broker.list"))
            .map(servers)
            .transpose()?
            .unwrap_or_default();
        let isolation = property(config, "isolation.level").unwrap_or("read_committed");
        let partition_max_bytes = match property(config, "max.partition.fetch.bytes") {
            Some(_) => number(config, "max.partition.fetch.bytes", 1_048_576)?,
            None => number(config, "fetch.message.max.bytes", 1_048_576)?,
        };
        let limits = FetchLimits {
            max_wait_ms: number(config, "fetch.wait.max.ms", 500)?,
            min_bytes: number(config, "fetch.min.bytes", 1)?,
            max_bytes: number(config, "fetch.max.bytes", 52_428_800)?,
            partition_max_bytes,
            read_committed: isolation.eq_ignore_ascii_case("read_committed"),
        };
        Ok(DirectConfig {
            connection: Connection {
                client_id: property(config, "client.id")
                    .unwrap_or("rdkafka")
                    .to_string(),
                request_timeout: request_timeout(config)?,
                held: Duration::from_millis(limits.max_wait_ms.max(0) as u64),
                max_response: number(config, "receive.message.max.bytes", 100_000_000)?.max(1024)
                    as usize,
                tls,
                sasl,
            },
            limits,
            check_crcs: !property(config, "check.crcs")
                .is_some_and(|v| v.eq_ignore_ascii_case("false")),
            bootstrap,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::sasl::Sasl;
    use crate::test_config::config;

    #[test]
    fn direct_only_where_it_reads_what_librdkafka_would() {
        let plain = DirectConfig::from_config(&config(&[
            ("bootstrap.servers", "x:1"),
            ("isolation.level", "read_uncommitted"),
            ("max.partition.fetch.bytes", "4194304"),
        ]))
        .unwrap();
        assert!(!plain.limits.read_committed);
        assert_eq!(plain.limits.partition_max_bytes, 4_194_304);
        assert!(
            DirectConfig::from_config(&[])
                .unwrap()
                .limits
                .read_committed
        );
        for (k, v) in [
            ("security.protocol", "SASL_SOMETHING"),
            ("client.rack", "dc1"),
            ("fetch.wait.max.ms", "soon"),
        ] {
            let why = DirectConfig::from_config(&config(&[(k, v)])).unwrap_err();
            assert!(why.contains(k), "{why}");
        }
        let plain = DirectConfig::from_config(&config(&[("security.protocol", "PLAINTEXT")]));
        let plain = plain.unwrap();
        assert!(
            plain.check_crcs && plain.connection.tls.is_none() && plain.connection.sasl.is_none()
        );
        let off = DirectConfig::from_config(&config(&[("check.crcs", "false")])).unwrap();
        assert!(!off.check_crcs);
    }

    #[test]
    fn a_request_is_given_up_on_after_the_users_bound_else_the_java_consumers() {
        let ms = |pairs: &[(&str, &str)]| {
            let c = DirectConfig::from_config(&config(pairs)).map(|c| c.connection.request_timeout);
            c.map(|d| d.as_millis())
        };
        assert_eq!(ms(&[]), Ok(30_000));
        assert_eq!(ms(&[("request.timeout.ms", "3000")]), Ok(3_000));
        assert_eq!(ms(&[("socket.timeout.ms", "90000")]), Ok(90_000));
        let both = [
            ("request.timeout.ms", "3000"),
            ("socket.timeout.ms", "1000"),
        ];
        assert_eq!(ms(&both), Ok(1_000));
        let both = [
            ("request.timeout.ms", "40000"),
            ("socket.timeout.ms", "5000"),
        ];
        assert_eq!(ms(&both), Ok(5_000));
        let why = ms(&[("request.timeout.ms", "soon")]).unwrap_err();
        assert!(why.contains("request.timeout.ms=soon"), "{why}");
    }

    #[test]
    fn bootstrap_servers_as_librdkafka_takes_them() {
        let list = "b1:9092, SSL://b2:9093,[::1]:9094";
        let c = DirectConfig::from_config(&config(&[("bootstrap.servers", list)])).unwrap();
        let expected = [("b1", 9092), ("b2", 9093), ("::1", 9094)];
        let expected: Vec<(String, u16)> =
            expected.iter().map(|(h, p)| (h.to_string(), *p)).collect();
        assert_eq!(c.bootstrap, expected);
        let why = DirectConfig::from_config(&config(&[("bootstrap.servers", "b1")])).unwrap_err();
        assert!(why.contains("b1 has no port"), "{why}");
    }

    #[test]
    fn tls_and_sasl_from_the_properties_librdkafka_takes() {
        let secured = DirectConfig::from_config(&config(&[
            ("security.protocol", "sasl_ssl"),
            ("sasl.mechanism", "SCRAM-SHA-256"),
            ("sasl.username", "u"),
            ("sasl.password", "hunter2"),
            ("ssl.endpoint.identification.algorithm", "none"),
        ]))
        .unwrap();
        assert!(secured.connection.tls.is_some());
        assert_eq!(
            secured.connection.sasl.as_ref().map(Sasl::name),
            Some("SCRAM-SHA-256")
        );
        assert!(!format!("{secured:?}").contains("hunter2"));
        for (k, v) in [
            ("ssl.crl.location", "/x"),
            ("ssl.engine.id", "pkcs11"),
            ("ssl.ca.location", "/nowhere/ca.pem"),
        ] {
            let tls = [("security.protocol", "SSL"), (k, v)];
            let why = DirectConfig::from_config(&config(&tls)).unwrap_err();
            assert!(why.contains(k), "{why}");
        }
        let sasl = [
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "GSSAPI"),
        ];
        assert!(DirectConfig::from_config(&config(&sasl))
            .unwrap_err()
            .contains("GSSAPI"));
    }
}
