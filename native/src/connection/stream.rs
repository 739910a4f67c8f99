//! A connection's bytes: plain TCP or TLS over it, and each request's reads and writes held to
//! one deadline.

use std::io::{IoSlice, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use openssl::ssl::SslStream;

/// The bytes a connection carries: plain TCP, or TLS over it.
pub enum Stream {
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

impl Stream {
    fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => s.get_ref(),
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

    /// Plain TCP: one `writev` of the pieces; TLS: the first piece (each piece its records).
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write_vectored(bufs),
            Stream::Tls(s) => s.write_vectored(bufs),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// A connection's reads and writes for one request, none past its deadline: a broker that sends
/// a byte now and then cannot hold a request longer than its timeout.
pub struct Timed<'a> {
    pub stream: &'a mut Stream,
    pub deadline: Instant,
}

impl Timed<'_> {
    /// `op` with the time left before the deadline as the socket's timeout; a timed-out `op`
    /// says so.
    fn timed<T>(
        &mut self,
        set: fn(&TcpStream, Option<Duration>) -> std::io::Result<()>,
        op: impl FnOnce(&mut Stream) -> std::io::Result<T>,
    ) -> std::io::Result<T> {
        let timed_out = || {
            std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "no whole answer within the request timeout",
            )
        };
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timed_out());
        }
        set(self.stream.tcp(), Some(left))?;
        op(self.stream).map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => timed_out(),
            _ => e,
        })
    }
}

impl Read for Timed<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.timed(TcpStream::set_read_timeout, |s| s.read(buf))
    }
}

impl Write for Timed<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.timed(TcpStream::set_write_timeout, |s| s.write(buf))
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> std::io::Result<usize> {
        self.timed(TcpStream::set_write_timeout, |s| s.write_vectored(bufs))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.stream.flush()
    }
}
