//! Partition leaders and broker addresses from librdkafka's metadata, for the direct fetch path.

use std::collections::HashMap;
use std::ffi::CStr;
use std::ptr::{self, NonNull};
use std::slice;

use rdkafka_sys as rd;
use rdkafka_sys::rd_kafka_resp_err_t as Err;

use super::{c_string, err_text, Consumer};

/// Who leads the partitions asked about, and where those brokers listen.
#[derive(Debug, Default, Clone)]
pub struct Leaders {
    /// (topic, partition) -> leader broker id.
    pub leaders: HashMap<(String, i32), i32>,
    /// broker id -> (host, port).
    pub brokers: HashMap<i32, (String, u16)>,
}

fn text(p: *const std::ffi::c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: a non-NULL name in a metadata result is NUL-terminated and lives with it.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// A metadata result, destroyed on drop.
struct Metadata(NonNull<rd::rd_kafka_metadata_t>);

impl Drop for Metadata {
    fn drop(&mut self) {
        // SAFETY: owned result, destroyed once.
        unsafe { rd::rd_kafka_metadata_destroy(self.0.as_ptr()) }
    }
}

/// A topic handle, destroyed on drop.
struct Topic(NonNull<rd::rd_kafka_topic_t>);

impl Drop for Topic {
    fn drop(&mut self) {
        // SAFETY: owned handle, destroyed once.
        unsafe { rd::rd_kafka_topic_destroy(self.0.as_ptr()) }
    }
}

impl Consumer {
    /// The leaders of every partition of these topics (one metadata request per topic); an
    /// error names the topic or partition without a usable leader.
    pub fn leaders(&self, topics: &[&str], timeout_ms: i32) -> Result<Leaders, String> {
        let mut out = Leaders::default();
        for topic in topics {
            let name = c_string("a topic name", topic)?;
            // SAFETY: rk is live; a NULL conf takes the defaults; the handle is destroyed on drop.
            let rkt =
                unsafe { rd::rd_kafka_topic_new(self.rk.as_ptr(), name.as_ptr(), ptr::null_mut()) };
            let rkt =
                Topic(NonNull::new(rkt).ok_or_else(|| format!("no handle for topic {topic}"))?);
            let mut md: *const rd::rd_kafka_metadata_t = ptr::null();
            // SAFETY: both handles are live; md receives an owned result on success.
            let code = unsafe {
                rd::rd_kafka_metadata(self.rk.as_ptr(), 0, rkt.0.as_ptr(), &mut md, timeout_ms)
            };
            if code != Err::RD_KAFKA_RESP_ERR_NO_ERROR {
                return Err(format!("metadata of topic {topic}: {}", err_text(code)));
            }
            let md = Metadata(NonNull::new(md.cast_mut()).ok_or("an empty metadata result")?);
            // SAFETY: the result is live until `md` drops; its arrays hold their counts.
            let raw = unsafe { md.0.as_ref() };
            let brokers = view(raw.brokers, raw.broker_cnt);
            for b in brokers {
                let port = u16::try_from(b.port).map_err(|_| format!("broker port {}", b.port))?;
                out.brokers.insert(b.id, (text(b.host), port));
            }
            for t in view(raw.topics, raw.topic_cnt) {
                if t.err != Err::RD_KAFKA_RESP_ERR_NO_ERROR {
                    return Err(format!("metadata of topic {topic}: {}", err_text(t.err)));
                }
                for p in view(t.partitions, t.partition_cnt) {
                    if p.err != Err::RD_KAFKA_RESP_ERR_NO_ERROR || p.leader < 0 {
                        return Err(format!("partition {topic}/{} has no leader", p.id));
                    }
                    out.leaders.insert((topic.to_string(), p.id), p.leader);
                }
            }
        }
        Ok(out)
    }
}

fn view<'a, T>(items: *const T, count: std::ffi::c_int) -> &'a [T] {
    if items.is_null() || count <= 0 {
        return &[];
    }
    // SAFETY: librdkafka's metadata arrays hold `count` initialised elements, alive as long as
    // the result the caller borrows from.
    unsafe { slice::from_raw_parts(items, count as usize) }
}
