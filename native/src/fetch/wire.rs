//! Kafka's wire encoding for the two requests the direct fetch path sends: ApiVersions v0 and
//! Fetch v11 (non-flexible versions: int16-length strings, int32-length arrays), and the
//! big-endian and varint primitives their responses and record batches are read with.

use std::ops::Range;

/// Fetch's API key and the version this path speaks (brokers since Kafka 2.3 take it; Kafka 4
/// removed only versions 0–3).
pub const FETCH: i16 = 1;
pub const FETCH_VERSION: i16 = 11;
/// ApiVersions' API key (version 0: every broker answers it).
pub const API_VERSIONS: i16 = 18;

/// Something the bytes do not hold: a response shorter than its fields say, or a bad varint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

/// Reads big-endian fields and varints from a byte slice.
pub struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, pos: 0 }
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if n > self.remaining() {
            return Err(Malformed("a field runs past the end of the data"));
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Malformed> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    pub fn i8(&mut self) -> Result<i8, Malformed> {
        Ok(i8::from_be_bytes(self.array()?))
    }

    pub fn i16(&mut self) -> Result<i16, Malformed> {
        Ok(i16::from_be_bytes(self.array()?))
    }

    pub fn i32(&mut self) -> Result<i32, Malformed> {
        Ok(i32::from_be_bytes(self.array()?))
    }

    pub fn i64(&mut self) -> Result<i64, Malformed> {
        Ok(i64::from_be_bytes(self.array()?))
    }

    /// An int16-length string (null when the length is -1).
    pub fn string(&mut self) -> Result<Option<&'a str>, Malformed> {
        let len = self.i16()?;
        if len < 0 {
            return Ok(None);
        }
        std::str::from_utf8(self.take(len as usize)?)
            .map(Some)
            .map_err(|_| Malformed("a string is not UTF-8"))
    }

    /// An int32 array length (0 for a null array).
    pub fn count(&mut self) -> Result<usize, Malformed> {
        Ok(self.i32()?.max(0) as usize)
    }

    /// The index range of int32-length bytes (empty for null), for a caller keeping the buffer.
    pub fn bytes_range(&mut self) -> Result<Range<usize>, Malformed> {
        let len = self.i32()?.max(0) as usize;
        let start = self.pos;
        self.take(len)?;
        Ok(start..start + len)
    }

    /// A zigzag varint (a record's int32 fields).
    pub fn varint(&mut self) -> Result<i32, Malformed> {
        let v = self.varlong()?;
        i32::try_from(v).map_err(|_| Malformed("a varint is out of the int32 range"))
    }

    /// A zigzag varlong.
    pub fn varlong(&mut self) -> Result<i64, Malformed> {
        let mut raw: u64 = 0;
        let mut shift = 0u32;
        loop {
            let Some(&byte) = self.bytes.get(self.pos) else {
                return Err(Malformed("a varint runs past the end of the data"));
            };
            self.pos += 1;
            raw |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                break;
            }
            shift += 7;
            if shift > 63 {
                return Err(Malformed("a varint is longer than 10 bytes"));
            }
        }
        Ok((raw >> 1) as i64 ^ -((raw & 1) as i64))
    }

    /// Varint-length bytes: `None` for a length of -1.
    pub fn var_bytes(&mut self) -> Result<Option<&'a [u8]>, Malformed> {
        let len = self.varint()?;
        if len < 0 {
            return Ok(None);
        }
        self.take(len as usize).map(Some)
    }
}

/// A request being written: the size prefix is filled in by [`Request::finish`].
pub struct Request(Vec<u8>);

impl Request {
    /// A request header v1: API key, version, correlation id, client id.
    pub fn new(api_key: i16, version: i16, correlation: i32, client_id: &str) -> Self {
        let mut r = Request(Vec::with_capacity(256));
        r.i32(0);
        r.i16(api_key);
        r.i16(version);
        r.i32(correlation);
        r.string(client_id);
        r
    }

    pub fn i8(&mut self, v: i8) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }

    pub fn i16(&mut self, v: i16) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }

    pub fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }

    pub fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }

    pub fn string(&mut self, s: &str) {
        // Topic names and client ids are far shorter than 32,767 bytes (Kafka caps topics at 249).
        self.i16(s.len().min(i16::MAX as usize) as i16);
        self.0
            .extend_from_slice(&s.as_bytes()[..s.len().min(i16::MAX as usize)]);
    }

    /// The bytes to send, size prefix included.
    pub fn finish(mut self) -> Vec<u8> {
        let size = (self.0.len() - 4) as i32;
        self.0[..4].copy_from_slice(&size.to_be_bytes());
        self.0
    }
}

/// One partition to fetch from an offset.
pub struct FetchPartition<'a> {
    pub topic: &'a str,
    pub partition: i32,
    pub offset: i64,
}

/// How much to fetch and which records a fetch may see.
#[derive(Debug, Clone)]
pub struct FetchLimits {
    pub max_wait_ms: i32,
    pub min_bytes: i32,
    pub max_bytes: i32,
    pub partition_max_bytes: i32,
    pub read_committed: bool,
}

