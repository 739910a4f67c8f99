//! The direct path's response parsing: one record batch at a time of the current Fetch
//! response into the Arrow builder, checked (CRC-32C, read_committed's filter) and read whole or
//! not at all, so that a handover from any point reads nothing twice.

use std::ops::Range;
use std::time::Instant;

use super::{Direct, Stop};
use crate::into_arrow::{BatchBuilder, Record};
use crate::protocol::batch_frame;
use crate::protocol::error::Problem;
use crate::protocol::records::{self, BatchHead};
use crate::read::ClusterReader;

/// What is wrong with a batch's bytes as they arrived: its CRC-32C does not match, or its
/// length (which the CRC does not cover) cannot be a batch's.
enum Damage {
    Crc { stored: u32, computed: u32 },
    Framing(&'static str),
}

impl ClusterReader {
    /// Parse the next record batch of the current response; whether records were added. A
    /// damaged batch (see [`Damage`]) is fetched again once; twice at the same offset, the read
    /// fails naming it (a CRC mismatch), or the partition is handed to librdkafka (a length
    /// that cannot be a batch's).
    pub(super) fn parse_one(&mut self, d: &mut Direct) -> Result<bool, Stop> {
        let Direct {
            body,
            parts,
            config,
            scratch,
            damaged,
            ..
        } = d;
        let Some(part) = parts.front_mut() else {
            return Ok(false);
        };
        let Some(idx) = self.find(&part.topic, part.partition) else {
            parts.pop_front();
            return Ok(false);
        };
        let rest = &body[part.records.clone()];
        let max = config.connection.max_response;
        let (size, damage) = match batch_frame::frame(rest, max) {
            Ok(Some(size)) => (size, None),
            Ok(None) => {
                parts.pop_front();
                return Ok(false);
            }
            Err(Problem::Malformed(why)) => (0, Some(Damage::Framing(why))),
            Err(unsupported) => return Err(Stop::Fallback(unsupported.to_string())),
        };
        let batch = &rest[..size];
        let damage = damage.or_else(|| {
            let stored = u32::from_be_bytes([batch[17], batch[18], batch[19], batch[20]]);
            let computed = batch_frame::crc(batch);
            (config.check_crcs && stored != computed).then_some(Damage::Crc { stored, computed })
        });
        if let Some(damage) = damage {
            let at = (part.topic.clone(), part.partition, self.pending[idx].next);
            if damaged.as_ref() != Some(&at) {
                *damaged = Some(at);
                parts.pop_front();
                return Ok(false);
            }
            return Err(match damage {
                Damage::Crc { stored, computed } => {
                    let base = i64::from_be_bytes(rest[..8].try_into().expect("8 bytes"));
                    Stop::Failed(self.failed(&format!(
                        "the record batch at offset {base} of {}/{} failed its CRC-32C check \
                         twice (stored {stored:#010x}, computed {computed:#010x}): its bytes \
                         were damaged on the way or on the broker",
                        at.0, at.1
                    )))
                }
                Damage::Framing(why) => Stop::Fallback(Problem::Malformed(why).to_string()),
            });
        }
        let h = records::head(batch).map_err(|p| p.to_string())?;
        let hidden = if config.limits.read_committed {
            part.aborted.hides(&h, batch, max)
        } else {
            Ok(h.is_control())
        };
        let hidden = hidden.map_err(|p| p.to_string())?;
        let pending = &self.pending[idx];
        let (next, end) = (pending.next, pending.range.end);
        let before = self.builder.rows();
        if !hidden && h.last_offset >= next {
            let (topic, partition) = (pending.range.topic.as_str(), pending.range.partition);
            let payload = records::payload(&h, batch, scratch, max).map_err(|p| p.to_string())?;
            let wanted = Wanted {
                topic,
                partition,
                offsets: next..end,
                headers: self.settings.include_headers,
            };
            match append(&mut self.builder, &h, payload, &wanted) {
                Ok(()) => {}
                Err(Refused::Bytes(p)) => return Err(Stop::Fallback(p.to_string())),
                Err(Refused::Record(why)) => return Err(Stop::Failed(self.failed(&why))),
            }
        }
        // Only a batch read whole moves the position: a handover from here reads it again.
        part.records.start += h.size;
        let pending = &mut self.pending[idx];
        if h.last_offset >= next {
            pending.next = h.last_offset + 1;
            self.last_progress = Instant::now();
        }
        if pending.next >= end {
            self.pending.remove(idx);
        }
        Ok(self.builder.rows() > before)
    }
}

/// Where a batch's records go: their partition, and which offsets of it are wanted.
struct Wanted<'a> {
    topic: &'a str,
    partition: i32,
    offsets: Range<i64>,
    headers: bool,
}

/// Why [`append`] stopped: the batch does not parse to its end (librdkafka's consumer may read
/// it), or the builder refused a record (its timestamp is past Spark's range: the read fails,
/// as it would on librdkafka's consumer).
#[derive(Debug)]
enum Refused {
    Bytes(Problem),
    Record(String),
}

impl From<Problem> for Refused {
    fn from(problem: Problem) -> Self {
        Refused::Bytes(problem)
    }
}

/// The records of one batch (head `h`, records section `payload`) whose offsets are wanted,
/// appended to `builder`: all of them, or none when the batch does not parse to its end.
fn append(
    builder: &mut BatchBuilder,
    h: &BatchHead,
    payload: &[u8],
    wanted: &Wanted<'_>,
) -> Result<(), Refused> {
    for r in records::records(h, payload, wanted.headers)? {
        if wanted.offsets.contains(&r.offset) {
            let added = builder.add(&Record {
                key: r.key,
                value: r.value,
                topic: wanted.topic,
                partition: wanted.partition,
                offset: r.offset,
                timestamp: r.timestamp,
                headers: r.headers,
            });
            added.map_err(Refused::Record)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::records::head;
    use crate::protocol::sample::{batch, raw_batch, record, Item};

    #[test]
    fn a_batch_failing_half_way_appends_nothing() {
        let items: [Item<'_>; 3] = [
            (0, None, Some(b"a"), vec![]),
            (1, None, Some(b"b"), vec![]),
            (2, None, Some(b"c"), vec![]),
        ];
        let mut bytes: Vec<u8> = items[..2]
            .iter()
            .enumerate()
            .flat_map(|(i, r)| record(i, r))
            .collect();
        let mut third = record(2, &items[2]);
        third[0] += 2; // its length says two bytes more than its fields
        bytes.extend_from_slice(&third);
        bytes.extend_from_slice(&[0, 0]);
        let wanted = Wanted {
            topic: "t",
            partition: 0,
            offsets: 0..10,
            headers: false,
        };
        let mut builder = BatchBuilder::new("east", false, 100, 1 << 20);
        let broken = raw_batch(0, 0, -1, 2, 3, &bytes);
        let h = head(&broken).unwrap();
        assert!(append(&mut builder, &h, &broken[records::HEAD_LEN..], &wanted).is_err());
        assert_eq!(builder.rows(), 0);
        let whole = batch(0, 0, -1, &items);
        let h = head(&whole).unwrap();
        append(&mut builder, &h, &whole[records::HEAD_LEN..], &wanted).unwrap();
        assert_eq!(builder.rows(), 3);
    }
}
