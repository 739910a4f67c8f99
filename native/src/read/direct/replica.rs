//! Preferred read replicas (KIP-392): a partition's leader may answer a Fetch with no records
//! and the id of another replica to read it from (its `replica.selector.class` chose one). The
//! direct path follows it, as the Java consumer and librdkafka do: the partition's next Fetch
//! requests go to that broker, which serves them up to its high watermark. A replica that
//! answers with an error code is left for the leader, as the Java consumer clears it (the
//! leader's answer decides then); a leader naming it again after that, or naming a broker the
//! metadata does not list, hands the read to librdkafka, which follows its own way.
//!
//! Not kept past the reader (a task's ranges), so no lease: the Java consumer asks the leader
//! again after `metadata.max.age.ms`, longer than a task reads.

use std::collections::{HashMap, HashSet};

/// A partition: (topic, partition).
type Key = (String, i32);

/// The replicas the path reads partitions from instead of their leaders.
#[derive(Debug, Default)]
pub struct Replicas {
    followed: HashMap<Key, i32>,
    /// Partitions whose followed replica answered an error: their leader is asked now.
    failed: HashSet<Key>,
}

impl Replicas {
    /// The broker to fetch `topic`/`partition` from: its preferred replica, else its leader.
    pub fn target(&self, topic: &str, partition: i32, leader: i32) -> i32 {
        // A lookup without a key's String: few partitions are followed, most reads none.
        if self.followed.is_empty() {
            return leader;
        }
        let key = (topic.to_string(), partition);
        self.followed.get(&key).copied().unwrap_or(leader)
    }

    /// A response of broker `from` named `replica` for the partition: follow it, or why not
    /// (`known`: the metadata lists the broker, with an address).
    pub fn named(
        &mut self,
        topic: &str,
        partition: i32,
        replica: i32,
        from: i32,
        known: bool,
    ) -> Result<(), String> {
        let key = (topic.to_string(), partition);
        let named = format!(
            "broker {from} named broker {replica} the preferred read replica of \
             {topic}/{partition}"
        );
        if !known {
            return Err(format!("{named}, a broker the metadata does not list"));
        }
        if self.failed.contains(&key) {
            return Err(format!("{named} again, after it answered an error"));
        }
        self.followed.insert(key, replica);
        Ok(())
    }

    /// Broker `from` answered an error code for the partition: whether it was the partition's
    /// followed replica, forgotten now (its leader is asked next); when not, the error is the
    /// leader's.
    pub fn failed(&mut self, topic: &str, partition: i32, from: i32) -> bool {
        let key = (topic.to_string(), partition);
        if self.followed.get(&key) != Some(&from) {
            return false;
        }
        self.followed.remove(&key);
        self.failed.insert(key);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_replica_is_fetched_from_until_it_answers_an_error() {
        let mut r = Replicas::default();
        assert_eq!(r.target("t", 0, 1), 1);
        r.named("t", 0, 2, 1, true).unwrap();
        assert_eq!((r.target("t", 0, 1), r.target("t", 1, 1)), (2, 1));
        // An error from the leader is the leader's; from the replica, the leader is asked.
        assert!(!r.failed("t", 0, 1));
        assert_eq!(r.target("t", 0, 1), 2);
        assert!(r.failed("t", 0, 2));
        assert_eq!(r.target("t", 0, 1), 1);
        let again = r.named("t", 0, 2, 1, true).unwrap_err();
        assert_eq!(
            again,
            "broker 1 named broker 2 the preferred read replica of t/0 again, after it \
             answered an error"
        );
        let unknown = r.named("t", 1, 7, 1, false).unwrap_err();
        assert!(
            unknown.ends_with(
                "broker 7 the preferred read replica of t/1, a broker the \
                                   metadata does not list"
            ),
            "{unknown}"
        );
    }
}
