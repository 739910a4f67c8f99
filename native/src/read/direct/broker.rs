//! Connections to brokers: one [`Broker`] per broker, requests sent one at a time, each response
//! read whole after its size and correlation id are checked; [`Brokers`] keeps them across the
//! readers of one pooled consumer.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use openssl::ssl::SslStream;

use super::config::DirectConfig;
use crate::protocol::api_versions;
use crate::protocol::fetch::{FETCH, FETCH_VERSION};
use crate::protocol::metadata::{METADATA, METADATA_VERSION};
use crate::protocol::sasl::{
    SASL_AUTHENTICATE, SASL_AUTHENTICATE_VERSION, SASL_HANDSHAKE, SASL_HANDSHAKE_VERSION,
};

/// Why a connection to a broker could not be made: the broker could not be reached or the
/// connection broke (the direct path hands over to librdkafka), or it was refused (TLS
/// verification, SASL authentication: the read fails at once, naming the cause).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Unreachable(String),
    Refused(String),
}

/// The bytes a connection carries: plain TCP, or TLS over it.
enum Stream {
    Plain(TcpStream),
    Tls(Box<SslStream<TcpStream>>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// A connection to one broker; requests go one at a time.
pub struct Broker {
    stream: Stream,
    correlation: i32,
    client_id: String,
    max_response: usize,
    /// When the broker ends the authenticated session (KIP-368), less a margin: the connection
    /// is replaced before then.
    renew_at: Option<Instant>,
}

impl Broker {
    /// Connect (TCP, then TLS when configured), check that the broker speaks Fetch v11 and
    /// Metadata v4 (and SASL's requests when configured), then authenticate when configured.
    pub fn connect(host: &str, port: u16, config: &DirectConfig) -> Result<Self, Refusal> {
        let unreachable = |what: String| Refusal::Unreachable(what);
        let addrs = (host, port)
            .to_socket_addrs()
            .map_err(|e| unreachable(format!("resolving {host}:{port} failed: {e}")))?;
        let mut last = format!("{host}:{port} has no address");
        for addr in addrs {
            let tcp = match TcpStream::connect_timeout(&addr, config.socket_timeout) {
                Ok(tcp) => tcp,
                Err(e) => {
                    last = format!("connecting to {host}:{port} failed: {e}");
                    continue;
                }
            };
            let io =
                |e: std::io::Error| unreachable(format!("setting up {host}:{port} failed: {e}"));
            tcp.set_nodelay(true).map_err(io)?;
            let held = Duration::from_millis(config.limits.max_wait_ms.max(0) as u64);
            tcp.set_read_timeout(Some(config.socket_timeout + held))
                .map_err(io)?;
            tcp.set_write_timeout(Some(config.socket_timeout))
                .map_err(io)?;
            let stream = match &config.tls {
                Some(tls) => Stream::Tls(Box::new(tls.handshake(host, tcp)?)),
                None => Stream::Plain(tcp),
            };
            let mut broker = Broker {
                stream,
                correlation: 0,
                client_id: config.client_id.clone(),
                max_response: config.max_response,
                renew_at: None,
            };
            let mut body = Vec::new();
            broker
                .call(api_versions::api_versions_request, &mut body)
                .map_err(unreachable)?;
            let versions = api_versions::parse_versions(&body)
                .map_err(|m| unreachable(format!("a malformed ApiVersions answer: {}", m.0)))?;
            let mut needed = vec![
                (FETCH, FETCH_VERSION, "Fetch"),
                (METADATA, METADATA_VERSION, "Metadata"),
            ];
            if config.sasl.is_some() {
                needed.push((SASL_HANDSHAKE, SASL_HANDSHAKE_VERSION, "SaslHandshake"));
                needed.push((
                    SASL_AUTHENTICATE,
                    SASL_AUTHENTICATE_VERSION,
                    "SaslAuthenticate",
                ));
            }
            if let Some((_, v, name)) = needed.iter().find(|(k, v, _)| !versions.offers(*k, *v)) {
                return Err(unreachable(format!(
                    "{host}:{port} does not offer {name} v{v}"
                )));
            }
            if let Some(sasl) = &config.sasl {
                let started = Instant::now();
                let lifetime = sasl.authenticate(&mut broker)?;
                // As the Java client: renew after 85% of the session's lifetime.
                broker.renew_at = lifetime.map(|l| started + l.mul_f64(0.85));
            }
            return Ok(broker);
        }
        Err(unreachable(last))
    }

    /// Whether the broker's session is about to end: the connection is replaced, not used.
    pub fn expiring(&self) -> bool {
        self.renew_at.is_some_and(|at| Instant::now() >= at)
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

/// A broker's id and address.
pub type BrokerKey = (i32, String, u16);
/// Open connections to brokers, kept across readers of one pooled consumer, and the bytes of
/// Fetch responses received from each broker id (shared: readable while a reader holds them).
#[derive(Default)]
pub struct Brokers {
    pub(super) open: HashMap<BrokerKey, Broker>,
    received: Arc<Mutex<HashMap<i32, u64>>>,
}

impl Brokers {
    /// Bytes of Fetch responses received per broker id so far.
    pub fn received(&self) -> HashMap<i32, u64> {
        self.received
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The connections, for a reader (these keep counting into the same totals).
    pub fn lend(&mut self) -> Brokers {
        Brokers {
            open: std::mem::take(&mut self.open),
            received: Arc::clone(&self.received),
        }
    }

    /// The connections a reader hands back (none after it fell back to librdkafka).
    pub fn restore(&mut self, lent: Brokers) {
        self.open = lent.open;
    }

    pub(super) fn count(&self, broker: i32, bytes: usize) {
        let mut received = self.received.lock().unwrap_or_else(PoisonError::into_inner);
        *received.entry(broker).or_default() += bytes as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
            stream: Stream::Plain(TcpStream::connect(addr).unwrap()),
            correlation: 0,
            client_id: "test".into(),
            max_response: 100_000_000,
            renew_at: None,
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
        let request = |c: i32, id: &str| api_versions::api_versions_request(c, id);
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
}
