//! OffsetFetch (key 9) at version 7, the first that can require stable offsets (KIP-447) and a
//! flexible version (brokers since Kafka 2.5 take it; Kafka 4 speaks 1 to 9): the offsets a
//! group committed on some partitions, asked of the group's coordinator. With `require_stable`,
//! a partition whose offsets an open transaction is committing answers UNSTABLE_OFFSET_COMMIT
//! rather than the offset before it. The sink's exactlyOnce tasks read their progress markers
//! with it.

use super::flexible::{compact_bytes, compact_count, compact_string, skip_tags, Flexible};
use super::primitives::{Api, Cursor, Header, Malformed};

/// OffsetFetch at the versions this path speaks.
pub const OFFSET_FETCH: Api = Api::new(9, &[7], "OffsetFetch");

/// One partition's answer: the offset committed (-1: none), its metadata, its error code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed<'a> {
    pub topic: &'a str,
    pub partition: i32,
    pub offset: i64,
    pub metadata: Option<&'a [u8]>,
    pub error: i16,
}

/// An OffsetFetch request: `group`'s offsets of `places` (topic, partition), those of one topic
/// next to each other (each run of one topic is one topic entry).
pub fn offset_fetch_request(
    header: Header<'_>,
    group: &str,
    places: &[(&str, i32)],
    require_stable: bool,
) -> Vec<u8> {
    let mut r = OFFSET_FETCH.request(header);
    r.no_tags(); // request header v2
    r.compact_string(group);
    let runs: Vec<&[(&str, i32)]> = places.chunk_by(|a, b| a.0 == b.0).collect();
    r.compact_len(runs.len());
    for run in runs {
        r.compact_string(run[0].0);
        r.compact_len(run.len());
        for &(_, partition) in run {
            r.i32(partition);
        }
        r.no_tags();
    }
    r.i8(i8::from(require_stable));
    r.no_tags();
    r.finish()
}

/// An OffsetFetch v7 response body (from its header's tagged fields on): the group's error code
/// and each partition's answer.
pub fn parse_offset_fetch(body: &[u8]) -> Result<(i16, Vec<Committed<'_>>), Malformed> {
    let mut c = Cursor::new(body);
    skip_tags(&mut c)?; // response header v1
    c.i32()?; // throttle time
    let mut out = Vec::new();
    for _ in 0..compact_count(&mut c)? {
        let topic = compact_string(&mut c)?.ok_or(Malformed("a topic without a name"))?;
        for _ in 0..compact_count(&mut c)? {
            let partition = c.i32()?;
            let offset = c.i64()?;
            c.i32()?; // the leader epoch of the offset
            let metadata = compact_bytes(&mut c)?;
            let error = c.i16()?;
            skip_tags(&mut c)?;
            out.push(Committed {
                topic,
                partition,
                offset,
                metadata,
                error,
            });
        }
        skip_tags(&mut c)?;
    }
    let error = c.i16()?;
    skip_tags(&mut c)?;
    Ok((error, out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::flexible::uvarint;
    use crate::protocol::sample::{committed, offset_fetch_body, request_header};

    #[test]
    fn a_request_names_the_group_each_topic_once_and_asks_for_stable_offsets() {
        let places = [("a", 0), ("a", 3), ("b", 0)];
        let req = offset_fetch_request(Header::new(7, 4, "me"), "g.progress.1", &places, true);
        let (mut c, named) = request_header(&req);
        assert_eq!(named, (9, 7, 4));
        assert_eq!(skip_tags(&mut c), Ok(()));
        assert_eq!(compact_string(&mut c), Ok(Some("g.progress.1")));
        assert_eq!(compact_count(&mut c), Ok(2));
        assert_eq!(compact_string(&mut c), Ok(Some("a")));
        assert_eq!(compact_count(&mut c), Ok(2));
        assert_eq!((c.i32(), c.i32()), (Ok(0), Ok(3)));
        assert_eq!(uvarint(&mut c), Ok(0));
        assert_eq!(compact_string(&mut c), Ok(Some("b")));
        assert_eq!((compact_count(&mut c), c.i32()), (Ok(1), Ok(0)));
        assert_eq!(uvarint(&mut c), Ok(0));
        assert_eq!((c.i8(), uvarint(&mut c)), (Ok(1), Ok(0)));
        assert_eq!(c.remaining(), 0);
    }

    #[test]
    fn an_answer_reads_back_each_partition_and_the_group_error() {
        let parts = [
            ("a", 0, 41, Some(&b"m\0"[..]), 0),
            ("a", 3, -1, None, 0),
            ("b", 0, -1, Some(&b""[..]), 88), // UNSTABLE_OFFSET_COMMIT
        ];
        let body = offset_fetch_body(&parts, 0);
        let (error, got) = parse_offset_fetch(&body).unwrap();
        assert_eq!(error, 0);
        assert_eq!(got, committed(&parts));
        let refused = offset_fetch_body(&[], 16);
        assert_eq!(parse_offset_fetch(&refused), Ok((16, vec![])));
        for cut in 0..body.len() {
            assert!(parse_offset_fetch(&body[..cut]).is_err(), "{cut}");
        }
    }
}
