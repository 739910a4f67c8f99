//! A librdkafka producer: messages handed over with `rd_kafka_produceva` (copied by librdkafka),
//! delivery reports counted per topic in a callback (no Python per record), flush, and the
//! transactional calls of exactlyOnce.
//!
//! Each record's opaque points to its topic's counters, which a success's report bumps without a
//! lock; only the first failure takes one. Every record is reported
//! (`delivery.report.only.error=false`, whatever the configuration says): a successful record is
//! then destroyed by the thread that serves the reports (poll, flush), the one that allocated it.
//! Counting successes as sent less failed, with reports of failures only, was measured and left
//! out: librdkafka's broker threads then destroy the successful records, and their frees, its
//! message-count lock and the topic's reference count contend with the producing thread, costing
//! more than the reports save (docs/benchmarks.md, "The write floor").

use std::ffi::{c_char, c_void, CString};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use rdkafka_sys as rd;
use rdkafka_sys::rd_kafka_resp_err_t as Err;
use rdkafka_sys::rd_kafka_vtype_t as V;

use super::{c_string, err_text, error_result, new_client, PartitionList};

/// What the delivery reports said so far: per topic index, records and key+value bytes
/// acknowledged, and the first failure (topic index, librdkafka's text).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Delivered {
    pub rows: Vec<u64>,
    pub bytes: Vec<u64>,
    pub error: Option<(usize, String)>,
}

/// One record to produce: its topic (an index of [`Producer::topic`]), partition (`None`: the
/// partitioner's choice), key, value and headers (a `None` value is a null header value).
pub struct Outgoing<'a> {
    pub topic: usize,
    pub partition: Option<i32>,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    pub headers: &'a [(&'a str, Option<&'a [u8]>)],
}

/// The outcome of handing a record to librdkafka.
#[derive(Debug, PartialEq, Eq)]
pub enum Sent {
    Queued,
    /// The local queue is full: serve delivery reports, then send again.
    QueueFull,
    Failed(String),
}

/// The records of one topic acknowledged without an error and their key+value bytes. Each
/// record's opaque points to its topic's.
struct Acked {
    index: usize,
    rows: AtomicU64,
    bytes: AtomicU64,
}

struct Topic {
    name: String,
    handle: NonNull<rd::rd_kafka_topic_t>,
    // Boxed: every record sent to the topic holds its address; dropped after the producer's `rk`.
    acked: Box<Acked>,
}

/// The first failure reported: (topic index, librdkafka's text).
type FirstFailure = Mutex<Option<(usize, String)>>;

/// A librdkafka producer; destroyed (without waiting) on drop.
pub struct Producer {
    rk: NonNull<rd::rd_kafka_t>,
    topics: Vec<Topic>,
    // Boxed: librdkafka holds its address as the configuration's opaque; dropped after `rk`.
    state: Box<FirstFailure>,
}

/// Every record is reported (see the module's documentation); set after the configuration's own.
const REPORT_EVERY_RECORD: (&str, &str) = ("delivery.report.only.error", "false");

// SAFETY: librdkafka handles are thread-safe; the producer is used from one thread at a time, the
// delivery counters are atomic and the first failure is behind a lock.
unsafe impl Send for Producer {}

extern "C" fn on_delivery(
    _rk: *mut rd::rd_kafka_t,
    message: *const rd::rd_kafka_message_t,
    opaque: *mut c_void,
) {
    if message.is_null() || opaque.is_null() {
        return;
    }
    // SAFETY: opaque is the producer's boxed state, alive as long as its rk; the message is
    // valid for the callback; its opaque is its topic's boxed counters (every record this
    // producer sends carries them), alive as long as the rk.
    let (state, message) = unsafe { (&*(opaque as *const FirstFailure), &*message) };
    let Some(acked) = (unsafe { (message._private as *const Acked).as_ref() }) else {
        return;
    };
    if message.err == Err::RD_KAFKA_RESP_ERR_NO_ERROR {
        acked.rows.fetch_add(1, Ordering::Relaxed);
        let size = (message.len + message.key_len) as u64;
        acked.bytes.fetch_add(size, Ordering::Relaxed);
        return;
    }
    let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
    if state.is_none() {
        let name = format!("{:?}", message.err);
        let name = name.trim_start_matches("RD_KAFKA_RESP_ERR_").to_string();
        *state = Some((acked.index, format!("{name}: {}", err_text(message.err))));
    }
}

