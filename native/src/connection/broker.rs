//! Connections to brokers: one [`Broker`] per broker, each response read whole after its size
//! and correlation id are checked; requests sent one at a time ([`Broker::call`]), or several
//! before their answers are read, in order ([`Broker::send`], [`Broker::receive`]).

use std::io::{ErrorKind, IoSlice, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::stream::{Stream, Timed};
use super::Connection;
use crate::protocol::api_versions::{self, spoken, Versions};
use crate::protocol::primitives::{read_growing, Api};
use crate::protocol::produce::Spliced;
use crate::protocol::sasl::{SASL_AUTHENTICATE, SASL_HANDSHAKE};

/// Why a connection to a broker could not be made: the broker could not be reached or the
/// connection broke (the direct path hands over to librdkafka), or it was refused (TLS
/// verification, SASL authentication: the read fails at once, naming the cause).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Unreachable(String),
    Refused(String),
}

/// Why a request got no answer, and whether its connection broke under it (closed or reset by
/// the broker, mid-response too) or went silent past the request timeout: either is worth a
/// new connection; an answer refused unread (too large, for another request) is not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoAnswer {
    pub why: String,
    pub broke: bool,
    pub timed_out: bool,
}

/// A connection to one broker.
pub struct Broker {
    stream: Stream,
    /// How long a request may take, its answer read whole (a Fetch may be held by the broker
    /// for `fetch.wait.max.ms` on top of the request timeout).
    timeout: Duration,
    correlation: i32,
    client_id: String,
    max_response: usize,
    /// When the broker ends the authenticated session (KIP-368), less a margin: the connection
    /// is replaced before then.
    renew_at: Option<Instant>,
    /// The versions of each API the broker speaks.
    versions: Versions,
}

impl Broker {
    /// Connect (TCP, then TLS when configured), check that the broker speaks a version of each
    /// of `needed` (and of SASL's requests when configured), then authenticate when configured.
    pub fn connect(
        host: &str,
        port: u16,
        config: &Connection,
        needed: &[Api],
    ) -> Result<Self, Refusal> {
        let unreachable = |what: String| Refusal::Unreachable(what);
        let addrs = (host, port)
            .to_socket_addrs()
            .map_err(|e| unreachable(format!("resolving {host}:{port} failed: {e}")))?;
        let mut last = format!("{host}:{port} has no address");
        for addr in addrs {
            let tcp = match TcpStream::connect_timeout(&addr, config.request_timeout) {
                Ok(tcp) => tcp,
                Err(e) => {
                    last = format!("connecting to {host}:{port} failed: {e}");
                    continue;
                }
            };
            let io =
                |e: std::io::Error| unreachable(format!("setting up {host}:{port} failed: {e}"));
            tcp.set_nodelay(true).map_err(io)?;
            let timeout = config.request_timeout + config.held;
            tcp.set_read_timeout(Some(timeout)).map_err(io)?;
            tcp.set_write_timeout(Some(config.request_timeout))
                .map_err(io)?;
            let stream = match &config.tls {
                Some(tls) => Stream::Tls(Box::new(tls.handshake(host, tcp)?)),
                None => Stream::Plain(tcp),
            };
            let mut broker = Broker {
                stream,
                timeout,
                correlation: 0,
                client_id: config.client_id.clone(),
                max_response: config.max_response,
                renew_at: None,
                versions: Versions::default(),
            };
            let mut body = Vec::new();
            broker
                .call(api_versions::api_versions_request, &mut body)
                .map_err(|no| unreachable(no.why))?;
            let versions = api_versions::parse_versions(&body)
                .map_err(|m| unreachable(format!("a malformed ApiVersions answer: {}", m.0)))?;
            let mut needed = needed.to_vec();
            if config.sasl.is_some() {
                needed.extend([SASL_HANDSHAKE, SASL_AUTHENTICATE]);
            }
            if let Some(api) = needed.iter().find(|api| versions.pick(api).is_none()) {
                let lacking = spoken(api);
                return Err(unreachable(format!(
                    "{host}:{port} does not offer {lacking}"
                )));
            }
            broker.versions = versions;
            if let Some(sasl) = &config.sasl {
                let started = Instant::now();
                let lifetime = sasl.authenticate(&mut broker)?;
                // As the Java client: renew after 85% of the session's lifetime.
                broker.renew_at = lifetime.and_then(|l| started.checked_add(l.mul_f64(0.85)));
            }
            return Ok(broker);
        }
        Err(unreachable(last))
    }

