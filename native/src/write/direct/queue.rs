//! One partition's batches in order, numbered, until its leader acknowledges them ([`Part`]),
//! and what decides which is sent next: a partition's first batch goes alone.

use std::collections::VecDeque;
use std::time::Instant;

use super::batches::Open;

/// A batch, numbered, until its partition acknowledges it.
pub(super) struct Batch {
    pub(super) bytes: Vec<u8>,
    pub(super) records: i32,
    pub(super) kv: u64,
    pub(super) base_sequence: i32,
    pub(super) created: Instant,
    pub(super) sent: bool,
}

/// One partition's sequence and the batches it has not acknowledged, in order.
#[derive(Default)]
pub(super) struct Part {
    pub(super) next_sequence: i32,
    pub(super) batches: VecDeque<Batch>,
    /// Whether the partition acknowledged a batch of this producer id and epoch: until then
    /// the broker has no sequence of ours for it and takes any as the first, so a later batch
    /// that reached it before the first (the first refused, NOT_LEADER at the topic's start,
    /// then sent again) would be written ahead of it, the first then refused as out of order.
    pub(super) acked: bool,
}

impl Part {
    /// Number the closed batch `open` (for producer id and epoch `producer`) and queue it.
    pub(super) fn push(&mut self, open: Open, producer: (i64, i16), transactional: bool) {
        let records = open.writer.count();
        let base_sequence = self.next_sequence;
        self.next_sequence = self.next_sequence.wrapping_add(records) & i32::MAX;
        let (pid, epoch) = producer;
        self.batches.push_back(Batch {
            bytes: open.writer.seal(pid, epoch, base_sequence, transactional),
            records,
            kv: open.bytes,
            base_sequence,
            created: Instant::now(),
            sent: false,
        });
    }

    /// The batch to send next: the first not sent, unless the partition acknowledged none yet
    /// and one is in flight (its first batch is sent alone, as librdkafka waits for it).
    pub(super) fn next(&self) -> Option<usize> {
        if !self.acked && self.batches.iter().any(|b| b.sent) {
            return None;
        }
        self.batches.iter().position(|b| !b.sent)
    }

    /// Whether batches not sent wait for the partition's first answer.
    pub(super) fn held(&self) -> bool {
        self.next().is_none() && self.batches.iter().any(|b| !b.sent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(base_sequence: i32, sent: bool) -> Batch {
        Batch {
            bytes: Vec::new(),
            records: 10,
            kv: 0,
            base_sequence,
            created: Instant::now(),
            sent,
        }
    }

    /// A partition's first batch in flight: no later one is sent before it is acknowledged
    /// (the broker, knowing no sequence of ours there, would write the later one first and
    /// refuse the first, sent again after a NOT_LEADER, as out of order); once one is
    /// acknowledged, the next ones go in flight behind each other.
    #[test]
    fn a_partitions_first_batch_is_sent_alone_until_acknowledged() {
        let mut part = Part::default();
        part.batches.extend([batch(0, false), batch(10, false)]);
        assert_eq!(part.next(), Some(0));
        part.batches[0].sent = true;
        assert_eq!(part.next(), None);
        assert!(part.held());
        part.batches[0].sent = false; // refused (NOT_LEADER): sent again, still alone
        assert_eq!(part.next(), Some(0));
        part.batches.pop_front(); // acknowledged
        part.acked = true;
        part.batches.push_back(batch(20, false));
        part.batches[0].sent = true;
        assert_eq!(part.next(), Some(1));
    }
}
