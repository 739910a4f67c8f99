//! Arrow input of the sink: the columns of Spark's kafka sink read row by row without a copy.
//!
//! `value` (required), `key`, `topic`, `partition`, `headers` (list of struct<key string,
//! value binary>); `key` and `value` string or binary (also their large variants). Other
//! columns are ignored, as Spark's sink does.

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{
    Array, BinaryArray, GenericListArray, Int32Array, LargeBinaryArray, LargeStringArray,
    OffsetSizeTrait, RecordBatch, StringArray, StructArray,
};
use arrow_schema::DataType;

/// A string or binary column, read as bytes.
#[derive(Clone, Copy)]
pub enum Bytes<'a> {
    Binary(&'a BinaryArray),
    LargeBinary(&'a LargeBinaryArray),
    Utf8(&'a StringArray),
    LargeUtf8(&'a LargeStringArray),
}

impl<'a> Bytes<'a> {
    fn of(name: &str, array: &'a dyn Array) -> Result<Self, String> {
        Ok(match array.data_type() {
            DataType::Binary => Bytes::Binary(array.as_binary::<i32>()),
            DataType::LargeBinary => Bytes::LargeBinary(array.as_binary::<i64>()),
            DataType::Utf8 => Bytes::Utf8(array.as_string::<i32>()),
            DataType::LargeUtf8 => Bytes::LargeUtf8(array.as_string::<i64>()),
            other => {
                return Err(format!(
                    "column {name:?} must be string or binary, got {other}"
                ))
            }
        })
    }

    /// Row `i`, `None` when null.
    pub fn get(&self, i: usize) -> Option<&'a [u8]> {
        match self {
            Bytes::Binary(a) => a.is_valid(i).then(|| a.value(i)),
            Bytes::LargeBinary(a) => a.is_valid(i).then(|| a.value(i)),
            Bytes::Utf8(a) => a.is_valid(i).then(|| a.value(i).as_bytes()),
            Bytes::LargeUtf8(a) => a.is_valid(i).then(|| a.value(i).as_bytes()),
        }
    }

    /// Row `i` as text (`None` when null or not UTF-8).
    pub fn text(&self, i: usize) -> Option<&'a str> {
        self.get(i).and_then(|b| std::str::from_utf8(b).ok())
    }
}

/// The `headers` column: offsets into the header entries, and their keys and values.
enum HeaderList<'a> {
    Small(&'a GenericListArray<i32>),
    Large(&'a GenericListArray<i64>),
}

struct HeaderColumn<'a> {
    list: HeaderList<'a>,
    keys: Bytes<'a>,
    values: Bytes<'a>,
    entries: &'a StructArray,
}

fn entries_of<O: OffsetSizeTrait>(list: &GenericListArray<O>) -> Result<&StructArray, String> {
    list.values()
        .as_struct_opt()
        .ok_or_else(|| "column \"headers\" must hold structs <key, value>".to_string())
}

/// The sink's columns of one record batch.
pub struct Rows<'a> {
    pub len: usize,
    value: Bytes<'a>,
    key: Option<Bytes<'a>>,
    topic: Option<Bytes<'a>>,
    partition: Option<&'a Int32Array>,
    headers: Option<HeaderColumn<'a>>,
}

impl<'a> Rows<'a> {
    /// Find the columns by name; an error naming a column of a type the sink cannot write.
    pub fn of(batch: &'a RecordBatch) -> Result<Self, String> {
        let column = |name: &str| batch.column_by_name(name).map(|c| c.as_ref());
        let value = column("value").ok_or_else(|| {
            "The rows have no 'value' column: it is required (binary or string).".to_string()
        })?;
        let partition = match column("partition") {
            None => None,
            Some(a) => Some(a.as_primitive_opt::<Int32Type>().ok_or_else(|| {
                format!("column \"partition\" must be int, got {}", a.data_type())
            })?),
        };
        let headers = match column("headers") {
            None => None,
            Some(a) => Some(Self::headers(a)?),
        };
        Ok(Rows {
            len: batch.num_rows(),
            value: Bytes::of("value", value)?,
            key: column("key").map(|a| Bytes::of("key", a)).transpose()?,
            topic: column("topic").map(|a| Bytes::of("topic", a)).transpose()?,
            partition,
            headers,
        })
    }

    fn headers(array: &'a dyn Array) -> Result<HeaderColumn<'a>, String> {
        let (list, entries) = match array.data_type() {
            DataType::List(_) => {
                let list = array.as_list::<i32>();
                (HeaderList::Small(list), entries_of(list)?)
            }
            DataType::LargeList(_) => {
                let list = array.as_list::<i64>();
                (HeaderList::Large(list), entries_of(list)?)
            }
            other => return Err(format!("column \"headers\" must be an array, got {other}")),
        };
        let field = |name: &str| {
            entries
                .column_by_name(name)
                .ok_or_else(|| format!("column \"headers\" has no field {name:?}"))
        };
        Ok(HeaderColumn {
            list,
            keys: Bytes::of("headers.key", field("key")?.as_ref())?,
            values: Bytes::of("headers.value", field("value")?.as_ref())?,
            entries,
        })
    }

    pub fn value(&self, i: usize) -> Option<&'a [u8]> {
        self.value.get(i)
    }

