//! A transactional producer's coordinators: its transaction coordinator (InitProducerId,
//! AddPartitionsToTxn, AddOffsetsToTxn, EndTxn) and each progress group's coordinator
//! (TxnOffsetCommit; OffsetFetch, its markers read), found with FindCoordinator over the
//! cluster's control connection, one connection to each kept.
//!
//! An answer's error decides, as the Java producer's TransactionManager takes them: the
//! coordinator moved or is away (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, a lost
//! connection) has it found again; it is busy (COORDINATOR_LOAD_IN_PROGRESS,
//! CONCURRENT_TRANSACTIONS, a partition not known yet, offsets a transaction is committing:
//! UNSTABLE_OFFSET_COMMIT, retriable in the Java client too) has the request sent again; both after
//! a backoff that doubles up to a second, until the call's deadline. Any other error (fenced:
//! PRODUCER_FENCED, INVALID_PRODUCER_EPOCH; not authorised; INVALID_TXN_STATE) fails the call.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::leaders::Cluster;
use crate::connection::broker::{Broker, Refusal};
use crate::connection::Connection;
use crate::protocol::add_partitions_to_txn::parse_partition_errors;
use crate::protocol::api_versions::spoken;
use crate::protocol::end_txn::parse_error;
use crate::protocol::error::error_name;
use crate::protocol::find_coordinator::{
    find_coordinator_request, parse_find_coordinator, FIND_COORDINATOR,
};
use crate::protocol::primitives::{Api, Header, Malformed};

/// The start of a call's failure when the coordinator does not speak the API at any version
/// asked (the caller may ask otherwise).
pub const UNOFFERED: &str = "the coordinator does not offer";

/// Why an answer is not what was asked for, and what follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Sent again after the backoff.
    Retry(String),
    /// The coordinator is found again (its connection dropped), then the request sent again.
    Refind(String),
    /// The call fails.
    Fatal(String),
}

/// What error code `code` of an answer to `api` means.
pub fn class(api: &str, code: i16) -> Answer {
    let why = format!(
        "{}: Broker: error code {code} answering {api}",
        match error_name(code) {
            "" => "UNKNOWN",
            name => name,
        }
    );
    match code {
        15 | 16 => Answer::Refind(why),
        // REQUEST_TIMED_OUT, NETWORK_EXCEPTION, COORDINATOR_LOAD_IN_PROGRESS,
        // CONCURRENT_TRANSACTIONS, UNKNOWN_TOPIC_OR_PARTITION, OPERATION_NOT_ATTEMPTED (another
        // partition's error decides), UNSTABLE_OFFSET_COMMIT (a transaction commits offsets)
        3 | 7 | 13 | 14 | 51 | 55 | 88 => Answer::Retry(why),
        _ => Answer::Fatal(why),
    }
}

/// The answer of several partitions' error codes (none but 0: done): the gravest.
pub fn gravest(api: &str, codes: impl IntoIterator<Item = i16>) -> Result<(), Answer> {
    let mut worst: Option<Answer> = None;
    for code in codes.into_iter().filter(|&c| c != 0) {
        let answer = class(api, code);
        let rank = |a: &Answer| match a {
            Answer::Retry(_) => 0,
            Answer::Refind(_) => 1,
            Answer::Fatal(_) => 2,
        };
        if worst.as_ref().is_none_or(|w| rank(&answer) > rank(w)) {
            worst = Some(answer);
        }
    }
    worst.map_or(Ok(()), Err)
}

/// A malformed answer to `api`: its connection is dropped and the request sent again.
pub fn malformed(api: &'static str) -> impl Fn(Malformed) -> Answer {
    move |m| Answer::Refind(format!("a malformed {api} answer: {}", m.0))
}

/// The judge of an answer to `api` that is a throttle time then an error code (EndTxn,
/// AddOffsetsToTxn): done at 0.
pub fn error_code(api: Api) -> impl FnMut(&[u8]) -> Result<(), Answer> {
    move |body| match parse_error(body) {
        Ok(0) => Ok(()),
        Ok(e) => Err(class(api.name, e)),
        Err(m) => Err(malformed(api.name)(m)),
    }
}

/// The judge of an answer to `api` of each partition's error code (AddPartitionsToTxn,
/// TxnOffsetCommit): the gravest decides.
pub fn partition_codes(api: Api) -> impl FnMut(&[u8]) -> Result<(), Answer> {
    move |body| {
        let answers = parse_partition_errors(body).map_err(malformed(api.name))?;
        gravest(api.name, answers.iter().map(|a| a.2))
    }
}