/// A full Fetch v11 request (no fetch session) for these partitions, grouped by topic in the
/// order given.
pub fn fetch_request(
    correlation: i32,
    client_id: &str,
    limits: &FetchLimits,
    parts: &[FetchPartition<'_>],
) -> Vec<u8> {
    let mut r = Request::new(FETCH, FETCH_VERSION, correlation, client_id);
    r.i32(-1); // replica id: a consumer
    r.i32(limits.max_wait_ms);
    r.i32(limits.min_bytes);
    r.i32(limits.max_bytes);
    r.i8(i8::from(limits.read_committed));
    r.i32(0); // session id: none
    r.i32(-1); // session epoch: a full fetch, no session
    let mut topics: Vec<(&str, Vec<&FetchPartition<'_>>)> = Vec::new();
    for p in parts {
        match topics.iter_mut().find(|(t, _)| *t == p.topic) {
            Some((_, list)) => list.push(p),
            None => topics.push((p.topic, vec![p])),
        }
    }
    r.i32(topics.len() as i32);
    for (topic, list) in &topics {
        r.string(topic);
        r.i32(list.len() as i32);
        for p in list {
            r.i32(p.partition);
            r.i32(-1); // current leader epoch: unknown, not checked
            r.i64(p.offset);
            r.i64(-1); // log start offset: a consumer's is -1
            r.i32(limits.partition_max_bytes);
        }
    }
    r.i32(0); // forgotten topics
    r.string(""); // rack id: none (follower fetching goes through librdkafka)
    r.finish()
}

/// An ApiVersions v0 request.
pub fn api_versions_request(correlation: i32, client_id: &str) -> Vec<u8> {
    Request::new(API_VERSIONS, 0, correlation, client_id).finish()
}

/// Whether an ApiVersions v0 response body offers Fetch at [`FETCH_VERSION`].
pub fn offers_fetch(body: &[u8]) -> Result<bool, Malformed> {
    let mut c = Cursor::new(body);
    if c.i16()? != 0 {
        return Ok(false);
    }
    for _ in 0..c.count()? {
        let (key, min, max) = (c.i16()?, c.i16()?, c.i16()?);
        if key == FETCH {
            return Ok(min <= FETCH_VERSION && FETCH_VERSION <= max);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zigzag(v: i64) -> Vec<u8> {
        let mut raw = ((v << 1) ^ (v >> 63)) as u64;
        let mut out = Vec::new();
        loop {
            if raw < 0x80 {
                out.push(raw as u8);
                return out;
            }
            out.push((raw as u8 & 0x7f) | 0x80);
            raw >>= 7;
        }
    }

    #[test]
    fn varints_round_trip_at_the_edges() {
        for v in [
            0,
            -1,
            1,
            63,
            -64,
            64,
            300,
            i32::MAX as i64,
            i32::MIN as i64,
            i64::MAX,
            i64::MIN,
        ] {
            let bytes = zigzag(v);
            let mut c = Cursor::new(&bytes);
            assert_eq!(c.varlong().unwrap(), v);
            assert_eq!(c.remaining(), 0);
        }
        let big = zigzag(i64::from(i32::MAX) + 1);
        assert!(Cursor::new(&big).varint().is_err());
        assert!(Cursor::new(&[0x80, 0x80]).varlong().is_err());
    }

    #[test]
    fn fetch_request_groups_partitions_by_topic_and_prefixes_its_size() {
        let limits = FetchLimits {
            max_wait_ms: 500,
            min_bytes: 1,
            max_bytes: 1 << 20,
            partition_max_bytes: 1 << 16,
            read_committed: true,
        };
        let parts = [
            FetchPartition {
                topic: "a",
                partition: 0,
                offset: 5,
            },
            FetchPartition {
                topic: "b",
                partition: 1,
                offset: 6,
            },
            FetchPartition {
                topic: "a",
                partition: 2,
                offset: 7,
            },
        ];
        let req = fetch_request(9, "me", &limits, &parts);
        let mut c = Cursor::new(&req);
        assert_eq!(c.i32().unwrap() as usize, req.len() - 4);
        assert_eq!(
            (c.i16().unwrap(), c.i16().unwrap(), c.i32().unwrap()),
            (1, 11, 9)
        );
        assert_eq!(c.string().unwrap(), Some("me"));
        assert_eq!(
            (c.i32().unwrap(), c.i32().unwrap(), c.i32().unwrap()),
            (-1, 500, 1)
        );
        assert_eq!((c.i32().unwrap(), c.i8().unwrap()), (1 << 20, 1));
        assert_eq!((c.i32().unwrap(), c.i32().unwrap()), (0, -1));
        assert_eq!(c.count().unwrap(), 2);
        assert_eq!(c.string().unwrap(), Some("a"));
        assert_eq!(c.count().unwrap(), 2);
        let first = (c.i32().unwrap(), c.i32().unwrap(), c.i64().unwrap());
        assert_eq!(first, (0, -1, 5));
    }

    #[test]
    fn api_versions_answer_says_whether_fetch_v11_is_offered() {
        let mut body = vec![0, 0, 0, 0, 0, 2];
        body.extend_from_slice(&[0, 0, 0, 0, 0, 9]); // Produce 0..9
        body.extend_from_slice(&[0, 1, 0, 4, 0, 17]); // Fetch 4..17
        assert!(offers_fetch(&body).unwrap());
        body[12..18].copy_from_slice(&[0, 1, 0, 0, 0, 10]); // Fetch 0..10
        assert!(!offers_fetch(&body).unwrap());
        assert!(!offers_fetch(&[0, 35, 0, 0, 0, 0]).unwrap());
    }
}
