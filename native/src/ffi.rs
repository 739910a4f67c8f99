//! The FFI edge: safe wrappers over the librdkafka consumer calls the reader needs.
//!
//! This is the only module with `unsafe` code. Every raw handle is owned by a wrapper that frees
//! it exactly once on drop; borrowed views (topic names, payloads, headers) never outlive the
//! message they point into.

use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::{self, NonNull};
use std::slice;

use rdkafka_sys as rd;
use rdkafka_sys::rd_kafka_resp_err_t as Err;

/// The librdkafka error codes the reader tells apart (the rest only need their text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Partition EOF: the consumer reached the end of the log (`enable.partition.eof`).
    PartitionEof,
    /// The next offset is not on the cluster (`auto.offset.reset=error`).
    OutOfRange,
    /// The topic or partition no longer exists.
    Gone,
    /// Anything else.
    Other,
}

fn classify(code: Err) -> Event {
    match code {
        Err::RD_KAFKA_RESP_ERR__PARTITION_EOF => Event::PartitionEof,
        Err::RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET | Err::RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE => {
            Event::OutOfRange
        }
        Err::RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION
        | Err::RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC
        | Err::RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART => Event::Gone,
        _ => Event::Other,
    }
}

fn err_text(code: Err) -> String {
    // SAFETY: rd_kafka_err2str returns a static NUL-terminated string for any code.
    unsafe { CStr::from_ptr(rd::rd_kafka_err2str(code)) }
        .to_string_lossy()
        .into_owned()
}

/// The version of the librdkafka linked into this module.
pub fn librdkafka_version() -> String {
    // SAFETY: returns a static NUL-terminated string.
    unsafe { CStr::from_ptr(rd::rd_kafka_version_str()) }
        .to_string_lossy()
        .into_owned()
}

fn c_string(what: &str, text: &str) -> Result<CString, String> {
    CString::new(text).map_err(|_| format!("{what} contains a NUL byte"))
}

/// A configuration being built; freed on drop unless handed to [`Consumer::new`].
struct Conf(NonNull<rd::rd_kafka_conf_t>);

impl Conf {
    fn new() -> Self {
        // SAFETY: rd_kafka_conf_new never returns NULL (it aborts on allocation failure).
        Conf(NonNull::new(unsafe { rd::rd_kafka_conf_new() }).expect("rd_kafka_conf_new"))
    }

    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let k = c_string("a property name", key)?;
        let v = c_string(&format!("the value of {key}"), value)?;
        let mut errstr = [0 as c_char; 512];
        // SAFETY: the handle is live; key, value and errstr are valid for the call.
        let res = unsafe {
            rd::rd_kafka_conf_set(
                self.0.as_ptr(),
                k.as_ptr(),
                v.as_ptr(),
                errstr.as_mut_ptr(),
                errstr.len(),
            )
        };
        if res == rd::rd_kafka_conf_res_t::RD_KAFKA_CONF_OK {
            Ok(())
        } else {
            Err(text_of(&errstr))
        }
    }
}

impl Drop for Conf {
    fn drop(&mut self) {
        // SAFETY: the handle is owned and not yet handed to rd_kafka_new.
        unsafe { rd::rd_kafka_conf_destroy(self.0.as_ptr()) }
    }
}

