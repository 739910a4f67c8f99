//! read_committed's filter for one partition's fetched data, by the Java consumer's rules
//! (`CompletedFetch.nextFetchedBatch`).
//!
//! A Fetch response lists the partition's aborted transactions whose abort marker is at or past
//! the fetch offset, as (producer id, first offset). For every batch with a producer id, control
//! batches included, the entries whose first offset is at or before the batch's last offset are
//! taken first; only then does the batch act: an abort marker ends its producer's aborted
//! transaction, and a transactional data batch of a producer with one open is hidden. Taking the
//! entries before acting matters when a fetch starts on an abort marker: the broker still lists
//! the transaction it ends, and the marker must consume that entry, or it would hide the
//! producer's next, committed, transaction.

use std::collections::HashSet;

use super::error::Problem;
use super::records::{control, BatchHead, Control};

/// The aborted transactions of one partition's fetched data.
#[derive(Debug, Default)]
pub struct Aborted {
    /// Not yet reached, sorted by first offset, the last first (popped from the end).
    waiting: Vec<(i64, i64)>,
    /// Producers whose aborted transaction is under way (a set: a response may list millions of
    /// entries, each looked up once per batch).
    open: HashSet<i64>,
}

impl Aborted {
    /// The filter for a response's aborted transactions: (producer id, first offset).
    pub fn new(mut list: Vec<(i64, i64)>) -> Self {
        list.sort_by_key(|&(producer, first)| std::cmp::Reverse((first, producer)));
        Aborted {
            waiting: list,
            open: HashSet::new(),
        }
    }

    /// Whether the batch's records are hidden from read_committed (control batches always
    /// are); an abort marker updates the filter. `batch` is the whole batch, `max_size` the
    /// bound of its decompressed records.
    pub fn hides(&mut self, h: &BatchHead, batch: &[u8], max_size: usize) -> Result<bool, Problem> {
        if h.has_producer_id() {
            while let Some(&(producer, first)) = self.waiting.last() {
                if first > h.last_offset {
                    break;
                }
                self.waiting.pop();
                self.open.insert(producer);
            }
            if h.is_control() {
                if control(h, batch, max_size)? == Control::Abort {
                    self.open.remove(&h.producer_id);
                }
            } else if h.is_transactional() && self.open.contains(&h.producer_id) {
                return Ok(true);
            }
        }
        Ok(h.is_control())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::records::{head, CONTROL, TRANSACTIONAL};
    use crate::protocol::sample::{batch, marker};

    const MAX: usize = 1 << 20;

    fn tx(base: i64, producer: i64) -> Vec<u8> {
        batch(
            base,
            TRANSACTIONAL,
            producer,
            &[(0, None, Some(b"x"), vec![])],
        )
    }

    fn hides(f: &mut Aborted, b: &[u8]) -> bool {
        f.hides(&head(b).unwrap(), b, MAX).unwrap()
    }

    #[test]
    fn aborted_transactions_hide_their_producers_batches_until_the_marker() {
        let mut f = Aborted::new(vec![(7, 10), (8, 30)]);
        assert!(!hides(&mut f, &tx(5, 7)));
        assert!(hides(&mut f, &tx(10, 7)));
        assert!(!hides(&mut f, &tx(11, 9)));
        assert!(!hides(&mut f, &batch(12, 0, 7, &[(0, None, None, vec![])])));
        assert!(hides(&mut f, &marker(20, 7, 0)));
        assert!(!hides(&mut f, &tx(21, 7)));
        assert!(hides(&mut f, &tx(30, 8)));
    }

    #[test]
    fn a_fetch_starting_on_an_abort_marker_leaves_the_next_transaction_visible() {
        // P's aborted transaction began at 10 and its abort marker is at 20: a fetch from 20
        // still lists it. The marker takes the entry, so P's committed batch at 21 is read.
        let mut f = Aborted::new(vec![(7, 10)]);
        assert!(hides(&mut f, &marker(20, 7, 0)));
        assert!(!hides(&mut f, &tx(21, 7)));
        assert!(hides(&mut f, &marker(22, 7, 1)));
        // Two producers: Q's entry is taken by P's marker batch too (both start before it), and
        // stays open until Q's own marker.
        let mut f = Aborted::new(vec![(7, 10), (8, 12)]);
        assert!(hides(&mut f, &marker(20, 7, 0)));
        assert!(hides(&mut f, &tx(21, 8)));
        assert!(!hides(&mut f, &tx(22, 7)));
        assert!(hides(&mut f, &marker(23, 8, 0)));
        assert!(!hides(&mut f, &tx(24, 8)));
    }

    #[test]
    fn a_response_listing_many_aborted_transactions_is_filtered_in_linear_time() {
        // 200,000 producers' aborted transactions before one batch: each entry is taken once
        // and looked up in a set (a list took minutes: each entry searched all open ones).
        let many: Vec<(i64, i64)> = (0..200_000).map(|p| (p, p % 7)).collect();
        let mut f = Aborted::new(many);
        assert!(hides(&mut f, &tx(10, 199_999)));
        assert!(!hides(&mut f, &tx(11, 200_000)));
        assert_eq!((f.waiting.len(), f.open.len()), (0, 200_000));
    }

    #[test]
    fn batches_without_a_producer_id_are_never_hidden_nor_take_entries() {
        let mut f = Aborted::new(vec![(7, 10)]);
        assert!(!hides(
            &mut f,
            &batch(10, 0, -1, &[(0, None, None, vec![])])
        ));
        assert_eq!(f.waiting, vec![(7, 10)]);
        assert!(hides(&mut f, &tx(11, 7)));
    }

    #[test]
    fn control_keys_are_checked_as_the_java_consumer_checks_them() {
        let short = batch(
            5,
            TRANSACTIONAL | CONTROL,
            7,
            &[(0, Some(&[0, 0, 0]), None, vec![])],
        );
        let h = head(&short).unwrap();
        let why = Aborted::new(vec![]).hides(&h, &short, MAX).unwrap_err();
        assert!(matches!(why, Problem::Malformed(w) if w.contains("shorter than 4")));
        let negative = batch(
            5,
            TRANSACTIONAL | CONTROL,
            7,
            &[(0, Some(&[0xff, 0xff, 0, 0]), None, vec![])],
        );
        let h = head(&negative).unwrap();
        assert!(Aborted::new(vec![]).hides(&h, &negative, MAX).is_err());
        // A commit marker (type 1) and an unknown type (e.g. a leader change, 2) end nothing.
        let mut f = Aborted::new(vec![(7, 1)]);
        assert!(hides(&mut f, &marker(3, 7, 1)));
        assert!(hides(&mut f, &marker(4, 7, 2)));
        assert!(hides(&mut f, &tx(5, 7)));
    }
}