    /// The versions of each API the broker speaks.
    pub fn versions(&self) -> &Versions {
        &self.versions
    }

    /// Whether the broker's session is about to end: the connection is replaced, not used.
    pub fn expiring(&self) -> bool {
        self.renew_at.is_some_and(|at| Instant::now() >= at)
    }

    /// Send the request `build` writes for the next correlation id; `body` receives the
    /// response after its header, growing with the bytes received. A response larger than
    /// `max_response`, or answering another request, is refused before its body is read; the
    /// whole request may take the connection's timeout, however slowly bytes trickle in (the
    /// connection is then unusable: the caller drops it).
    pub fn call(
        &mut self,
        build: impl FnOnce(i32, &str) -> Vec<u8>,
        body: &mut Vec<u8>,
    ) -> Result<(), NoAnswer> {
        let deadline = Instant::now() + self.timeout;
        let correlation = self.send_by(|c, id| Spliced::whole(build(c, id)), deadline)?;
        self.receive_by(correlation, body, deadline)
    }

    /// Send the request `build` writes for the next correlation id (its borrowed pieces from
    /// where they are), without waiting for its answer: its correlation id, for
    /// [`Broker::receive`] (answers come in the order sent).
    pub fn send<'a>(
        &mut self,
        build: impl FnOnce(i32, &str) -> Spliced<'a>,
    ) -> Result<i32, NoAnswer> {
        self.send_by(build, Instant::now() + self.timeout)
    }

    /// The answer to the request sent as `correlation` into `body`, within the timeout.
    pub fn receive(&mut self, correlation: i32, body: &mut Vec<u8>) -> Result<(), NoAnswer> {
        self.receive_by(correlation, body, Instant::now() + self.timeout)
    }

    fn send_by<'a>(
        &mut self,
        build: impl FnOnce(i32, &str) -> Spliced<'a>,
        deadline: Instant,
    ) -> Result<i32, NoAnswer> {
        self.correlation = self.correlation.wrapping_add(1);
        let request = build(self.correlation, &self.client_id);
        let timeout = self.timeout;
        let mut stream = Timed {
            stream: &mut self.stream,
            deadline,
        };
        let pieces = request.pieces();
        let mut slices: Vec<IoSlice<'_>> = pieces.iter().map(|p| IoSlice::new(p)).collect();
        let mut left = &mut slices[..];
        IoSlice::advance_slices(&mut left, 0); // past empty pieces
        while !left.is_empty() {
            match stream.write_vectored(left) {
                Ok(0) => return Err(io(timeout, ErrorKind::WriteZero.into())),
                Ok(n) => IoSlice::advance_slices(&mut left, n),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(io(timeout, e)),
            }
        }
        Ok(self.correlation)
    }

    fn receive_by(
        &mut self,
        expected: i32,
        body: &mut Vec<u8>,
        deadline: Instant,
    ) -> Result<(), NoAnswer> {
        let refused = |why: String| NoAnswer {
            why,
            broke: false,
            timed_out: false,
        };
        let timeout = self.timeout;
        let io = |e: std::io::Error| io(timeout, e);
        let mut stream = Timed {
            stream: &mut self.stream,
            deadline,
        };
        let mut header = [0u8; 8];
        stream.read_exact(&mut header[..4]).map_err(io)?;
        let size = i32::from_be_bytes([header[0], header[1], header[2], header[3]]);
        if size < 4 {
            return Err(refused(format!(
                "the broker sent a response of {size} bytes"
            )));
        }
        if size as usize > self.max_response {
            return Err(refused(format!(
                "the broker sent a response of {size} bytes, more than \
                 receive.message.max.bytes ({})",
                self.max_response
            )));
        }
        stream.read_exact(&mut header[4..]).map_err(io)?;
        let correlation = i32::from_be_bytes([header[4], header[5], header[6], header[7]]);
        if correlation != expected {
            return Err(refused(format!(
                "the broker answered request {correlation}, not {expected}"
            )));
        }
        body.clear();
        let len = size as usize - 4;
        read_growing(&mut stream.take(len as u64), body, len).map_err(io)?;
        if body.len() < len {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!(
                    "the connection closed {} bytes into a response of {len}",
                    body.len()
                ),
            )));
        }
        Ok(())
    }
}

