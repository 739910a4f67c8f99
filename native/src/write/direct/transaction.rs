//! A transactional producer on the direct produce path (KIP-98, as the Java producer's
//! TransactionManager runs it; [`super::DirectWriter`]'s [`BatchProducer`] methods of the same
//! names): `init_transactions` asks the transaction coordinator for the
//! producer id and epoch of the `transactional.id` (fencing its older producers and ending
//! their open transaction); between `begin_transaction` and its end, every partition is added
//! to the transaction (AddPartitionsToTxn) before its first batch is shipped; `send_offset`
//! adds a group's offsets (AddOffsetsToTxn) and commits them to the group's coordinator inside
//! the transaction (TxnOffsetCommit); `commit_transaction` sends and waits for every batch,
//! then ends the transaction (EndTxn, commit); `abort_transaction` drops what was not sent,
//! waits for what was, and ends it (EndTxn, abort). `committed_offsets` reads a group's stable
//! offsets from its coordinator (OffsetFetch v7): the sink's progress markers, over the
//! producer's own connections.
//!
//! A failed producer (fenced, a refused batch, records not acknowledged in time) never commits:
//! the commit fails and the caller aborts.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use super::config::ProduceConfig;
use super::coordinator::{
    class, error_code, malformed, partition_codes, Answer, Coordinators, UNOFFERED,
};
use super::leaders::Cluster;
use super::DirectWriter;
use crate::protocol::add_offsets_to_txn::{add_offsets_request, ADD_OFFSETS_TO_TXN};
use crate::protocol::add_partitions_to_txn::{add_partitions_request, ADD_PARTITIONS_TO_TXN};
use crate::protocol::end_txn::{end_txn_request, END_TXN};
use crate::protocol::find_coordinator::{GROUP, TRANSACTION};
use crate::protocol::init_producer_id::{
    init_producer_id_request, parse_init_producer_id, Transactional, INIT_PRODUCER_ID,
};
use crate::protocol::offset_fetch::{offset_fetch_request, parse_offset_fetch, OFFSET_FETCH};
use crate::protocol::primitives::{Api, Header};
use crate::protocol::txn_offset_commit::{txn_offset_commit_request, Offset, TXN_OFFSET_COMMIT};
use crate::write::batch_producer::{BatchProducer, CommittedOffset};
use crate::write::Failure;

/// A transactional producer's state.
pub struct Txn {
    id: String,
    timeout_ms: i32,
    coordinators: Coordinators,
    /// Initialised (and not since needing a new epoch: an abort dropped batches).
    ready: bool,
    /// A transaction is open.
    pub open: bool,
    /// The partitions (topic index, partition) added to the open transaction.
    added: HashSet<(usize, i32)>,
    /// Offsets were added to the open transaction.
    offsets: bool,
}

impl Txn {
    /// The transactional state of a producer of `config`, if it has a transactional id.
    pub fn of(config: &ProduceConfig) -> Option<Txn> {
        let id = config.transactional_id.clone()?;
        Some(Txn {
            id,
            timeout_ms: config.transaction_timeout_ms,
            coordinators: Coordinators::new(config.connection.clone(), config.retry_backoff),
            ready: false,
            open: false,
            added: HashSet::new(),
            offsets: false,
        })
    }

    /// Ask the transaction coordinator ([`Coordinators::call`] for the transactional id).
    fn ask<T>(
        &mut self,
        cluster: &mut Cluster,
        (api, by): (Api, Instant),
        build: &dyn Fn(Header<'_>) -> Vec<u8>,
        judge: &mut dyn FnMut(&[u8]) -> Result<T, Answer>,
    ) -> Result<T, Failure> {
        let key = (TRANSACTION, self.id.as_str());
        let answer = self.coordinators.call(cluster, key, api, by, build, judge);
        answer.map_err(|why| (None, why))
    }
}

fn fail<T>(why: impl Into<String>) -> Result<T, Failure> {
    Err((None, why.into()))
}

fn deadline(timeout_ms: u64) -> Instant {
    Instant::now() + Duration::from_millis(timeout_ms)
}

impl DirectWriter {
    fn txn(&mut self) -> Result<&mut Txn, Failure> {
        match self.txn.as_mut() {
            Some(t) => Ok(t),
            None => fail("the producer has no transactional.id"),
        }
    }