    pub fn key(&self, i: usize) -> Option<&'a [u8]> {
        self.key.and_then(|k| k.get(i))
    }

    /// The `topic` column, when there is one.
    pub fn topics(&self) -> Option<Bytes<'a>> {
        self.topic
    }

    pub fn partition(&self, i: usize) -> Option<i32> {
        self.partition
            .and_then(|p| p.is_valid(i).then(|| p.value(i)))
    }

    /// Append row `i`'s headers (key, value) to `out`; an error for a null header key.
    pub fn headers_of(
        &self,
        i: usize,
        out: &mut Vec<(&'a str, Option<&'a [u8]>)>,
    ) -> Result<(), String> {
        let Some(h) = &self.headers else {
            return Ok(());
        };
        let range = match h.list {
            HeaderList::Small(l) if l.is_valid(i) => {
                let o = l.value_offsets();
                o[i] as usize..o[i + 1] as usize
            }
            HeaderList::Large(l) if l.is_valid(i) => {
                let o = l.value_offsets();
                o[i] as usize..o[i + 1] as usize
            }
            _ => return Ok(()),
        };
        for j in range {
            if !h.entries.is_valid(j) {
                continue;
            }
            let key = h.keys.text(j).ok_or("a header's key is null")?;
            out.push((key, h.values.get(j)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use arrow_array::builder::{BinaryBuilder, ListBuilder, StringBuilder, StructBuilder};
    use arrow_array::{ArrayRef, Int64Array};
    use arrow_schema::{Field, Fields};

    fn headers() -> ArrayRef {
        let fields = Fields::from(vec![
            Field::new("key", DataType::Utf8, true),
            Field::new("value", DataType::Binary, true),
        ]);
        let entries = StructBuilder::new(
            fields,
            vec![
                Box::new(StringBuilder::new()),
                Box::new(BinaryBuilder::new()),
            ],
        );
        let mut list = ListBuilder::new(entries);
        // row 0: [("a", b"1"), ("b", null)]; row 1: null; row 2: []
        for (k, v) in [("a", Some(&b"1"[..])), ("b", None)] {
            let s = list.values();
            s.field_builder::<StringBuilder>(0).unwrap().append_value(k);
            s.field_builder::<BinaryBuilder>(1)
                .unwrap()
                .append_option(v);
            s.append(true);
        }
        list.append(true);
        list.append(false);
        list.append(true);
        Arc::new(list.finish())
    }

    fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
        RecordBatch::try_from_iter(columns).unwrap()
    }

    fn col<A: Array + 'static>(array: A) -> ArrayRef {
        Arc::new(array)
    }

    #[test]
    fn every_column_read_with_nulls() {
        let b = batch(vec![
            (
                "value",
                col(BinaryArray::from_opt_vec(vec![
                    Some(&b"v0"[..]),
                    None,
                    Some(&b""[..]),
                ])),
            ),
            (
                "key",
                col(LargeStringArray::from(vec![None, Some("k1"), Some("k2")])),
            ),
            (
                "topic",
                col(StringArray::from(vec![Some("t"), None, Some("u")])),
            ),
            (
                "partition",
                col(Int32Array::from(vec![Some(2), None, Some(0)])),
            ),
            ("headers", headers()),
            ("other", col(Int64Array::from(vec![1, 2, 3]))),
        ]);
        let rows = Rows::of(&b).unwrap();
        assert_eq!(rows.len, 3);
        assert_eq!(
            (0..3).map(|i| rows.value(i)).collect::<Vec<_>>(),
            vec![Some(&b"v0"[..]), None, Some(&b""[..])]
        );
        assert_eq!(
            (0..3).map(|i| rows.key(i)).collect::<Vec<_>>(),
            vec![None, Some(&b"k1"[..]), Some(&b"k2"[..])]
        );
        let topics = rows.topics().unwrap();
        assert_eq!(
            (0..3).map(|i| topics.text(i)).collect::<Vec<_>>(),
            vec![Some("t"), None, Some("u")]
        );
        assert_eq!(
            (0..3).map(|i| rows.partition(i)).collect::<Vec<_>>(),
            vec![Some(2), None, Some(0)]
        );
        let mut out = Vec::new();
        rows.headers_of(0, &mut out).unwrap();
        assert_eq!(out, vec![("a", Some(&b"1"[..])), ("b", None)]);
        out.clear();
        rows.headers_of(1, &mut out).unwrap();
        rows.headers_of(2, &mut out).unwrap();
        assert!(out.is_empty());
    }

    /// The error of `Rows::of` for these columns.
    fn refused(columns: Vec<(&str, ArrayRef)>) -> String {
        let b = batch(columns);
        Rows::of(&b).err().unwrap()
    }

    #[test]
    fn value_only_and_bad_columns_named() {
        let b = batch(vec![("value", col(StringArray::from(vec!["x"])))]);
        let rows = Rows::of(&b).unwrap();
        assert_eq!((rows.value(0), rows.key(0)), (Some(&b"x"[..]), None));
        assert!(rows.topics().is_none() && rows.partition(0).is_none());
        let e = refused(vec![("key", col(StringArray::from(vec!["x"])))]);
        assert!(e.contains("no 'value' column"));
        let e = refused(vec![("value", col(Int64Array::from(vec![1])))]);
        assert!(e.contains("\"value\" must be string or binary"));
        let e = refused(vec![
            ("value", col(StringArray::from(vec!["x"]))),
            ("partition", col(Int64Array::from(vec![1]))),
        ]);
        assert!(e.contains("\"partition\" must be int"));
    }
}