fn text_of(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|c| **c != 0)
        .map(|c| *c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Check that librdkafka accepts every property (names and values), without creating a client.
pub fn check_config(config: &[(String, String)]) -> Result<(), String> {
    let mut conf = Conf::new();
    for (k, v) in config {
        conf.set(k, v)?;
    }
    Ok(())
}

/// A topic partition list, freed on drop.
struct PartitionList(NonNull<rd::rd_kafka_topic_partition_list_t>);

impl PartitionList {
    fn new(parts: &[(&str, i32, i64)]) -> Result<Self, String> {
        // SAFETY: allocates an empty list (never NULL).
        let raw = unsafe { rd::rd_kafka_topic_partition_list_new(parts.len() as i32) };
        let list = PartitionList(NonNull::new(raw).expect("rd_kafka_topic_partition_list_new"));
        for (topic, partition, offset) in parts {
            let t = c_string("a topic name", topic)?;
            // SAFETY: the list is live; add copies the topic name and returns the new element.
            unsafe {
                let elem =
                    rd::rd_kafka_topic_partition_list_add(list.0.as_ptr(), t.as_ptr(), *partition);
                (*elem).offset = *offset;
            }
        }
        Ok(list)
    }

    fn offsets(&self) -> Vec<i64> {
        // SAFETY: the list is live and `elems` holds `cnt` initialised elements.
        unsafe {
            let list = self.0.as_ref();
            if list.cnt <= 0 || list.elems.is_null() {
                return Vec::new();
            }
            slice::from_raw_parts(list.elems, list.cnt as usize)
                .iter()
                .map(|e| e.offset)
                .collect()
        }
    }
}

impl Drop for PartitionList {
    fn drop(&mut self) {
        // SAFETY: owned list, destroyed once.
        unsafe { rd::rd_kafka_topic_partition_list_destroy(self.0.as_ptr()) }
    }
}

fn error_result(error: *mut rd::rd_kafka_error_t) -> Result<(), String> {
    if error.is_null() {
        return Ok(());
    }
    // SAFETY: a non-NULL error object is owned by the caller and destroyed once here.
    unsafe {
        let text = CStr::from_ptr(rd::rd_kafka_error_string(error))
            .to_string_lossy()
            .into_owned();
        rd::rd_kafka_error_destroy(error);
        Err(text)
    }
}

fn code_result(code: Err) -> Result<(), String> {
    if code == Err::RD_KAFKA_RESP_ERR_NO_ERROR {
        Ok(())
    } else {
        Err(err_text(code))
    }
}

/// A librdkafka consumer with its consumer queue; closed and destroyed on drop.
pub struct Consumer {
    rk: NonNull<rd::rd_kafka_t>,
    queue: NonNull<rd::rd_kafka_queue_t>,
}

// SAFETY: librdkafka handles are thread-safe; the reader uses one from one thread at a time.
unsafe impl Send for Consumer {}

impl Consumer {
    /// Create a consumer from the full configuration (no group join: partitions are assigned).
    pub fn new(config: &[(String, String)]) -> Result<Self, String> {
        let mut conf = Conf::new();
        for (k, v) in config {
            conf.set(k, v)?;
        }
        let mut errstr = [0 as c_char; 512];
        // SAFETY: rd_kafka_new takes ownership of conf only on success.
        let rk = unsafe {
            rd::rd_kafka_new(
                rd::rd_kafka_type_t::RD_KAFKA_CONSUMER,
                conf.0.as_ptr(),
                errstr.as_mut_ptr(),
                errstr.len(),
            )
        };
        let Some(rk) = NonNull::new(rk) else {
            return Err(text_of(&errstr));
        };
        std::mem::forget(conf);
        // SAFETY: rk is a live consumer handle.
        unsafe { rd::rd_kafka_poll_set_consumer(rk.as_ptr()) };
        // SAFETY: rk is live; the queue reference is released on drop.
        let queue = unsafe { rd::rd_kafka_queue_get_consumer(rk.as_ptr()) };
        let Some(queue) = NonNull::new(queue) else {
            // SAFETY: rk is live and owned.
            unsafe { rd::rd_kafka_destroy(rk.as_ptr()) };
            return Err("the consumer has no consumer queue".to_string());
        };
        Ok(Consumer { rk, queue })
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

    /// Up to `max` messages or events, waiting at most `timeout_ms` for the first.
    pub fn consume(
        &self,
        max: usize,
        timeout_ms: i32,
        out: &mut Vec<Message>,
    ) -> Result<(), String> {
        let mut raw: Vec<*mut rd::rd_kafka_message_t> = vec![ptr::null_mut(); max];
        // SAFETY: the queue is live and `raw` has room for `max` pointers.
        let n = unsafe {
            rd::rd_kafka_consume_batch_queue(self.queue.as_ptr(), timeout_ms, raw.as_mut_ptr(), max)
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

/// A record's headers in order: (name, value), the value null or bytes.
pub type Headers<'a> = Vec<(&'a str, Option<&'a [u8]>)>;

/// One consumed message or event, destroyed on drop.
pub struct Message(NonNull<rd::rd_kafka_message_t>);

// SAFETY: a message is owned by exactly one wrapper and only read.
unsafe impl Send for Message {}

impl Message {
    fn raw(&self) -> &rd::rd_kafka_message_t {
        // SAFETY: the message is live until drop.
        unsafe { self.0.as_ref() }
    }

    /// `None` for a data message, else what kind of event it is.
    pub fn event(&self) -> Option<Event> {
        let code = self.raw().err;
        (code != Err::RD_KAFKA_RESP_ERR_NO_ERROR).then(|| classify(code))
    }

    /// An event's text (librdkafka's `rd_kafka_message_errstr`).
    pub fn error_text(&self) -> String {
        let m = self.raw();
        match bytes(m.payload, m.len) {
            Some(text) if !text.is_empty() => {
                let end = text.iter().position(|b| *b == 0).unwrap_or(text.len());
                String::from_utf8_lossy(&text[..end]).into_owned()
            }
            _ => err_text(m.err),
        }
    }

    /// The topic name ("" for an event without a topic).
    pub fn topic(&self) -> &str {
        let rkt = self.raw().rkt;
        if rkt.is_null() {
            return "";
        }
        // SAFETY: the topic handle lives as long as the message; the name is NUL-terminated.
        unsafe { CStr::from_ptr(rd::rd_kafka_topic_name(rkt)) }
            .to_str()
            .unwrap_or("")
    }

    pub fn partition(&self) -> i32 {
        self.raw().partition
    }

    pub fn offset(&self) -> i64 {
        self.raw().offset
    }

    pub fn key(&self) -> Option<&[u8]> {
        let m = self.raw();
        bytes(m.key, m.key_len)
    }

    pub fn value(&self) -> Option<&[u8]> {
        let m = self.raw();
        bytes(m.payload, m.len)
    }

    /// The timestamp type (librdkafka's: 0 none, 1 create time, 2 log append time) and ms.
    pub fn timestamp(&self) -> (i32, i64) {
        let mut kind = rd::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
        // SAFETY: the message is live; kind is a valid out-pointer.
        let ms = unsafe { rd::rd_kafka_message_timestamp(self.0.as_ptr(), &mut kind) };
        (kind as i32, ms)
    }

    /// The headers in order as (name, value) pairs; `None` when the message has none.
    pub fn headers(&self) -> Option<Headers<'_>> {
        let mut hdrs: *mut rd::rd_kafka_headers_t = ptr::null_mut();
        // SAFETY: the message is live; the headers stay owned by it.
        let code = unsafe { rd::rd_kafka_message_headers(self.0.as_ptr(), &mut hdrs) };
        if code != Err::RD_KAFKA_RESP_ERR_NO_ERROR || hdrs.is_null() {
            return None;
        }
        // SAFETY: hdrs is live as long as the message.
        let count = unsafe { rd::rd_kafka_header_cnt(hdrs) };
        if count == 0 {
            return None;
        }
        let mut out = Vec::with_capacity(count);
        for idx in 0..count {
            let mut name: *const c_char = ptr::null();
            let mut value: *const c_void = ptr::null();
            let mut size = 0usize;
            // SAFETY: idx < count; the out-pointers are valid; results point into the message.
            let code =
                unsafe { rd::rd_kafka_header_get_all(hdrs, idx, &mut name, &mut value, &mut size) };
            if code != Err::RD_KAFKA_RESP_ERR_NO_ERROR || name.is_null() {
                break;
            }
            // SAFETY: header names are NUL-terminated and live as long as the message.
            let name = unsafe { CStr::from_ptr(name) }.to_str().unwrap_or("");
            out.push((name, bytes(value.cast_mut(), size)));
        }
        Some(out)
    }
}

fn bytes<'a>(data: *mut c_void, len: usize) -> Option<&'a [u8]> {
    if data.is_null() {
        None
    } else {
        // SAFETY: librdkafka guarantees `len` readable bytes at a non-NULL pointer, valid for
        // the life of the message the caller borrows from.
        Some(unsafe { slice::from_raw_parts(data as *const u8, len) })
    }
}

impl Drop for Message {
    fn drop(&mut self) {
        // SAFETY: owned message, destroyed once.
        unsafe { rd::rd_kafka_message_destroy(self.0.as_ptr()) }
    }
}
