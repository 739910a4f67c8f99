//! Produce (key 0) at versions 3 to 8, the ones before the flexible versions (Kafka 4 speaks 3
//! and up): record batches for partitions of one leader, and what each partition answered.

use super::primitives::{Api, Cursor, Header, Malformed};

/// Produce, at the versions this path speaks, most preferred first.
pub const PRODUCE: Api = Api::new(0, &[8, 7, 6, 5, 4, 3], "Produce");

/// One partition's batch in a request.
pub struct ProducePartition<'a> {
    pub topic: &'a str,
    pub partition: i32,
    pub batch: &'a [u8],
}

/// A request as it is sent: its bytes, with borrowed bytes spliced in (`(at, bytes)`, in order
/// of `at`, each inserted before `bytes[at]`): a Produce request's batches go to the socket from
/// where they were written, not copied into the request (a copy of every byte, into memory
/// that is cold).
pub struct Spliced<'a> {
    pub bytes: Vec<u8>,
    pub inserts: Vec<(usize, &'a [u8])>,
}

impl<'a> Spliced<'a> {
    /// A request with nothing spliced in.
    pub fn whole(bytes: Vec<u8>) -> Self {
        Spliced {
            bytes,
            inserts: Vec::new(),
        }
    }

    /// The pieces in the order they are sent.
    pub fn pieces(&self) -> Vec<&[u8]> {
        let mut pieces = Vec::with_capacity(2 * self.inserts.len() + 1);
        let mut from = 0;
        for &(at, inserted) in &self.inserts {
            pieces.extend([&self.bytes[from..at], inserted]);
            from = at;
        }
        pieces.push(&self.bytes[from..]);
        pieces
    }
}

/// A Produce request with `header` (its version 3 to 8) of a transactional producer
/// (`transactional`: its id) or not, with `acks` and the broker's `timeout_ms`; `parts` in order,
/// those of one topic next to each other (each run of one topic is one topic entry).
pub fn produce_request<'a>(
    header: Header<'_>,
    transactional: Option<&str>,
    (acks, timeout_ms): (i16, i32),
    parts: &[ProducePartition<'a>],
) -> Spliced<'a> {
    let mut r = PRODUCE.request(header);
    match transactional {
        Some(id) => r.string(id),
        None => r.null_string(),
    }
    r.i16(acks);
    r.i32(timeout_ms);
    let mut inserts = Vec::with_capacity(parts.len());
    r.by_topic(
        parts,
        |p| p.topic,
        |r, p| {
            r.i32(p.partition);
            r.i32(p.batch.len() as i32);
            inserts.push((r.written(), p.batch));
        },
    );
    let bytes = r.finish_beside(inserts.iter().map(|(_, b)| b.len()).sum());
    Spliced { bytes, inserts }
}

/// What the broker answered for one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionAnswer {
    pub topic: String,
    pub partition: i32,
    pub error: i16,
    pub base_offset: i64,
    /// The broker's message (v8), if any.
    pub message: Option<String>,
}

