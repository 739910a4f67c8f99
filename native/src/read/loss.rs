//! Records that are gone: fail naming the partition, or (`fail_on_data_loss` off) warn naming
//! exactly the offsets lost and resume at the earliest offset still available.

use super::{ClusterReader, ReadFailure, WATERMARK_TIMEOUT_MS};

impl ClusterReader {
    /// Fail, or warn that offsets [next, `upto`) of a range are gone (`upto`: its end when
    /// `None`).
    pub(super) fn lost(
        &mut self,
        idx: usize,
        what: &str,
        error: &str,
        upto: Option<i64>,
    ) -> Result<(), ReadFailure> {
        let p = &self.pending[idx];
        let r = &p.range;
        let place = format!("{}/{}/{}", self.settings.cluster, r.topic, r.partition);
        if self.settings.fail_on_data_loss {
            return Err(ReadFailure::DataLoss(format!(
                "Data loss: offsets [{}, {}) of {place} cannot be read: {what} ({error}). \
                 Set failOnDataLoss=false to skip records that are gone.",
                p.next, r.end
            )));
        }
        let span = format!("[{}, {})", p.next, upto.unwrap_or(r.end));
        self.warnings.push(format!(
            "Data loss (failOnDataLoss=false): offsets {span} of {place}: {what}"
        ));
        Ok(())
    }

    /// The next offset of a range is not on the cluster: fail, or resume where records are.
    /// The warning names exactly the records lost: from the next offset to the earliest one
    /// still available, or to the range's end when none of the range is left.
    pub(super) fn out_of_range(&mut self, idx: usize, error: &str) -> Result<(), ReadFailure> {
        let what = "they are no longer available (retention, or the topic was recreated)";
        if self.settings.fail_on_data_loss {
            return self.lost(idx, what, error, None);
        }
        let (topic, partition) = {
            let r = &self.pending[idx].range;
            (r.topic.clone(), r.partition)
        };
        let (low, high) = self
            .consumer
            .watermarks(&topic, partition, WATERMARK_TIMEOUT_MS)
            .map_err(|e| self.failed(&e))?;
        let p = &self.pending[idx];
        let resume = resume_offset(p.next, p.range.end, low, high);
        self.lost(idx, what, error, resume)?;
        let Some(resume) = resume else {
            return self.done(idx);
        };
        self.pending[idx].next = resume;
        // With auto.offset.reset=error librdkafka stops fetching the partition and refuses to
        // seek it; assigning it again restarts its fetch and leaves the others as they are.
        self.consumer
            .incremental_unassign(&[(topic.as_str(), partition)])
            .and_then(|()| {
                self.consumer
                    .incremental_assign(&[(topic.as_str(), partition, resume)])
            })
            .map_err(|e| self.failed(&e))
    }
}

/// Where reading resumes after offset `next` of a range ending at `end` was out of range, given
/// the partition's watermarks: the earliest offset still available, or `None` when nothing of
/// the range is left (every offset from `next` to the end is lost).
fn resume_offset(next: i64, end: i64, low: i64, high: i64) -> Option<i64> {
    let resume = next.max(low);
    (resume < end.min(high)).then_some(resume)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_resumes_at_the_earliest_offset_left_of_the_range() {
        assert_eq!(resume_offset(100, 200, 150, 300), Some(150)); // [100, 150) lost
        assert_eq!(resume_offset(120, 200, 100, 300), Some(120)); // nothing lost
        assert_eq!(resume_offset(100, 200, 250, 300), None); // the whole range is gone
        assert_eq!(resume_offset(100, 200, 0, 5), None); // recreated with fewer records
    }
}
