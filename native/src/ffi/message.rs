//! One consumed message or event: its data borrowed from librdkafka, destroyed on drop.

use std::ffi::{c_char, c_void, CStr};
use std::ptr::{self, NonNull};
use std::slice;

use rdkafka_sys as rd;
use rdkafka_sys::rd_kafka_resp_err_t as Err;

use super::err_text;
use crate::protocol::records::Headers;

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

/// One consumed message or event, destroyed on drop.
pub struct Message(pub(super) NonNull<rd::rd_kafka_message_t>);

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

    /// Identifies the message's topic handle: messages of one topic share it while they live,
    /// so a run of them needs their topic's name looked up once.
    pub fn topic_id(&self) -> usize {
        self.raw().rkt as usize
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
            let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
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