/// The partitions' answers of a Produce response body of `version`, and its throttle time (ms).
pub fn parse_produce(version: i16, body: &[u8]) -> Result<(Vec<PartitionAnswer>, i32), Malformed> {
    let mut c = Cursor::new(body);
    let mut out = Vec::new();
    for _ in 0..c.count()? {
        let topic = c.string()?.unwrap_or_default().to_string();
        for _ in 0..c.count()? {
            let partition = c.i32()?;
            let error = c.i16()?;
            let base_offset = c.i64()?;
            c.i64()?; // log append time
            if version >= 5 {
                c.i64()?; // log start offset
            }
            let mut message = None;
            if version >= 8 {
                let mut errors = Vec::new();
                for _ in 0..c.count()? {
                    c.i32()?; // batch index
                    errors.extend(c.string()?.map(str::to_string));
                }
                message = c.string()?.map(str::to_string);
                if message.is_none() && !errors.is_empty() {
                    message = Some(errors.join("; "));
                }
            }
            out.push(PartitionAnswer {
                topic: topic.clone(),
                partition,
                error,
                base_offset,
                message,
            });
        }
    }
    let throttle = c.i32()?;
    Ok((out, throttle))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::sample::{request_header, string};

    #[test]
    fn a_produce_request_groups_partitions_by_topic() {
        let parts = [
            ProducePartition {
                topic: "a",
                partition: 0,
                batch: b"xy",
            },
            ProducePartition {
                topic: "a",
                partition: 3,
                batch: b"z",
            },
            ProducePartition {
                topic: "b",
                partition: 1,
                batch: b"",
            },
        ];
        let spliced = produce_request(Header::new(8, 5, "me"), None, (-1, 30_000), &parts);
        // the batches are spliced in, not copied: the request's own bytes hold none of them
        assert_eq!(spliced.inserts.len(), 3);
        let req = spliced.pieces().concat();
        assert_eq!(req.len(), spliced.bytes.len() + 3);
        let (mut c, named) = request_header(&req);
        assert_eq!(named, (0, 8, 5));
        assert_eq!(c.string().unwrap(), None);
        assert_eq!((c.i16().unwrap(), c.i32().unwrap()), (-1, 30_000));
        assert_eq!(c.count().unwrap(), 2);
        assert_eq!((c.string().unwrap(), c.count().unwrap()), (Some("a"), 2));
        assert_eq!(c.i32().unwrap(), 0);
        let r = c.bytes_range().unwrap();
        assert_eq!(&req[r], b"xy");
        assert_eq!(c.i32().unwrap(), 3);
        c.bytes_range().unwrap();
        assert_eq!((c.string().unwrap(), c.count().unwrap()), (Some("b"), 1));
        assert_eq!(c.i32().unwrap(), 1);
        assert_eq!(c.bytes_range().unwrap().len(), 0);
        assert_eq!(c.remaining(), 0);
        let header = Header::new(3, 6, "me");
        let req = produce_request(header, Some("t"), (-1, 30_000), &parts[..1]);
        let req = req.pieces().concat();
        let (mut c, _) = request_header(&req);
        assert_eq!(c.string().unwrap(), Some("t"));
    }

    fn answer(version: i16) -> Vec<u8> {
        let mut b = 1i32.to_be_bytes().to_vec();
        string("t", &mut b);
        b.extend_from_slice(&2i32.to_be_bytes());
        for (p, error, offset) in [(0i32, 0i16, 42i64), (1, 6, -1)] {
            b.extend_from_slice(&p.to_be_bytes());
            b.extend_from_slice(&error.to_be_bytes());
            b.extend_from_slice(&offset.to_be_bytes());
            b.extend_from_slice(&(-1i64).to_be_bytes());
            if version >= 5 {
                b.extend_from_slice(&0i64.to_be_bytes());
            }
            if version >= 8 {
                b.extend_from_slice(&0i32.to_be_bytes());
                if error == 0 {
                    b.extend_from_slice(&(-1i16).to_be_bytes());
                } else {
                    string("not the leader", &mut b);
                }
            }
        }
        b.extend_from_slice(&7i32.to_be_bytes());
        b
    }

    #[test]
    fn each_partitions_answer_of_every_version() {
        for &version in PRODUCE.versions {
            let body = answer(version);
            let (answers, throttle) = parse_produce(version, &body).unwrap();
            assert_eq!(throttle, 7);
            assert_eq!(answers.len(), 2);
            assert_eq!((answers[0].error, answers[0].base_offset), (0, 42));
            assert_eq!((answers[1].partition, answers[1].error), (1, 6));
            let message = (version >= 8).then(|| "not the leader".to_string());
            assert_eq!(answers[1].message, message);
            assert!(parse_produce(version, &body[..body.len() - 1]).is_err());
        }
    }
}