/// An I/O error of a request as its [`NoAnswer`]: timed out, or the connection broke.
fn io(timeout: Duration, e: std::io::Error) -> NoAnswer {
    let timed_out = e.kind() == std::io::ErrorKind::TimedOut;
    NoAnswer {
        why: if timed_out {
            format!(
                "the broker did not answer within {} ms (the request timeout, \
                 request.timeout.ms or socket.timeout.ms, plus fetch.wait.max.ms)",
                timeout.as_millis()
            )
        } else {
            format!("talking to the broker failed: {e}")
        },
        broke: !timed_out,
        timed_out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A stand-in broker on loopback (no real broker sends these answers) that answers the
    /// first request with `reply`, `pace` between its bytes (all at once for zero), then closes
    /// the connection when `close`, and a connection to it whose requests may take `timeout`.
    fn stand_in(reply: Vec<u8>, pace: Duration, close: bool, timeout: Duration) -> Broker {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut size = [0u8; 4];
            s.read_exact(&mut size).unwrap();
            let mut request = vec![0; i32::from_be_bytes(size) as usize];
            s.read_exact(&mut request).unwrap();
            if pace.is_zero() {
                s.write_all(&reply).unwrap();
            }
            for byte in reply.iter().take_while(|_| !pace.is_zero()) {
                std::thread::sleep(pace);
                if s.write_all(&[*byte]).is_err() {
                    return; // the client gave up
                }
            }
            if !close {
                let _ = s.read(&mut [0u8; 1]); // open until the client hangs up
            }
        });
        Broker {
            stream: Stream::Plain(TcpStream::connect(addr).unwrap()),
            timeout,
            correlation: 0,
            client_id: "test".into(),
            max_response: 100_000_000,
            renew_at: None,
            versions: Versions::default(),
        }
    }

    fn answering(reply: Vec<u8>) -> Broker {
        stand_in(reply, Duration::ZERO, false, Duration::from_secs(60))
    }

    fn reply(size: i32, correlation: i32, body: &[u8]) -> Vec<u8> {
        let mut r = size.to_be_bytes().to_vec();
        r.extend_from_slice(&correlation.to_be_bytes());
        r.extend_from_slice(body);
        r
    }

    fn request(c: i32, id: &str) -> Vec<u8> {
        api_versions::api_versions_request(c, id)
    }

    #[test]
    fn responses_past_the_bound_or_for_another_request_are_refused_unread() {
        let mut body = Vec::new();
        let huge = answering(reply(i32::MAX, 1, b"")).call(request, &mut body);
        assert!(huge
            .unwrap_err()
            .why
            .contains("2147483647 bytes, more than receive.message"));
        assert_eq!(body.capacity(), 0);
        let other = answering(reply(1 << 20, 5, b"")).call(request, &mut body);
        assert_eq!(
            other.unwrap_err().why,
            "the broker answered request 5, not 1"
        );
        assert_eq!(body.capacity(), 0);
        answering(reply(7, 1, b"abc"))
            .call(request, &mut body)
            .unwrap();
        assert_eq!(body, b"abc");
    }

    #[test]
    fn a_response_cut_short_claims_no_memory_for_what_never_came_and_says_it_broke() {
        // 99 MB announced, 6 bytes sent, then the connection closed.
        let cut = stand_in(
            reply(99_000_000, 1, b"abcdef"),
            Duration::ZERO,
            true,
            Duration::from_secs(60),
        );
        let mut body = Vec::new();
        let no = { cut }.call(request, &mut body).unwrap_err();
        assert!(no.broke, "{no:?}");
        assert!(
            no.why
                .contains("closed 6 bytes into a response of 98999996"),
            "{no:?}"
        );
        assert!(body.capacity() <= 64 * 1024, "{}", body.capacity());
    }

    #[test]
    fn a_broker_trickling_its_answer_is_given_up_on_at_the_timeout() {
        // A byte every 50 ms, each well within the 600 ms timeout: the whole answer, 2,000
        // bytes (100 s), is not waited for; and a timeout is no broken connection.
        let body_bytes = vec![7u8; 2_000];
        let pace = Duration::from_millis(50);
        let timeout = Duration::from_millis(600);
        let mut slow = stand_in(reply(2_004, 1, &body_bytes), pace, false, timeout);
        let started = Instant::now();
        let no = slow.call(request, &mut Vec::new()).unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert!(
            !no.broke && no.timed_out && no.why.contains("did not answer within 600 ms"),
            "{no:?}"
        );
    }
}
