//! A batch's records framed ([`super::framing`]): each a tombstone, a framing failure, or the
//! schema it names and its body; a record's schema header is looked for in the batch's `headers`
//! column: its last header of that name, and none when that one's value is null (the payload's
//! prefix names the schema then), as Schema Registry's Java `DualSchemaIdDeserializer` reads
//! `Headers.lastHeader`.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BinaryArray, ListArray, StringArray};

use super::framing::{frame, SchemaRef, KEY_HEADER, VALUE_HEADER};
use super::Failure;

/// What a record is, before its body is decoded.
pub enum Row<'a> {
    Null,
    Failed(Failure),
    Body(SchemaRef, &'a [u8]),
}

/// A batch's payloads and schema headers.
pub struct Batch<'a> {
    payloads: &'a BinaryArray,
    headers: Option<SchemaHeaders<'a>>,
    key: bool,
}

impl<'a> Batch<'a> {
    pub fn of(
        values: &'a ArrayRef,
        headers: Option<&'a ArrayRef>,
        key: bool,
    ) -> Result<Self, String> {
        let payloads = values
            .as_binary_opt::<i32>()
            .ok_or_else(|| format!("values must be a binary array, not {}", values.data_type()))?;
        let headers = headers.map(SchemaHeaders::of).transpose()?;
        Ok(Batch {
            payloads,
            headers,
            key,
        })
    }

    /// How many records the batch holds.
    pub fn records(&self) -> usize {
        self.payloads.len()
    }

    /// Record `i` framed: a tombstone, a framing failure, or a schema and body.
    pub fn row(&self, i: usize) -> Row<'a> {
        if self.payloads.is_null(i) {
            return Row::Null;
        }
        let name = if self.key { KEY_HEADER } else { VALUE_HEADER };
        let header = self.headers.as_ref().and_then(|h| h.find(i, name));
        match frame(self.payloads.value(i), header, self.key) {
            Ok((schema, body)) => Row::Body(schema, body),
            Err(reason) => Row::Failed(Failure {
                row: i,
                schema: None,
                reason,
            }),
        }
    }
}

/// The source's `headers` column: list<struct<key: string, value: binary>>.
struct SchemaHeaders<'a> {
    list: &'a ListArray,
    keys: &'a StringArray,
    values: &'a BinaryArray,
}

impl<'a> SchemaHeaders<'a> {
    fn of(headers: &'a ArrayRef) -> Result<Self, String> {
        let bad = || {
            format!(
                "headers must be list<struct<key: string, value: binary>>, not {}",
                headers.data_type()
            )
        };
        let list = headers.as_list_opt::<i32>().ok_or_else(bad)?;
        let entries = list.values().as_struct_opt().ok_or_else(bad)?;
        let keys = entries
            .column_by_name("key")
            .and_then(|k| k.as_string_opt::<i32>())
            .ok_or_else(bad)?;
        let values = entries
            .column_by_name("value")
            .and_then(|v| v.as_binary_opt::<i32>())
            .ok_or_else(bad)?;
        Ok(SchemaHeaders { list, keys, values })
    }

    /// The value of record `row`'s last header called `name`; None when there is none or its
    /// value is null.
    fn find(&self, row: usize, name: &str) -> Option<&'a [u8]> {
        if self.list.is_null(row) {
            return None;
        }
        let offsets = self.list.value_offsets();
        (offsets[row] as usize..offsets[row + 1] as usize)
            .rfind(|&j| self.keys.is_valid(j) && self.keys.value(j) == name)
            .filter(|&j| self.values.is_valid(j))
            .map(|j| self.values.value(j))
    }
}
