//! The Arrow arrays a bound column reads values from: bytes-like values (strings and binaries)
//! of any Arrow layout, and a list's or map's offsets of either width.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_buffer::OffsetBuffer;
use arrow_schema::DataType;

/// Bytes-like values of any Arrow layout.
pub enum Bytes<'a> {
    Binary(&'a arrow_array::BinaryArray),
    LargeBinary(&'a arrow_array::LargeBinaryArray),
    Text(&'a arrow_array::StringArray),
    LargeText(&'a arrow_array::LargeStringArray),
}

impl<'a> Bytes<'a> {
    pub fn text(array: &'a ArrayRef) -> Option<Self> {
        match array.data_type() {
            DataType::Utf8 => Some(Bytes::Text(array.as_string::<i32>())),
            DataType::LargeUtf8 => Some(Bytes::LargeText(array.as_string::<i64>())),
            _ => None,
        }
    }

    pub fn binary(array: &'a ArrayRef) -> Option<Self> {
        match array.data_type() {
            DataType::Binary => Some(Bytes::Binary(array.as_binary::<i32>())),
            DataType::LargeBinary => Some(Bytes::LargeBinary(array.as_binary::<i64>())),
            _ => None,
        }
    }

    pub fn value(&self, row: usize) -> &'a [u8] {
        match self {
            Bytes::Binary(a) => a.value(row),
            Bytes::LargeBinary(a) => a.value(row),
            Bytes::Text(a) => a.value(row).as_bytes(),
            Bytes::LargeText(a) => a.value(row).as_bytes(),
        }
    }
}

/// A list's (or map's) offsets of either width.
pub enum Offsets<'a> {
    Small(&'a OffsetBuffer<i32>),
    Large(&'a OffsetBuffer<i64>),
}

impl Offsets<'_> {
    pub fn range(&self, row: usize) -> (usize, usize) {
        match self {
            Offsets::Small(o) => (o[row] as usize, o[row + 1] as usize),
            Offsets::Large(o) => (o[row] as usize, o[row + 1] as usize),
        }
    }
}