/// The coordinators' connections.
pub struct Coordinators {
    connection: Connection,
    backoff: Duration,
    /// (key type, key) to its coordinator's connection.
    open: HashMap<(i8, String), Broker>,
}

impl Coordinators {
    pub fn new(connection: Connection, backoff: Duration) -> Self {
        Coordinators {
            connection,
            backoff: backoff.max(Duration::from_millis(20)),
            open: HashMap::new(),
        }
    }

    /// Send the request of `api` that `build` writes (given its header) to the coordinator of
    /// `key` (key type, key) and `judge` its answer, sent again as [`Answer`] says until
    /// `deadline`.
    pub fn call<T>(
        &mut self,
        cluster: &mut Cluster,
        key: (i8, &str),
        api: Api,
        deadline: Instant,
        build: &dyn Fn(Header<'_>) -> Vec<u8>,
        judge: &mut dyn FnMut(&[u8]) -> Result<T, Answer>,
    ) -> Result<T, String> {
        let mut pause = self.backoff;
        loop {
            let why = match self.attempt(cluster, key, api, build, judge) {
                Ok(t) => return Ok(t),
                Err(Answer::Fatal(why)) => return Err(why),
                Err(Answer::Refind(why)) => {
                    self.open.remove(&(key.0, key.1.to_string()));
                    why
                }
                Err(Answer::Retry(why)) => why,
            };
            if Instant::now() + pause >= deadline {
                return Err(format!("{} timed out: {why}", api.name));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }

    fn attempt<T>(
        &mut self,
        cluster: &mut Cluster,
        (key_type, key): (i8, &str),
        api: Api,
        build: &dyn Fn(Header<'_>) -> Vec<u8>,
        judge: &mut dyn FnMut(&[u8]) -> Result<T, Answer>,
    ) -> Result<T, Answer> {
        let k = (key_type, key.to_string());
        if self.open.get(&k).is_none_or(Broker::expiring) {
            let broker = self.find(cluster, key_type, key)?;
            self.open.insert(k.clone(), broker);
        }
        let broker = self.open.get_mut(&k).expect("inserted above");
        let version = broker
            .versions()
            .pick(&api)
            .ok_or_else(|| Answer::Fatal(format!("{UNOFFERED} {}", spoken(&api))))?;
        let mut body = Vec::new();
        broker
            .call(|c, id| build(Header::new(version, c, id)), &mut body)
            .map_err(|no| Answer::Refind(no.why))?;
        judge(&body)
    }

    /// Find the coordinator of `key` and connect to it.
    fn find(&mut self, cluster: &mut Cluster, key_type: i8, key: &str) -> Result<Broker, Answer> {
        let build = |header: Header<'_>| find_coordinator_request(header, key, key_type);
        let asked = cluster.control_request(FIND_COORDINATOR, &build);
        if let Some(why) = cluster.refused.take() {
            return Err(Answer::Fatal(why));
        }
        let (_, body) = asked.map_err(Answer::Retry)?;
        let found = parse_find_coordinator(&body).map_err(malformed(FIND_COORDINATOR.name))?;
        if found.error != 0 {
            return Err(match class(FIND_COORDINATOR.name, found.error) {
                Answer::Refind(why) => Answer::Retry(why),
                other => other,
            });
        }
        let port = u16::try_from(found.port)
            .map_err(|_| Answer::Retry(format!("the coordinator's port is {}", found.port)))?;
        Broker::connect(&found.host, port, &self.connection, &[]).map_err(|r| match r {
            Refusal::Unreachable(why) => Answer::Retry(why),
            Refusal::Refused(why) => Answer::Fatal(why),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinator_errors_are_retried_found_again_or_fatal_as_java_takes_them() {
        for code in [3, 7, 13, 14, 51, 55, 88] {
            assert!(matches!(class("X", code), Answer::Retry(_)), "{code}");
        }
        for code in [15, 16] {
            assert!(matches!(class("X", code), Answer::Refind(_)), "{code}");
        }
        for code in [47, 48, 53, 90, 29, 30, 1234] {
            assert!(matches!(class("X", code), Answer::Fatal(_)), "{code}");
        }
        assert_eq!(
            class("EndTxn", 90),
            Answer::Fatal("PRODUCER_FENCED: Broker: error code 90 answering EndTxn".into())
        );
        assert_eq!(gravest("X", [0, 0]), Ok(()));
        assert!(matches!(gravest("X", [55, 90, 51]), Err(Answer::Fatal(_))));
        assert!(matches!(gravest("X", [51, 16]), Err(Answer::Refind(_))));
        assert!(matches!(gravest("X", [55, 0]), Err(Answer::Retry(_))));
    }
}
