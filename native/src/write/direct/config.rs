//! What the direct produce path takes from a cluster's producer configuration, or why it does
//! not serve it (librdkafka's producer writes then): an idempotent producer (acks=all), or a
//! transactional one (`transactional.id`, `transaction.timeout.ms`), no compression, the partitioner `murmur2_random` (the sink's default:
//! where Spark's sink puts keyed rows), every `security.protocol` the direct fetch path speaks.

use std::time::Duration;

use super::batches::Limits;
use crate::connection::{property, security, Connection};
use crate::read::direct::config::{number, request_timeout, servers};

/// What the direct produce path needs from a producer configuration.
#[derive(Debug, Clone)]
pub struct ProduceConfig {
    pub connection: Connection,
    /// `bootstrap.servers` (or `metadata.broker.list`), asked for metadata.
    pub bootstrap: Vec<(String, u16)>,
    pub limits: Limits,
    /// `message.timeout.ms` (or `delivery.timeout.ms`): a record not acknowledged by then fails.
    pub message_timeout: Duration,
    /// How long a broker may take to have a batch replicated (`request.timeout.ms`, sent in
    /// each Produce request).
    pub broker_timeout_ms: i32,
    /// `retry.backoff.ms`: the pause before batches are sent again.
    pub retry_backoff: Duration,
    /// `max.in.flight.requests.per.connection`, at most 5 (idempotence's bound).
    pub max_in_flight: usize,
    /// `allow.auto.create.topics` (librdkafka's producer default: true).
    pub auto_create: bool,
    /// `linger.ms` (or `queue.buffering.max.ms`): how long a batch stays open for more records.
    pub linger: Duration,
    /// `transactional.id`: the producer is transactional.
    pub transactional_id: Option<String>,
    /// `transaction.timeout.ms` (librdkafka's default: 60 s): how long the coordinator lets a
    /// transaction stay open before it aborts it.
    pub transaction_timeout_ms: i32,
}

fn is(config: &[(String, String)], key: &str, default: &str, wanted: &[&str]) -> bool {
    let value = property(config, key).unwrap_or(default);
    wanted.iter().any(|w| value.eq_ignore_ascii_case(w))
}

