//! A librdkafka consumer: partitions assigned (no group join), paused, resumed; positions,
//! watermarks and batches of messages from its consumer queue.

use std::ptr::{self, NonNull};

use rdkafka_sys as rd;

use super::{c_string, code_result, error_result, new_client, Message, PartitionList, Statistics};

/// A librdkafka consumer with its consumer queue; closed and destroyed on drop.
pub struct Consumer {
    pub(super) rk: NonNull<rd::rd_kafka_t>,
    queue: NonNull<rd::rd_kafka_queue_t>,
    /// Filled by librdkafka's statistics callback; dropped after the client (see `Drop`).
    statistics: Statistics,
}

// SAFETY: librdkafka handles are thread-safe; the reader uses one from one thread at a time.
unsafe impl Send for Consumer {}

impl Consumer {
    /// Create a consumer from the full configuration (no group join: partitions are assigned).
    pub fn new(config: &[(String, String)]) -> Result<Self, String> {
        let statistics = Statistics::default();
        let rk = new_client(rd::rd_kafka_type_t::RD_KAFKA_CONSUMER, config, |conf| {
            statistics.install(conf)
        })?;
        // SAFETY: rk is a live consumer handle.
        unsafe { rd::rd_kafka_poll_set_consumer(rk.as_ptr()) };
        // SAFETY: rk is live; the queue reference is released on drop.
        let queue = unsafe { rd::rd_kafka_queue_get_consumer(rk.as_ptr()) };
        let Some(queue) = NonNull::new(queue) else {
            // SAFETY: rk is live and owned.
            unsafe { rd::rd_kafka_destroy(rk.as_ptr()) };
            return Err("the consumer has no consumer queue".to_string());
        };
        Ok(Consumer {
            rk,
            queue,
            statistics,
        })
    }

    /// Replace the assignment with these partitions at these offsets.
    pub fn assign(&self, parts: &[(&str, i32, i64)]) -> Result<(), String> {
        let list = PartitionList::new(parts)?;
        // SAFETY: both handles are live for the call.
        code_result(unsafe { rd::rd_kafka_assign(self.rk.as_ptr(), list.0.as_ptr()) })
    }

    /// Drop the whole assignment.
    pub fn unassign(&self) -> Result<(), String> {
        // SAFETY: a NULL list means "unassign all".
        code_result(unsafe { rd::rd_kafka_assign(self.rk.as_ptr(), ptr::null()) })
    }

    /// Add partitions at these offsets to the assignment.
    pub fn incremental_assign(&self, parts: &[(&str, i32, i64)]) -> Result<(), String> {
        let list = PartitionList::new(parts)?;
        // SAFETY: both handles are live for the call.
        error_result(unsafe { rd::rd_kafka_incremental_assign(self.rk.as_ptr(), list.0.as_ptr()) })
    }

    /// Remove partitions from the assignment.
    pub fn incremental_unassign(&self, parts: &[(&str, i32)]) -> Result<(), String> {
        let list = PartitionList::new(&with_offsets(parts))?;
        // SAFETY: both handles are live for the call.
        error_result(unsafe {
            rd::rd_kafka_incremental_unassign(self.rk.as_ptr(), list.0.as_ptr())
        })
    }

    /// Stop fetching these partitions.
    pub fn pause(&self, parts: &[(&str, i32)]) -> Result<(), String> {
        let list = PartitionList::new(&with_offsets(parts))?;
        // SAFETY: both handles are live for the call.
        code_result(unsafe { rd::rd_kafka_pause_partitions(self.rk.as_ptr(), list.0.as_ptr()) })
    }

    /// Fetch these partitions again (the pause flag survives unassign/assign).
    pub fn resume(&self, parts: &[(&str, i32)]) -> Result<(), String> {
        let list = PartitionList::new(&with_offsets(parts))?;
        // SAFETY: both handles are live for the call.
        code_result(unsafe { rd::rd_kafka_resume_partitions(self.rk.as_ptr(), list.0.as_ptr()) })
    }

