//! What a partition's error code in a Produce answer means for its batch: written (no error,
//! or a duplicate of a batch already written), sent again (a retriable error), its partition's
//! failure (a permanent error), or the producer's; and the failure's text, worded as librdkafka words it.

/// A batch not acknowledged within `message.timeout.ms` (librdkafka's words).
pub const TIMED_OUT: &str = "_MSG_TIMED_OUT: Local: Message timed out";

/// What becomes of a batch, by its partition's error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Written,
    Retry,
    /// The batch's partition fails (its records are not written), with the error's name; the
    /// other partitions are written on.
    Refused(&'static str),
    /// The producer fails (its id or sequences are no longer good), with the error's name.
    Fatal(&'static str),
}

const DUPLICATE_SEQUENCE_NUMBER: i16 = 46;
const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;

/// The outcome of error code `error` for a batch; `first`: no batch of its partition before it
/// waits to be sent again (an out-of-order sequence is then fatal, else it follows from the
/// earlier batch's error and is retried with it).
pub fn outcome(error: i16, first: bool) -> Outcome {
    match error {
        0 | DUPLICATE_SEQUENCE_NUMBER => Outcome::Written,
        OUT_OF_ORDER_SEQUENCE_NUMBER if !first => Outcome::Retry,
        // Java's RetriableException subclasses the Produce path meets.
        2 | 3 | 5 | 6 | 7 | 9 | 13 | 14 | 15 | 16 | 19 | 20 | 56 | 74 | 75 | 89 | 100 => {
            Outcome::Retry
        }
        // and a transactional producer's: INVALID_TXN_STATE, TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        // PRODUCER_FENCED (another producer initialised its transactional id)
        OUT_OF_ORDER_SEQUENCE_NUMBER | 31 | 47 | 48 | 53 | 59 | 90 => Outcome::Fatal(name(error)),
        _ => Outcome::Refused(name(error)),
    }
}

/// Kafka's name of a Produce error code.
pub fn name(error: i16) -> &'static str {
    match error {
        10 => "MSG_SIZE_TOO_LARGE",
        18 => "RECORD_LIST_TOO_LARGE",
        29 => "TOPIC_AUTHORIZATION_FAILED",
        31 => "CLUSTER_AUTHORIZATION_FAILED",
        32 => "INVALID_TIMESTAMP",
        35 => "UNSUPPORTED_VERSION",
        43 => "UNSUPPORTED_FOR_MESSAGE_FORMAT",
        45 => "OUT_OF_ORDER_SEQUENCE_NUMBER",
        47 => "INVALID_PRODUCER_EPOCH",
        48 => "INVALID_TXN_STATE",
        53 => "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
        59 => "UNKNOWN_PRODUCER_ID",
        87 => "INVALID_RECORD",
        90 => "PRODUCER_FENCED",
        _ => "UNKNOWN",
    }
}

/// A fatal error's text: its name, code and the broker's message, if any.
pub fn text(name: &str, error: i16, message: Option<&str>) -> String {
    match message {
        Some(m) if !m.is_empty() => format!("{name}: Broker: error code {error}: {m}"),
        _ => format!("{name}: Broker: error code {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_written_retried_or_fatal_as_the_java_producer_takes_them() {
        assert_eq!(outcome(0, true), Outcome::Written);
        assert_eq!(outcome(46, true), Outcome::Written);
        assert_eq!(outcome(6, true), Outcome::Retry);
        assert_eq!(outcome(45, false), Outcome::Retry);
        assert_eq!(
            outcome(45, true),
            Outcome::Fatal("OUT_OF_ORDER_SEQUENCE_NUMBER")
        );
        assert_eq!(outcome(59, true), Outcome::Fatal("UNKNOWN_PRODUCER_ID"));
        assert_eq!(outcome(90, true), Outcome::Fatal("PRODUCER_FENCED"));
        assert_eq!(outcome(47, true), Outcome::Fatal("INVALID_PRODUCER_EPOCH"));
        assert_eq!(outcome(10, true), Outcome::Refused("MSG_SIZE_TOO_LARGE"));
        assert_eq!(
            outcome(29, true),
            Outcome::Refused("TOPIC_AUTHORIZATION_FAILED")
        );
        assert_eq!(
            text("MSG_SIZE_TOO_LARGE", 10, Some("too big")),
            "MSG_SIZE_TOO_LARGE: Broker: error code 10: too big"
        );
    }
}
