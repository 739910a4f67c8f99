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

pub mod aborted;
pub mod codec;
pub mod records;
#[cfg(test)]
pub mod sample;
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
    /// How long a connect or a response may take before the path gives up (a Fetch response
    /// may take `fetch.wait.max.ms` longer: the broker holds it that long when it has no data).
    pub socket_timeout: Duration,
    /// The largest response, and the largest decompressed batch, this path takes
    /// (`receive.message.max.bytes`, as librdkafka bounds a response); larger ones are handed
    /// to librdkafka.
    pub max_response: usize,
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
            max_response: number(config, "receive.message.max.bytes", 100_000_000)?.max(1024)
                as usize,
        })
    }
}

/// A connection to one broker; requests go one at a time.
pub struct Broker {
    stream: TcpStream,
    correlation: i32,
    client_id: String,
    max_response: usize,
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
                    let held = Duration::from_millis(config.limits.max_wait_ms.max(0) as u64);
                    stream
                        .set_read_timeout(Some(config.socket_timeout + held))
                        .map_err(io)?;
                    stream
                        .set_write_timeout(Some(config.socket_timeout))
                        .map_err(io)?;
                    let mut broker = Broker {
                        stream,
                        correlation: 0,
                        client_id: config.client_id.clone(),
                        max_response: config.max_response,
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
    /// response after its header. A response larger than `max_response`, or answering another
    /// request, is refused before its body is read or allocated (the connection is then unusable:
    /// the caller drops it).
    pub fn call(
        &mut self,
        build: impl FnOnce(i32, &str) -> Vec<u8>,
        body: &mut Vec<u8>,
    ) -> Result<(), String> {
        self.correlation = self.correlation.wrapping_add(1);
        let request = build(self.correlation, &self.client_id);
        let io = |e: std::io::Error| format!("talking to the broker failed: {e}");
        self.stream.write_all(&request).map_err(io)?;
        let mut header = [0u8; 8];
        self.stream.read_exact(&mut header[..4]).map_err(io)?;
        let size = i32::from_be_bytes([header[0], header[1], header[2], header[3]]);
        if size < 4 {
            return Err(format!("the broker sent a response of {size} bytes"));
        }
        if size as usize > self.max_response {
            return Err(format!(
                "the broker sent a response of {size} bytes, more than \
                 receive.message.max.bytes ({})",
                self.max_response
            ));
        }
        self.stream.read_exact(&mut header[4..]).map_err(io)?;
        let correlation = i32::from_be_bytes([header[4], header[5], header[6], header[7]]);
        if correlation != self.correlation {
            return Err(format!(
                "the broker answered request {correlation}, not {}",
                self.correlation
            ));
        }
        body.clear();
        body.resize(size as usize - 4, 0);
        self.stream.read_exact(body).map_err(io)
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

/// A Fetch v11 response body (after the response header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// How long the broker asks the client to wait before its next request (a quota, KIP-219).
    pub throttle: Duration,
    pub partitions: Vec<PartitionData>,
}

/// The throttle time and partitions of a Fetch v11 response body; an error when the response
/// as a whole failed.
pub fn parse_fetch(body: &[u8]) -> Result<Fetched, String> {
    let bad = |m: Malformed| format!("a malformed Fetch response: {}", m.0);
    let mut c = Cursor::new(body);
    let throttle = Duration::from_millis(c.i32().map_err(bad)?.max(0) as u64);
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
    Ok(Fetched {
        throttle,
        partitions: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_config::config;
    use std::net::TcpListener;

    /// A stand-in broker on loopback (no real broker sends these answers) that answers the
    /// first request with `reply`, and a connection to it.
    fn answering(reply: Vec<u8>) -> Broker {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut size = [0u8; 4];
            s.read_exact(&mut size).unwrap();
            let mut request = vec![0; i32::from_be_bytes(size) as usize];
            s.read_exact(&mut request).unwrap();
            s.write_all(&reply).unwrap();
            let _ = s.read(&mut [0u8; 1]); // open until the client hangs up
        });
        Broker {
            stream: TcpStream::connect(addr).unwrap(),
            correlation: 0,
            client_id: "test".into(),
            max_response: 100_000_000,
        }
    }

    fn reply(size: i32, correlation: i32, body: &[u8]) -> Vec<u8> {
        let mut r = size.to_be_bytes().to_vec();
        r.extend_from_slice(&correlation.to_be_bytes());
        r.extend_from_slice(body);
        r
    }

    #[test]
    fn responses_past_the_bound_or_for_another_request_are_refused_unread() {
        let request = |c: i32, id: &str| wire::api_versions_request(c, id);
        let mut body = Vec::new();
        let huge = answering(reply(i32::MAX, 1, b"")).call(request, &mut body);
        assert!(huge
            .unwrap_err()
            .contains("2147483647 bytes, more than receive.message"));
        assert_eq!(body.capacity(), 0);
        let other = answering(reply(1 << 20, 5, b"")).call(request, &mut body);
        assert_eq!(other.unwrap_err(), "the broker answered request 5, not 1");
        assert_eq!(body.capacity(), 0);
        answering(reply(7, 1, b"abc"))
            .call(request, &mut body)
            .unwrap();
        assert_eq!(body, b"abc");
    }

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
        b.extend_from_slice(&250i32.to_be_bytes());
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
        let fetched = parse_fetch(&b).unwrap();
        assert_eq!(fetched.throttle, Duration::from_millis(250));
        let parts = fetched.partitions;
        assert_eq!(parts[0].aborted, vec![(5, 9)]);
        assert_eq!(&b[parts[0].records.clone()], b"abc");
        assert_eq!((parts[1].partition, parts[1].error), (1, 1));
        assert!(parts[1].records.is_empty());
        assert!(parse_fetch(&b[..b.len() - 2]).is_err());
    }
}