impl Producer {
    /// Create a producer from the full configuration.
    pub fn new(config: &[(String, String)]) -> Result<Self, String> {
        let state: Box<FirstFailure> = Box::default();
        let opaque = &*state as *const FirstFailure as *mut c_void;
        let (key, value) = REPORT_EVERY_RECORD;
        let config = [config, &[(key.to_string(), value.to_string())]].concat();
        let rk = new_client(rd::rd_kafka_type_t::RD_KAFKA_PRODUCER, &config, |conf| {
            // SAFETY: conf is live; the opaque points into the box, which outlives the producer.
            unsafe {
                rd::rd_kafka_conf_set_dr_msg_cb(conf.0.as_ptr(), Some(on_delivery));
                rd::rd_kafka_conf_set_opaque(conf.0.as_ptr(), opaque);
            }
        })?;
        Ok(Producer {
            rk,
            topics: Vec::new(),
            state,
        })
    }

    /// The index of a topic's handle (created on first use).
    pub fn topic(&mut self, name: &str) -> Result<usize, String> {
        if let Some(i) = self.topics.iter().position(|t| t.name == name) {
            return Ok(i);
        }
        let c = c_string("a topic name", name)?;
        // SAFETY: rk is live; the handle is released on drop.
        let raw = unsafe { rd::rd_kafka_topic_new(self.rk.as_ptr(), c.as_ptr(), ptr::null_mut()) };
        let handle = NonNull::new(raw).ok_or_else(|| format!("cannot use topic {name:?}"))?;
        self.topics.push(Topic {
            name: name.to_string(),
            handle,
            acked: Box::new(Acked {
                index: self.topics.len(),
                rows: AtomicU64::new(0),
                bytes: AtomicU64::new(0),
            }),
        });
        Ok(self.topics.len() - 1)
    }

    /// The name of the topic at `index`.
    pub fn topic_name(&self, index: usize) -> &str {
        self.topics.get(index).map_or("", |t| t.name.as_str())
    }

    /// Hand one record to librdkafka (which copies it).
    pub fn send(&self, record: &Outgoing<'_>) -> Sent {
        let Some(topic) = self.topics.get(record.topic) else {
            return Sent::Failed(format!("no topic handle {}", record.topic));
        };
        let headers = if record.headers.is_empty() {
            ptr::null_mut()
        } else {
            // SAFETY: allocates a header list; header_add copies names and values.
            unsafe {
                let list = rd::rd_kafka_headers_new(record.headers.len());
                for (name, value) in record.headers {
                    let (val, size) = match value {
                        Some(v) => (v.as_ptr() as *const c_void, v.len() as isize),
                        None => (ptr::null(), 0),
                    };
                    rd::rd_kafka_header_add(
                        list,
                        name.as_ptr() as *const c_char,
                        name.len() as isize,
                        val,
                        size,
                    );
                }
                list
            }
        };
        let mut vus: [rd::rd_kafka_vu_t; 7] = [vu(V::RD_KAFKA_VTYPE_END); 7];
        let mut n = 0;
        vus[n] = vu(V::RD_KAFKA_VTYPE_RKT);
        vus[n].u.rkt = topic.handle.as_ptr();
        n += 1;
        vus[n] = vu(V::RD_KAFKA_VTYPE_MSGFLAGS);
        vus[n].u.i = rd::RD_KAFKA_MSG_F_COPY;
        n += 1;
        vus[n] = vu(V::RD_KAFKA_VTYPE_OPAQUE);
        vus[n].u.ptr = &*topic.acked as *const Acked as *mut c_void;
        n += 1;
        if let Some(partition) = record.partition {
            vus[n] = vu(V::RD_KAFKA_VTYPE_PARTITION);
            vus[n].u.i32_ = partition;
            n += 1;
        }
        if let Some(value) = record.value {
            vus[n] = vu(V::RD_KAFKA_VTYPE_VALUE);
            vus[n].u.mem = mem(value);
            n += 1;
        }
        if let Some(key) = record.key {
            vus[n] = vu(V::RD_KAFKA_VTYPE_KEY);
            vus[n].u.mem = mem(key);
            n += 1;
        }
        if !headers.is_null() {
            vus[n] = vu(V::RD_KAFKA_VTYPE_HEADERS);
            vus[n].u.headers = headers;
            n += 1;
        }
        // SAFETY: rk is live; the first `n` entries are initialised and the buffers they point
        // to are valid for the call (librdkafka copies them: MSG_F_COPY).
        let error = unsafe { rd::rd_kafka_produceva(self.rk.as_ptr(), vus.as_ptr(), n) };
        if error.is_null() {
            return Sent::Queued;
        }
        // SAFETY: on failure the headers stay ours; the error object is ours to destroy.
        let code = unsafe {
            if !headers.is_null() {
                rd::rd_kafka_headers_destroy(headers);
            }
            rd::rd_kafka_error_code(error)
        };
        match error_result(error) {
            _ if code == Err::RD_KAFKA_RESP_ERR__QUEUE_FULL => Sent::QueueFull,
            Err(text) => Sent::Failed(text),
            Ok(()) => Sent::Queued,
        }
    }

