//! Why bytes from a broker cannot be read: malformed (they break the protocol's rules) or
//! unsupported here (read by librdkafka instead); and the names of Kafka's error codes.

use super::primitives::Malformed;

/// Why a batch cannot be read here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    Malformed(&'static str),
    Unsupported(String),
}

impl From<Malformed> for Problem {
    fn from(m: Malformed) -> Self {
        Problem::Malformed(m.0)
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Malformed(what) => write!(f, "a malformed record batch: {what}"),
            Problem::Unsupported(what) => write!(f, "{what}"),
        }
    }
}

pub const UNSUPPORTED_SASL_MECHANISM: i16 = 33;

/// Kafka's name of an error code the direct path may meet ("" for others).
pub fn error_name(code: i16) -> &'static str {
    match code {
        1 => "OFFSET_OUT_OF_RANGE",
        2 => "CORRUPT_MESSAGE",
        3 => "UNKNOWN_TOPIC_OR_PARTITION",
        5 => "LEADER_NOT_AVAILABLE",
        6 => "NOT_LEADER_OR_FOLLOWER",
        7 => "REQUEST_TIMED_OUT",
        9 => "REPLICA_NOT_AVAILABLE",
        13 => "NETWORK_EXCEPTION",
        14 => "COORDINATOR_LOAD_IN_PROGRESS",
        15 => "COORDINATOR_NOT_AVAILABLE",
        16 => "NOT_COORDINATOR",
        29 => "TOPIC_AUTHORIZATION_FAILED",
        30 => "GROUP_AUTHORIZATION_FAILED",
        33 => "UNSUPPORTED_SASL_MECHANISM",
        34 => "ILLEGAL_SASL_STATE",
        35 => "UNSUPPORTED_VERSION",
        47 => "INVALID_PRODUCER_EPOCH",
        48 => "INVALID_TXN_STATE",
        49 => "INVALID_PRODUCER_ID_MAPPING",
        50 => "INVALID_TRANSACTION_TIMEOUT",
        51 => "CONCURRENT_TRANSACTIONS",
        52 => "TRANSACTION_COORDINATOR_FENCED",
        53 => "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
        55 => "OPERATION_NOT_ATTEMPTED",
        58 => "SASL_AUTHENTICATION_FAILED",
        74 => "FENCED_LEADER_EPOCH",
        75 => "UNKNOWN_LEADER_EPOCH",
        88 => "UNSTABLE_OFFSET_COMMIT",
        90 => "PRODUCER_FENCED",
        100 => "UNKNOWN_TOPIC_ID",
        _ => "",
    }
}
