//! The direct fetch path: Fetch requests sent straight to each partition's leader over a plain
//! TCP connection, and their record batches parsed in place into the Arrow builders.
//!
//! librdkafka's consumer allocates, queues and frees one op per record (~0.34 µs/record of the
//! core's ~0.45, docs/benchmarks.md); this path reads the same bytes with none of that. It is
//! taken only where it reads exactly what librdkafka would: a PLAINTEXT cluster, no follower
//! fetching (`client.rack`), no CRC checks asked for, brokers that speak Fetch v11. Anything
//! else it meets while reading (an error code, an old-format batch, a lost
//! connection, no progress) hands the remaining ranges to librdkafka's consumer from where the
//! direct path stopped, so librdkafka's semantics (data loss, deleted topics, leader changes,
//! the "stuck" message) stay the only ones.
//!
//! [`wire`]: the request and response encoding; [`records`]: record batches and read_committed;
//! [`codec`]: gzip, snappy, lz4 and zstd.

pub mod codec;
pub mod records;
pub mod wire;

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::ops::Range;
use std::time::Duration;

use wire::{Cursor, FetchLimits, Malformed};

/// What the direct path needs from a cluster's consumer configuration.
#[derive(Debug, Clone)]
pub struct DirectConfig {
    pub client_id: String,
    pub limits: FetchLimits,
    /// How long a connect or a response may take before the path gives up.
    pub socket_timeout: Duration,
}

fn property<'a>(config: &'a [(String, String)], key: &str) -> Option<&'a str> {
    config
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.trim())
}

fn number(config: &[(String, String)], key: &str, default: i32) -> Result<i32, String> {
    match property(config, key) {
        None => Ok(default),
        Some(v) => v.parse().map_err(|_| format!("{key}={v} is not a number")),
    }
}

impl DirectConfig {
    /// The direct path's settings for this configuration, or why it does not apply (the
    /// consumer's librdkafka reads the cluster then).
    pub fn from_config(config: &[(String, String)]) -> Result<Self, String> {
        let protocol = property(config, "security.protocol").unwrap_or("plaintext");
        if !protocol.eq_ignore_ascii_case("plaintext") {
            return Err(format!("security.protocol is {protocol}"));
        }
        if property(config, "client.rack").is_some_and(|r| !r.is_empty()) {
            return Err("client.rack is set (follower fetching)".into());
        }
        if property(config, "check.crcs").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Err("check.crcs is true".into());
        }
        let isolation = property(config, "isolation.level").unwrap_or("read_committed");
        let partition_max_bytes = match property(config, "max.partition.fetch.bytes") {
            Some(_) => number(config, "max.partition.fetch.bytes", 1_048_576)?,
            None => number(config, "fetch.message.max.bytes", 1_048_576)?,
        };
        Ok(DirectConfig {
            client_id: property(config, "client.id")
                .unwrap_or("rdkafka")
                .to_string(),
            limits: FetchLimits {
                max_wait_ms: number(config, "fetch.wait.max.ms", 500)?,
                min_bytes: number(config, "fetch.min.bytes", 1)?,
                max_bytes: number(config, "fetch.max.bytes", 52_428_800)?,
                partition_max_bytes,
                read_committed: isolation.eq_ignore_ascii_case("read_committed"),
            },
            socket_timeout: Duration::from_millis(
                number(config, "socket.timeout.ms", 60_000)?.max(1) as u64,
            ),
        })
    }
}

/// A connection to one broker; requests go one at a time.
pub struct Broker {
    stream: TcpStream,
    correlation: i32,
    client_id: String,
}

impl Broker {
    /// Connect, and check that the broker speaks Fetch v11.
    pub fn connect(host: &str, port: u16, config: &DirectConfig) -> Result<Self, String> {
        let addrs = (host, port)
            .to_socket_addrs()
            .map_err(|e| format!("resolving {host}:{port} failed: {e}"))?;
        let mut last = format!("{host}:{port} has no address");
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, config.socket_timeout) {
                Ok(stream) => {
                    let io = |e: std::io::Error| format!("setting up {host}:{port} failed: {e}");
                    stream.set_nodelay(true).map_err(io)?;
                    stream
                        .set_read_timeout(Some(config.socket_timeout))
                        .map_err(io)?;
                    stream
                        .set_write_timeout(Some(config.socket_timeout))
                        .map_err(io)?;
                    let mut broker = Broker {
                        stream,
                        correlation: 0,
                        client_id: config.client_id.clone(),
                    };
                    let mut body = Vec::new();
                    broker.call(wire::api_versions_request, &mut body)?;
                    let offered = wire::offers_fetch(&body).map_err(|m| m.0.to_string())?;
                    if !offered {
                        return Err(format!("{host}:{port} does not offer Fetch v11"));
                    }
                    return Ok(broker);
                }
                Err(e) => last = format!("connecting to {host}:{port} failed: {e}"),
            }
        }
        Err(last)
    }

    /// Send the request `build` writes for the next correlation id; `body` receives the
    /// response after its header.
    pub fn call(
        &mut self,
        build: impl FnOnce(i32, &str) -> Vec<u8>,
        body: &mut Vec<u8>,
    ) -> Result<(), String> {
        self.correlation = self.correlation.wrapping_add(1);
        let request = build(self.correlation, &self.client_id);
        let io = |e: std::io::Error| format!("talking to the broker failed: {e}");
        self.stream.write_all(&request).map_err(io)?;
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size).map_err(io)?;
        let size = i32::from_be_bytes(size);
        if size < 4 {
            return Err(format!("the broker sent a response of {size} bytes"));
        }
        body.clear();
        body.resize(size as usize, 0);
        self.stream.read_exact(body).map_err(io)?;
        let correlation = i32::from_be_bytes([body[0], body[1], body[2], body[3]]);
        if correlation != self.correlation {
            return Err(format!(
                "the broker answered request {correlation}, not {}",
                self.correlation
            ));
        }
        body.drain(..4);
        Ok(())
    }
}

