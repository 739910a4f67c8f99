//! Where each range's partition is: its position as librdkafka reports it (corrected for an
//! EOF event), ranges finished by position, and the "stuck" message naming each range.

use super::{ClusterReader, Range, ReadFailure};

pub(super) struct Pending {
    pub(super) range: Range,
    pub(super) next: i64,
    /// The offset of the partition-EOF event seen last, unless a record came after it.
    pub(super) eof: Option<i64>,
}

impl Pending {
    /// The consumer's position as it really is. librdkafka 2.12.1's batch consume
    /// (`rd_kafka_q_serve_rkmessages`) also moves a partition's position past the offset of an
    /// EOF *event*, to EOF + 1, though the record at EOF was not returned yet (checked here: 3
    /// records, EOF at 3, position 4; confluent-kafka's librdkafka reports 3). Trusting it would
    /// end a range one record early.
    pub(super) fn position(&self, reported: i64) -> i64 {
        match self.eof {
            Some(eof) if reported == eof + 1 => eof,
            // Nothing consumed yet since the direct fetch path handed over: it read up to here.
            _ if reported < 0 && self.next > self.range.start => self.next,
            _ => reported,
        }
    }
}

impl ClusterReader {
    fn pending_parts(&self) -> Vec<(&str, i32)> {
        self.pending
            .iter()
            .map(|p| (p.range.topic.as_str(), p.range.partition))
            .collect()
    }

    pub(super) fn finish_by_position(&mut self) -> Result<(), ReadFailure> {
        let positions = self
            .consumer
            .positions(&self.pending_parts())
            .map_err(|e| self.failed(&e))?;
        let done: Vec<usize> = positions
            .iter()
            .enumerate()
            .filter(|(i, pos)| self.pending[*i].position(**pos) >= self.pending[*i].range.end)
            .map(|(i, _)| i)
            .collect();
        for idx in done.into_iter().rev() {
            self.done(idx)?;
        }
        Ok(())
    }

    pub(super) fn stuck_message(&self) -> String {
        let positions = self
            .consumer
            .positions(&self.pending_parts())
            .unwrap_or_else(|_| vec![-1001; self.pending.len()]);
        stuck_message(
            &self.settings.cluster,
            self.settings.poll_timeout_ms,
            self.pending
                .iter()
                .zip(positions)
                .map(|(p, pos)| (&p.range, p.position(pos))),
        )
    }
}

pub(super) fn stuck_message<'a>(
    cluster: &str,
    poll_timeout_ms: u64,
    stuck: impl Iterator<Item = (&'a Range, i64)>,
) -> String {
    let parts: Vec<String> = stuck
        .map(|(r, pos)| {
            format!(
                "{cluster}/{}/{} range [{}, {}) stuck at position {pos}",
                r.topic, r.partition, r.start, r.end
            )
        })
        .collect();
    format!(
        "No progress for kafkaConsumer.pollTimeoutMs={poll_timeout_ms} ms: {}. \
         The cluster may be unreachable or the records may have been deleted.",
        parts.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_one_past_an_eof_event_is_the_eof() {
        let range = Range {
            topic: "t".into(),
            partition: 0,
            start: 0,
            end: 10,
        };
        let mut p = Pending {
            range,
            next: 3,
            eof: None,
        };
        assert_eq!(p.position(4), 4);
        p.eof = Some(3);
        assert_eq!(p.position(4), 3);
        assert_eq!(p.position(6), 6); // control records moved it further
    }

    #[test]
    fn stuck_message_names_each_range_and_position() {
        let r = Range {
            topic: "orders".into(),
            partition: 2,
            start: 5,
            end: 9,
        };
        let s = Range {
            topic: "pay".into(),
            partition: 0,
            start: 0,
            end: 1,
        };
        let text = stuck_message("east", 1500, [(&r, 7), (&s, -1001)].into_iter());
        assert_eq!(
            text,
            "No progress for kafkaConsumer.pollTimeoutMs=1500 ms: east/orders/2 range [5, 9) \
             stuck at position 7; east/pay/0 range [0, 1) stuck at position -1001. The cluster \
             may be unreachable or the records may have been deleted."
        );
    }
}