    /// Fence the older producers of the transactional id (their open transaction ended) and
    /// take a producer id and epoch of its own, within `timeout_ms`.
    pub(super) fn init(&mut self, timeout_ms: u64) -> Result<(), Failure> {
        let by = deadline(timeout_ms);
        let txn = self.txn()?;
        if txn.open {
            return fail("a transaction is open");
        }
        let (id, timeout) = (txn.id.clone(), txn.timeout_ms);
        let build = |h: Header<'_>| init_producer_id_request(h, Some((&id, timeout)));
        let txn = self.txn.as_mut().expect("checked above");
        let cluster = &mut self.wire.cluster;
        let given = txn.ask(cluster, (INIT_PRODUCER_ID, by), &build, &mut |body| {
            let a = parse_init_producer_id(body).map_err(malformed(INIT_PRODUCER_ID.name))?;
            match a.error {
                0 => Ok((a.id, a.epoch)),
                e => Err(class(INIT_PRODUCER_ID.name, e)),
            }
        })?;
        self.wire.cluster.producer = Some(given);
        self.wire.parts.clear(); // a new epoch: every partition's sequence from 0
        txn.ready = true;
        Ok(())
    }

    /// Begin a transaction.
    pub(super) fn begin(&mut self) -> Result<(), Failure> {
        let failed = self.wire.error.clone();
        let txn = self.txn()?;
        if !txn.ready {
            return fail("the producer is not initialised (init_transactions first)");
        }
        if txn.open {
            return fail("a transaction is already open");
        }
        if let Some((_, why)) = failed {
            return fail(format!("the producer failed: {why}"));
        }
        txn.open = true;
        txn.added.clear();
        txn.offsets = false;
        Ok(())
    }

    /// Add every partition with batches to ship, not yet in the open transaction, to it; a
    /// failure fails the producer (nothing more is shipped). A producer that failed already
    /// ships nothing more either: its transaction cannot commit.
    pub(super) fn add_partitions(&mut self) {
        let Some(txn) = self.txn.as_mut() else {
            return;
        };
        if self.wire.error.is_some() {
            self.wire.fail(0, String::new()); // the first failure is kept
            return;
        }
        let wire = &self.wire;
        let new: Vec<(usize, i32)> = wire
            .parts
            .iter()
            .filter(|(k, p)| !p.batches.is_empty() && !txn.added.contains(k))
            .map(|(k, _)| *k)
            .collect();
        let Some(&(first, _)) = new.first() else {
            return;
        };
        let mut names: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for &(t, p) in &new {
            names
                .entry(wire.topics[t].name.clone())
                .or_default()
                .push(p);
        }
        let topics: Vec<(&str, Vec<i32>)> =
            names.iter().map(|(n, p)| (n.as_str(), p.clone())).collect();
        let id = txn.id.clone();
        let t = Transactional::new(&id, wire.cluster.producer.unwrap_or((-1, -1)));
        let build = |h: Header<'_>| add_partitions_request(h, &t, &topics);
        let by = Instant::now() + self.wire.config.message_timeout;
        let judge = &mut partition_codes(ADD_PARTITIONS_TO_TXN);
        let cluster = &mut self.wire.cluster;
        match txn.ask(cluster, (ADD_PARTITIONS_TO_TXN, by), &build, judge) {
            Ok(()) => txn.added.extend(new),
            Err((_, why)) => self.wire.fail(first, why),
        }
    }

    /// The open transaction's producer, or why there is none.
    fn transacting(&mut self) -> Result<(String, (i64, i16)), Failure> {
        let producer = self.wire.cluster.producer.unwrap_or((-1, -1));
        let txn = self.txn()?;
        if !txn.open {
            return fail("no transaction is open");
        }
        Ok((txn.id.clone(), producer))
    }

    /// Commit `offset` (with `metadata`) of `topic`'s `partition` for `group` inside the open
    /// transaction, within `timeout_ms`.
    pub(super) fn commit_offset(
        &mut self,
        group: &str,
        (topic, partition, offset): (&str, i32, i64),
        metadata: &[u8],
        timeout_ms: u64,
    ) -> Result<(), Failure> {
        let by = deadline(timeout_ms);
        let (id, producer) = self.transacting()?;
        if let Some((_, why)) = &self.wire.error {
            return fail(format!("the producer failed: {why}"));
        }
        let t = Transactional::new(&id, producer);
        let txn = self.txn.as_mut().expect("transacting");
        let cluster = &mut self.wire.cluster;
        let build = |h: Header<'_>| add_offsets_request(h, &t, group);
        let judge = &mut error_code(ADD_OFFSETS_TO_TXN);
        txn.ask(cluster, (ADD_OFFSETS_TO_TXN, by), &build, judge)?;
        txn.offsets = true;
        let offsets = [Offset {
            topic,
            partition,
            offset,
            metadata,
        }];
        let build = |h: Header<'_>| txn_offset_commit_request(h, &t, group, &offsets);
        let judge = &mut partition_codes(TXN_OFFSET_COMMIT);
        let committed = txn.coordinators.call(
            cluster,
            (GROUP, group),
            TXN_OFFSET_COMMIT,
            by,
            &build,
            judge,
        );
        committed.map_err(|why| (None, why))
    }