/// One partition's answer in a Fetch response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionData {
    pub topic: String,
    pub partition: i32,
    pub error: i16,
    /// (producer id, first offset) of the aborted transactions in the records.
    pub aborted: Vec<(i64, i64)>,
    /// Where the partition's record batches are in the response body.
    pub records: Range<usize>,
}

/// The partitions of a Fetch v11 response body (after the response header); an error when
/// the response as a whole failed.
pub fn parse_fetch(body: &[u8]) -> Result<Vec<PartitionData>, String> {
    let bad = |m: Malformed| format!("a malformed Fetch response: {}", m.0);
    let mut c = Cursor::new(body);
    c.i32().map_err(bad)?; // throttle time
    let error = c.i16().map_err(bad)?;
    if error != 0 {
        return Err(format!("the Fetch request failed with error code {error}"));
    }
    c.i32().map_err(bad)?; // session id
    let mut out = Vec::new();
    for _ in 0..c.count().map_err(bad)? {
        let topic = c.string().map_err(bad)?.unwrap_or_default().to_string();
        for _ in 0..c.count().map_err(bad)? {
            let partition = c.i32().map_err(bad)?;
            let error = c.i16().map_err(bad)?;
            c.i64().map_err(bad)?; // high watermark
            c.i64().map_err(bad)?; // last stable offset
            c.i64().map_err(bad)?; // log start offset
            let mut aborted = Vec::new();
            for _ in 0..c.count().map_err(bad)? {
                aborted.push((c.i64().map_err(bad)?, c.i64().map_err(bad)?));
            }
            c.i32().map_err(bad)?; // preferred read replica: none asked for (no rack id)
            let records = c.bytes_range().map_err(bad)?;
            out.push(PartitionData {
                topic: topic.clone(),
                partition,
                error,
                aborted,
                records,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
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
            ("security.protocol", "SASL_SSL"),
            ("client.rack", "dc1"),
            ("check.crcs", "true"),
            ("fetch.wait.max.ms", "soon"),
        ] {
            let why = DirectConfig::from_config(&config(&[(k, v)])).unwrap_err();
            assert!(why.contains(k), "{why}");
        }
        assert!(DirectConfig::from_config(&config(&[("security.protocol", "PLAINTEXT")])).is_ok());
    }

    #[test]
    fn fetch_responses_name_partitions_errors_and_record_ranges() {
        let mut b = Vec::new();
        b.extend_from_slice(&0i32.to_be_bytes());
        b.extend_from_slice(&0i16.to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes());
        b.extend_from_slice(&1i32.to_be_bytes());
        b.extend_from_slice(&1i16.to_be_bytes());
        b.push(b't');
        b.extend_from_slice(&2i32.to_be_bytes());
        for (p, err, aborted, records) in [(0i32, 0i16, true, &b"abc"[..]), (1, 1, false, &b""[..])]
        {
            b.extend_from_slice(&p.to_be_bytes());
            b.extend_from_slice(&err.to_be_bytes());
            b.extend_from_slice(&[0u8; 24]);
            if aborted {
                b.extend_from_slice(&1i32.to_be_bytes());
                b.extend_from_slice(&5i64.to_be_bytes());
                b.extend_from_slice(&9i64.to_be_bytes());
            } else {
                b.extend_from_slice(&(-1i32).to_be_bytes());
            }
            b.extend_from_slice(&(-1i32).to_be_bytes());
            b.extend_from_slice(&(records.len() as i32).to_be_bytes());
            b.extend_from_slice(records);
        }
        let parts = parse_fetch(&b).unwrap();
        assert_eq!(parts[0].aborted, vec![(5, 9)]);
        assert_eq!(&b[parts[0].records.clone()], b"abc");
        assert_eq!((parts[1].partition, parts[1].error), (1, 1));
        assert!(parts[1].records.is_empty());
        assert!(parse_fetch(&b[..b.len() - 2]).is_err());
    }
}