    /// Serve delivery reports, waiting at most `timeout_ms` for one.
    pub fn poll(&self, timeout_ms: i32) {
        // SAFETY: rk is live.
        unsafe { rd::rd_kafka_poll(self.rk.as_ptr(), timeout_ms) };
    }

    /// Wait up to `timeout_ms` for every record to be acknowledged; the records still waiting.
    pub fn flush(&self, timeout_ms: i32) -> usize {
        // SAFETY: rk is live.
        unsafe {
            rd::rd_kafka_flush(self.rk.as_ptr(), timeout_ms);
            rd::rd_kafka_outq_len(self.rk.as_ptr()).max(0) as usize
        }
    }

    /// What the delivery reports said so far.
    pub fn delivered(&self) -> Delivered {
        let error = self.state.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let acked = self.topics.iter().map(|t| &*t.acked);
        let (rows, bytes) = acked
            .map(|a| {
                (
                    a.rows.load(Ordering::Relaxed),
                    a.bytes.load(Ordering::Relaxed),
                )
            })
            .unzip();
        Delivered { rows, bytes, error }
    }

    /// Whether a delivery report failed.
    pub fn failed(&self) -> bool {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// Find the transaction coordinator and fence older producers with the same id.
    pub fn init_transactions(&self, timeout_ms: i32) -> Result<(), String> {
        // SAFETY: rk is live.
        error_result(unsafe { rd::rd_kafka_init_transactions(self.rk.as_ptr(), timeout_ms) })
    }

    pub fn begin_transaction(&self) -> Result<(), String> {
        // SAFETY: rk is live.
        error_result(unsafe { rd::rd_kafka_begin_transaction(self.rk.as_ptr()) })
    }

    /// Commit `offset` (with `metadata`) of `topic` partition `partition` for `group` inside the
    /// open transaction.
    pub fn send_offset(
        &self,
        group: &str,
        (topic, partition, offset): (&str, i32, i64),
        metadata: &str,
        timeout_ms: i32,
    ) -> Result<(), String> {
        let list = PartitionList::new(&[(topic, partition, offset)])?;
        let g = CString::new(group).map_err(|_| "the group contains a NUL byte".to_string())?;
        // The metadata is sent with its NUL terminator, as confluent-kafka sends it (its readers
        // take the metadata as a C string): both writers' markers are the same bytes.
        let text = c_string("the offset metadata", metadata)?;
        let bytes = text.as_bytes_with_nul();
        // SAFETY: list and rk are live; the metadata buffer comes from librdkafka's allocator,
        // which the list frees on destroy; the group metadata is destroyed after the call.
        unsafe {
            let elem = (*list.0.as_ptr()).elems;
            let buf = rd::rd_kafka_mem_malloc(self.rk.as_ptr(), bytes.len());
            ptr::copy_nonoverlapping(bytes.as_ptr(), buf as *mut u8, bytes.len());
            (*elem).metadata = buf;
            (*elem).metadata_size = bytes.len();
            let cgmd = rd::rd_kafka_consumer_group_metadata_new(g.as_ptr());
            let result = error_result(rd::rd_kafka_send_offsets_to_transaction(
                self.rk.as_ptr(),
                list.0.as_ptr(),
                cgmd,
                timeout_ms,
            ));
            rd::rd_kafka_consumer_group_metadata_destroy(cgmd);
            result
        }
    }

    pub fn commit_transaction(&self, timeout_ms: i32) -> Result<(), String> {
        // SAFETY: rk is live.
        error_result(unsafe { rd::rd_kafka_commit_transaction(self.rk.as_ptr(), timeout_ms) })
    }

    pub fn abort_transaction(&self, timeout_ms: i32) -> Result<(), String> {
        // SAFETY: rk is live.
        error_result(unsafe { rd::rd_kafka_abort_transaction(self.rk.as_ptr(), timeout_ms) })
    }
}

fn vu(vtype: V) -> rd::rd_kafka_vu_t {
    rd::rd_kafka_vu_t {
        vtype,
        u: rd::rd_kafka_vu_s__bindgen_ty_1 { _pad: [0; 64] },
    }
}

fn mem(bytes: &[u8]) -> rd::rd_kafka_vu_s__bindgen_ty_1__bindgen_ty_1 {
    rd::rd_kafka_vu_s__bindgen_ty_1__bindgen_ty_1 {
        ptr: bytes.as_ptr() as *mut c_void,
        size: bytes.len(),
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        // SAFETY: the handles are owned; topic handles are released before the producer, and
        // the producer (whose callbacks use `state`) before `state` is dropped.
        unsafe {
            for topic in &self.topics {
                rd::rd_kafka_topic_destroy(topic.handle.as_ptr());
            }
            rd::rd_kafka_destroy(self.rk.as_ptr());
        }
    }
}