    /// The offsets `group` committed on `places` (topic, partition), asked of the group's
    /// coordinator with stable offsets required (a transaction committing some is waited for:
    /// asked again) within `timeout_ms`: each place's (topic, partition, offset (-1: none),
    /// metadata); a place the coordinator does not know (UNKNOWN_TOPIC_OR_PARTITION) has none.
    /// `None` without a transactional id, or when the coordinator does not speak OffsetFetch v7
    /// (a broker before Kafka 2.5): the caller asks otherwise.
    pub(super) fn fetch_offsets(
        &mut self,
        group: &str,
        places: &[(&str, i32)],
        timeout_ms: u64,
    ) -> Result<Option<Vec<CommittedOffset>>, Failure> {
        let by = deadline(timeout_ms);
        let Some(txn) = self.txn.as_mut() else {
            return Ok(None);
        };
        let build = |h: Header<'_>| offset_fetch_request(h, group, places, true);
        let judge = &mut |body: &[u8]| {
            let (error, answers) =
                parse_offset_fetch(body).map_err(malformed(OFFSET_FETCH.name))?;
            if error != 0 {
                return Err(class(OFFSET_FETCH.name, error));
            }
            let mut found = Vec::with_capacity(answers.len());
            for a in answers {
                match a.error {
                    0 => {
                        let metadata = a.metadata.map(|m| String::from_utf8_lossy(m).into_owned());
                        found.push((a.topic.to_string(), a.partition, a.offset, metadata));
                    }
                    3 => {} // UNKNOWN_TOPIC_OR_PARTITION: no offset there
                    // UNSTABLE_OFFSET_COMMIT among them: asked again
                    e => return Err(class(OFFSET_FETCH.name, e)),
                }
            }
            Ok(found)
        };
        let cluster = &mut self.wire.cluster;
        match txn
            .coordinators
            .call(cluster, (GROUP, group), OFFSET_FETCH, by, &build, judge)
        {
            Ok(found) => Ok(Some(found)),
            Err(why) if why.starts_with(UNOFFERED) => Ok(None),
            Err(why) => Err((None, why)),
        }
    }

    /// Send every batch and wait for it within `timeout_ms`, then commit the open transaction
    /// (within `timeout_ms` more). Fails, committing nothing, when the producer failed or a
    /// record is not acknowledged in time.
    pub(super) fn commit(&mut self, timeout_ms: u64) -> Result<(), Failure> {
        self.transacting()?;
        let failed = |w: &DirectWriter| {
            w.wire.error.clone().map(|(t, why)| {
                let name = w.wire.topics.get(t).map(|t| t.name.clone());
                (name, format!("the transaction cannot commit: {why}"))
            })
        };
        if let Some(f) = failed(self) {
            return Err(f);
        }
        let left = BatchProducer::flush(self, timeout_ms)?;
        if let Some(f) = failed(self) {
            return Err(f);
        }
        if left > 0 {
            return fail(format!(
                "the transaction cannot commit: {left} records were not acknowledged within \
                 {timeout_ms} ms"
            ));
        }
        self.end(true, timeout_ms)
    }

    /// Abort the open transaction: drop the batches not sent, wait for those in flight, and end
    /// it within `timeout_ms`. Without a transaction open, nothing to do.
    pub(super) fn abort(&mut self, timeout_ms: u64) -> Result<(), Failure> {
        if !self.txn()?.open {
            return Ok(());
        }
        self.pending.clear();
        self.acc.close_all();
        self.acc.full.clear();
        let dropped = self.wire.drop_batches();
        let txn = self.txn()?;
        txn.ready &= !dropped;
        self.end(false, timeout_ms)
    }

    /// EndTxn: the open transaction committed or aborted (nothing to ask when it added
    /// nothing: the coordinator never heard of it).
    fn end(&mut self, commit: bool, timeout_ms: u64) -> Result<(), Failure> {
        let by = deadline(timeout_ms);
        let (id, producer) = self.transacting()?;
        let txn = self.txn.as_mut().expect("transacting");
        if txn.added.is_empty() && !txn.offsets {
            txn.open = false;
            return Ok(());
        }
        let t = Transactional::new(&id, producer);
        let build = |h: Header<'_>| end_txn_request(h, &t, commit);
        let judge = &mut error_code(END_TXN);
        let cluster = &mut self.wire.cluster;
        let ended = txn.ask(cluster, (END_TXN, by), &build, judge);
        // A commit that failed stays open: the caller aborts it.
        if ended.is_ok() || !commit {
            txn.open = false;
            txn.added.clear();
            txn.offsets = false;
        }
        ended
    }
}
