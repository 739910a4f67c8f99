//! Metadata (key 3) at version 4, the oldest Kafka 4 still answers and the last before the
//! flexible versions change the framing: which broker leads each partition of some topics, and
//! where the brokers listen.

use std::collections::HashMap;

use super::primitives::{Api, Cursor, Malformed};

/// Metadata, at the one version this client speaks.
pub const METADATA: Api = Api::new(3, &[4], "Metadata");

/// A Metadata v4 request for `topics` (never all topics; no topic is created).
pub fn metadata_request(correlation: i32, client_id: &str, topics: &[&str]) -> Vec<u8> {
    metadata_request_creating(correlation, client_id, topics, false)
}

/// A Metadata v4 request for `topics`, the broker allowed to create them when `create` (as a
/// producer asks).
pub fn metadata_request_creating(
    correlation: i32,
    client_id: &str,
    topics: &[&str],
    create: bool,
) -> Vec<u8> {
    let mut r = METADATA.preferred(correlation, client_id);
    r.i32(topics.len() as i32);
    for topic in topics {
        r.string(topic);
    }
    r.i8(i8::from(create)); // allow_auto_topic_creation
    r.finish()
}

/// Who leads the partitions asked about, and where those brokers listen.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Leaders {
    /// (topic, partition) -> leader broker id.
    pub leaders: HashMap<(String, i32), i32>,
    /// broker id -> (host, port).
    pub brokers: HashMap<i32, (String, u16)>,
    /// (topic or topic/partition, error code) of what answered an error.
    pub errors: Vec<(String, i16)>,
    /// topic -> its partitions' count (topics that answered no error).
    pub partitions: HashMap<String, i32>,
}

/// The leaders and brokers of a Metadata v4 response body.
pub fn parse_metadata(body: &[u8]) -> Result<Leaders, Malformed> {
    let mut c = Cursor::new(body);
    let mut out = Leaders::default();
    c.i32()?; // throttle time
    for _ in 0..c.count()? {
        let id = c.i32()?;
        let host = c.string()?.unwrap_or_default().to_string();
        let port = u16::try_from(c.i32()?).map_err(|_| Malformed("a broker port out of range"))?;
        c.string()?; // rack
        out.brokers.insert(id, (host, port));
    }
    c.string()?; // cluster id
    c.i32()?; // controller id
    for _ in 0..c.count()? {
        let error = c.i16()?;
        let topic = c.string()?.unwrap_or_default().to_string();
        c.i8()?; // is internal
        if error != 0 {
            out.errors.push((topic.clone(), error));
        }
        let count = c.count()?;
        if error == 0 {
            out.partitions.insert(topic.clone(), count as i32);
        }
        for _ in 0..count {
            let error = c.i16()?;
            let partition = c.i32()?;
            let leader = c.i32()?;
            for _ in 0..c.count()? {
                c.i32()?; // replicas
            }
            for _ in 0..c.count()? {
                c.i32()?; // in-sync replicas
            }
            if error != 0 {
                out.errors.push((format!("{topic}/{partition}"), error));
            }
            if leader >= 0 {
                out.leaders.insert((topic.clone(), partition), leader);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::sample::{request_header, string};

    #[test]
    fn leaders_brokers_and_errors_of_a_metadata_answer() {
        let mut b = 0i32.to_be_bytes().to_vec();
        b.extend_from_slice(&2i32.to_be_bytes());
        for (id, port) in [(1i32, 9092i32), (2, 9093)] {
            b.extend_from_slice(&id.to_be_bytes());
            string("127.0.0.1", &mut b);
            b.extend_from_slice(&port.to_be_bytes());
            b.extend_from_slice(&(-1i16).to_be_bytes());
        }
        string("cluster", &mut b);
        b.extend_from_slice(&1i32.to_be_bytes());
        b.extend_from_slice(&1i32.to_be_bytes());
        b.extend_from_slice(&0i16.to_be_bytes());
        string("t", &mut b);
        b.push(0);
        b.extend_from_slice(&2i32.to_be_bytes());
        for (error, p, leader) in [(0i16, 0i32, 2i32), (5, 1, -1)] {
            b.extend_from_slice(&error.to_be_bytes());
            b.extend_from_slice(&p.to_be_bytes());
            b.extend_from_slice(&leader.to_be_bytes());
            b.extend_from_slice(&1i32.to_be_bytes());
            b.extend_from_slice(&leader.to_be_bytes());
            b.extend_from_slice(&0i32.to_be_bytes());
        }
        let m = parse_metadata(&b).unwrap();
        assert_eq!(m.leaders, HashMap::from([(("t".to_string(), 0), 2)]));
        assert_eq!(m.brokers[&2], ("127.0.0.1".to_string(), 9093));
        assert_eq!(m.errors, vec![("t/1".to_string(), 5)]);
        assert_eq!(m.partitions, HashMap::from([("t".to_string(), 2)]));
        assert!(parse_metadata(&b[..b.len() - 1]).is_err());
        let req = metadata_request(7, "me", &["a", "b"]);
        let (mut c, named) = request_header(&req);
        assert_eq!(named, (3, 4, 7));
        assert_eq!(c.count().unwrap(), 2);
        assert_eq!(
            (c.string().unwrap(), c.string().unwrap()),
            (Some("a"), Some("b"))
        );
    }
}