impl ProduceConfig {
    /// The direct produce path's settings for this configuration, or why it does not apply.
    pub fn from_config(config: &[(String, String)]) -> Result<Self, String> {
        let transactional_id = property(config, "transactional.id")
            .filter(|t| !t.is_empty())
            .map(str::to_string);
        // A transactional producer is idempotent (librdkafka's and Java's imply it).
        let idempotence = if transactional_id.is_some() {
            "true"
        } else {
            "false"
        };
        if !is(config, "enable.idempotence", idempotence, &["true"]) {
            return Err("enable.idempotence is not true".into());
        }
        if !is(config, "acks", "all", &["all", "-1"])
            || !is(config, "request.required.acks", "all", &["all", "-1"])
        {
            return Err("acks is not all".into());
        }
        for key in ["compression.type", "compression.codec"] {
            if !is(config, key, "none", &["none"]) {
                return Err(format!("{key} is not none"));
            }
        }
        if !is(
            config,
            "partitioner",
            "consistent_random",
            &["murmur2_random"],
        ) {
            let p = property(config, "partitioner").unwrap_or("consistent_random");
            return Err(format!(
                "partitioner is {p} (the direct produce path partitions as murmur2_random)"
            ));
        }
        let (tls, sasl) = security(config)?;
        let bootstrap = property(config, "bootstrap.servers")
            .or_else(|| property(config, "metadata.broker.list"))
            .map(servers)
            .transpose()?
            .unwrap_or_default();
        let transaction_timeout = number(config, "transaction.timeout.ms", 60_000)?;
        let transaction_timeout_ms = transaction_timeout.max(1);
        // As librdkafka: a transactional producer's records wait no longer than its
        // transaction may stay open, unless the message timeout is set.
        let unset = match transactional_id {
            Some(_) => transaction_timeout_ms,
            None => 300_000,
        };
        let message_timeout = match property(config, "message.timeout.ms") {
            Some(_) => number(config, "message.timeout.ms", unset)?,
            None => number(config, "delivery.timeout.ms", unset)?,
        };
        let message_timeout = Duration::from_millis(message_timeout.max(1) as u64);
        let max_record = number(config, "message.max.bytes", 1_000_000)?.max(1) as usize;
        let limits = Limits {
            batch_size: (number(config, "batch.size", 1_000_000)?.max(1) as usize).min(max_record),
            batch_records: number(config, "batch.num.messages", 10_000)?.max(1),
            max_record,
        };
        let in_flight = number(config, "max.in.flight.requests.per.connection", 5)?;
        let in_flight = number(config, "max.in.flight", in_flight)?;
        let request = request_timeout(config)?;
        Ok(ProduceConfig {
            connection: Connection {
                client_id: property(config, "client.id")
                    .unwrap_or("rdkafka")
                    .to_string(),
                // A request outlives no record: unanswered past the message timeout, it fails.
                request_timeout: request.min(message_timeout),
                held: Duration::ZERO,
                max_response: number(config, "receive.message.max.bytes", 100_000_000)?.max(1024)
                    as usize,
                tls,
                sasl,
            },
            bootstrap,
            limits,
            message_timeout,
            broker_timeout_ms: request.as_millis().min(i32::MAX as u128) as i32,
            retry_backoff: Duration::from_millis(
                number(config, "retry.backoff.ms", 100)?.max(0) as u64
            ),
            max_in_flight: in_flight.clamp(1, 5) as usize,
            auto_create: is(config, "allow.auto.create.topics", "true", &["true"]),
            linger: Duration::from_millis(
                match property(config, "linger.ms") {
                    Some(_) => number(config, "linger.ms", 5)?,
                    None => number(config, "queue.buffering.max.ms", 5)?,
                }
                .max(0) as u64,
            ),
            transactional_id,
            transaction_timeout_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_config::config;

    const SINK: [(&str, &str); 3] = [
        ("bootstrap.servers", "b:9092"),
        ("enable.idempotence", "true"),
        ("partitioner", "murmur2_random"),
    ];

    fn with(extra: &[(&str, &str)]) -> Result<ProduceConfig, String> {
        let pairs: Vec<(&str, &str)> = SINK.iter().chain(extra).copied().collect();
        ProduceConfig::from_config(&config(&pairs))
    }

    #[test]
    fn the_sinks_idempotent_producer_is_served() {
        let c = with(&[("message.timeout.ms", "3000"), ("batch.size", "2000000")]).unwrap();
        assert_eq!(c.message_timeout, Duration::from_secs(3));
        assert_eq!(c.connection.request_timeout, Duration::from_secs(3));
        assert_eq!(c.limits.batch_size, 1_000_000);
        assert_eq!((c.max_in_flight, c.bootstrap.len()), (5, 1));
        assert!(c.auto_create);
        assert_eq!(c.transactional_id, None);
    }

    #[test]
    fn a_transactional_producer_is_served_its_records_waiting_no_longer_than_a_transaction() {
        let c = with(&[("transactional.id", "s.east.0")]).unwrap();
        assert_eq!(c.transactional_id.as_deref(), Some("s.east.0"));
        assert_eq!(c.transaction_timeout_ms, 60_000);
        assert_eq!(c.message_timeout, Duration::from_secs(60));
        let pairs = [
            ("bootstrap.servers", "b:9092"),
            ("transactional.id", "t"),
            ("partitioner", "murmur2_random"),
            ("transaction.timeout.ms", "90000"),
            ("message.timeout.ms", "5000"),
        ];
        let c = ProduceConfig::from_config(&config(&pairs)).unwrap();
        assert_eq!(c.transaction_timeout_ms, 90_000);
        assert_eq!(c.message_timeout, Duration::from_secs(5));
        assert!(with(&[("transactional.id", "t"), ("enable.idempotence", "false")]).is_err());
    }

    #[test]
    fn anything_else_is_left_to_librdkafka_naming_why() {
        for (k, v) in [
            ("enable.idempotence", "false"),
            ("acks", "1"),
            ("compression.type", "lz4"),
            ("partitioner", "murmur2"),
            ("security.protocol", "SASL_SOMETHING"),
        ] {
            let why = with(&[(k, v)]).unwrap_err();
            assert!(why.contains(k), "{k}: {why}");
        }
    }
}