    /// The next offset the consumer will return per partition (-1001 when unknown).
    pub fn positions(&self, parts: &[(&str, i32)]) -> Result<Vec<i64>, String> {
        let list = PartitionList::new(&with_offsets(parts))?;
        // SAFETY: both handles are live; librdkafka fills the offsets in place.
        code_result(unsafe { rd::rd_kafka_position(self.rk.as_ptr(), list.0.as_ptr()) })?;
        Ok(list.offsets())
    }

    /// Low and high watermarks of a partition, asked of its leader.
    pub fn watermarks(
        &self,
        topic: &str,
        partition: i32,
        timeout_ms: i32,
    ) -> Result<(i64, i64), String> {
        let t = c_string("a topic name", topic)?;
        let (mut low, mut high) = (0i64, 0i64);
        // SAFETY: the handle is live; low and high are valid out-pointers.
        code_result(unsafe {
            rd::rd_kafka_query_watermark_offsets(
                self.rk.as_ptr(),
                t.as_ptr(),
                partition,
                &mut low,
                &mut high,
                timeout_ms,
            )
        })?;
        Ok((low, high))
    }

    /// Up to `max` messages or events, waiting at most `timeout_ms` for the first: what is
    /// queued now, else the first to arrive and what is queued behind it.
    /// `rd_kafka_consume_batch_queue` alone returns only when it has `max` messages or the
    /// timeout passed, so every task would wait out the timeout for its ranges' last records
    /// (measured: 200 ms per task of 50 records already on the broker; 2 ms this way).
    pub fn consume(
        &self,
        max: usize,
        timeout_ms: i32,
        out: &mut Vec<Message>,
    ) -> Result<(), String> {
        let before = out.len();
        self.consume_batch(max, out)?;
        if out.len() > before || max == 0 {
            return Ok(());
        }
        // SAFETY: the queue is live; the message (NULL on timeout) is owned by the caller.
        let first = unsafe { rd::rd_kafka_consume_queue(self.queue.as_ptr(), timeout_ms) };
        let Some(first) = NonNull::new(first) else {
            return Ok(());
        };
        out.push(Message(first));
        self.consume_batch(max - 1, out)
    }

    /// Up to `max` messages or events already queued, without waiting.
    fn consume_batch(&self, max: usize, out: &mut Vec<Message>) -> Result<(), String> {
        if max == 0 {
            return Ok(());
        }
        let mut raw: Vec<*mut rd::rd_kafka_message_t> = vec![ptr::null_mut(); max];
        // SAFETY: the queue is live and `raw` has room for `max` pointers.
        let n = unsafe {
            rd::rd_kafka_consume_batch_queue(self.queue.as_ptr(), 0, raw.as_mut_ptr(), max)
        };
        if n < 0 {
            return Err(format!("consume failed ({n})"));
        }
        out.extend(
            raw[..n as usize]
                .iter()
                .filter_map(|m| NonNull::new(*m))
                .map(Message),
        );
        Ok(())
    }
}

impl Consumer {
    /// The latest statistics document (`statistics.interval.ms`); shared, so it stays readable
    /// while a reader holds the consumer.
    pub fn statistics(&self) -> Statistics {
        self.statistics.clone()
    }

    /// Serve what the queue of an idle consumer holds, without waiting: librdkafka delivers
    /// statistics (and its other callbacks) only when the queue is served. Messages and events
    /// found there are dropped: an idle consumer is unassigned, so they are stale.
    pub fn serve_idle(&self) -> Result<(), String> {
        const AT_ONCE: usize = 1000;
        let mut out = Vec::with_capacity(AT_ONCE);
        loop {
            self.consume_batch(AT_ONCE, &mut out)?;
            if out.len() < AT_ONCE {
                return Ok(());
            }
            out.clear();
        }
    }
}

fn with_offsets<'a>(parts: &[(&'a str, i32)]) -> Vec<(&'a str, i32, i64)> {
    parts
        .iter()
        .map(|(t, p)| (*t, *p, rd::RD_KAFKA_OFFSET_INVALID as i64))
        .collect()
}

impl Drop for Consumer {
    fn drop(&mut self) {
        // SAFETY: the handles are owned; the queue reference is released before the consumer.
        unsafe {
            rd::rd_kafka_queue_destroy(self.queue.as_ptr());
            rd::rd_kafka_consumer_close(self.rk.as_ptr());
            rd::rd_kafka_destroy(self.rk.as_ptr());
        }
    }
}
