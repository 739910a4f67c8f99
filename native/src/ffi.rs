//! The FFI edge: safe wrappers over the librdkafka consumer calls the reader needs.
//!
//! This module and its children ([`consumer`]: the consumer and its calls; [`message`]: what
//! it returns; [`statistics`]: librdkafka's statistics documents) hold the crate's only `unsafe`
//! code. Every raw handle is owned by a wrapper that
//! frees it exactly once on drop; borrowed views (topic names, payloads, headers) never outlive
//! the message they point into.

mod consumer;
mod message;
mod producer;
mod statistics;

use std::ffi::{c_char, CStr, CString};
use std::ptr::NonNull;
use std::slice;

use rdkafka_sys as rd;
use rdkafka_sys::rd_kafka_resp_err_t as Err;

pub use consumer::Consumer;
pub use message::{Event, Message};
pub use producer::{Outgoing, Producer, Sent};
pub use statistics::Statistics;

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

/// A client of `kind` from the full configuration; `prepare` may set callbacks on it first.
fn new_client(
    kind: rd::rd_kafka_type_t,
    config: &[(String, String)],
    prepare: impl FnOnce(&mut Conf),
) -> Result<NonNull<rd::rd_kafka_t>, String> {
    let mut conf = Conf::new();
    for (k, v) in config {
        conf.set(k, v)?;
    }
    prepare(&mut conf);
    let mut errstr = [0 as c_char; 512];
    // SAFETY: rd_kafka_new takes ownership of conf only on success.
    let rk = unsafe { rd::rd_kafka_new(kind, conf.0.as_ptr(), errstr.as_mut_ptr(), errstr.len()) };
    let rk = NonNull::new(rk).ok_or_else(|| text_of(&errstr))?;
    std::mem::forget(conf);
    Ok(rk)
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
