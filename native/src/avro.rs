//! Avro keys or values decoded straight into an Arrow column of the reader schema's Spark type,
//! giving what the Python package's `avro.decode.Decoder` gives for the schemas it accepts.
//!
//! Each record names its writer schema ([`framing`]); the writer schemas come from the caller (the
//! registry's I/O stays in Python: [`AvroDecoder::unknown`] says which are missing, the caller
//! adds them or says why it could not). arrow-avro decodes the bodies and resolves each writer
//! schema to the reader schema ([`writer`]); its Arrow types are then made Spark's ([`conform`]).
//! A reader schema whose type cannot be made Spark's is refused when the decoder is made.
//!
//! - [`framing`]: Confluent's wire formats: the schema a record names and where its body starts;
//! - [`writer`]: one writer schema's runs of bodies decoded, record by record after a failure;
//! - [`conform`]: arrow-avro's Arrow types into Spark's;
//! - [`union`]: unions of several types into Spark's struct of members (or a long, a double).

pub mod conform;
pub mod framing;
pub mod union;
pub mod writer;

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::{
    make_array, new_null_array, Array, ArrayRef, BinaryArray, Int32Array, ListArray,
};
use arrow_avro::schema::AvroSchema;
use arrow_data::transform::MutableArrayData;
use arrow_schema::DataType;

pub use framing::SchemaRef;
use framing::{frame, KEY_HEADER, VALUE_HEADER};
use writer::{wrap, Writer};

/// A record that could not be decoded: its row, the schema it names (when its framing did), why.
#[derive(Debug, PartialEq, Eq)]
pub struct Failure {
    pub row: usize,
    pub schema: Option<SchemaRef>,
    pub reason: String,
}

/// A batch decoded: the values (null for a tombstone or a failure), each record's Confluent
/// schema id (null for a GUID, a tombstone or a failure), and the failures in row order.
pub struct Decoded {
    pub values: ArrayRef,
    pub schema_ids: Int32Array,
    pub failures: Vec<Failure>,
}

/// What a record is, before its body is decoded.
enum Row<'a> {
    Null,
    Failed(Failure),
    Body(SchemaRef, &'a [u8]),
}

/// Decodes one cluster's keys or values into the reader schema's Spark type.
pub struct AvroDecoder {
    reader: AvroSchema,
    reader_name: String,
    key: bool,
    target: DataType,
    writers: HashMap<SchemaRef, Result<Writer, String>>,
    refused: HashMap<SchemaRef, String>,
}

impl AvroDecoder {
    /// A decoder of `reader_schema` (Avro JSON) into `target` (the Python decoder's
    /// `arrow_type`), or why it cannot give that type.
    pub fn new(reader_schema: &str, key: bool, target: DataType) -> Result<Self, String> {
        let (reader, reader_name) = wrap(reader_schema)?;
        let own = writer::decoder(&reader, &reader)
            .map_err(|e| format!("arrow-avro cannot read the reader schema {reader_name}: {e}"))?;
        let schema = own.schema();
        let field = schema.field(0);
        conform::check(field.data_type(), &target)
            .map_err(|e| format!("the reader schema {reader_name}: {e}"))?;
        Ok(AvroDecoder {
            reader,
            reader_name,
            key,
            target,
            writers: HashMap::new(),
            refused: HashMap::new(),
        })
    }

    /// The writer schema (Avro JSON) `schema` names; records naming a writer schema the reader
    /// schema cannot be resolved from fail, naming both. Err (nothing added) for a writer schema
    /// arrow-avro cannot be trusted with ([`writer::unsupported`]): the caller decodes otherwise.
    pub fn add_writer(&mut self, schema: SchemaRef, writer_schema: &str) -> Result<(), String> {
        let (wrapped, name) = wrap(writer_schema).map_err(|e| format!("{schema}: {e}"))?;
        let writer = Writer::new(&self.reader, wrapped).map_err(|e| {
            format!(
                "the writer schema {name} ({schema}) cannot be read as the reader schema {}: {e}",
                self.reader_name
            )
        });
        self.refused.remove(&schema);
        self.writers.insert(schema, writer);
        Ok(())
    }

    /// Records naming `schema` fail with `reason` in the next [`Self::decode`] only.
    pub fn refuse(&mut self, schema: SchemaRef, reason: String) {
        self.refused.insert(schema, reason);
    }

    /// Decode a batch's `values` (binary) with its `headers` column (or None); records naming a
    /// schema no writer schema was added (or refused) for fail.
    pub fn decode(
        &mut self,
        values: &ArrayRef,
        headers: Option<&ArrayRef>,
    ) -> Result<Decoded, String> {
        self.run(values, headers, false)
            .map(|decoded| decoded.expect("nothing is asked for"))
    }

    /// [`Self::decode`], unless records of the batch name schemas the decoder holds neither a
    /// writer schema nor a refusal for: then those (`Err`), each once, in the order first named,
    /// and nothing is decoded (records whose framing is bad name none). One framing pass either
    /// way: the caller adds or refuses them and decodes the batch again.
    pub fn decode_or_missing(
        &mut self,
        values: &ArrayRef,
        headers: Option<&ArrayRef>,
    ) -> Result<Result<Decoded, Vec<SchemaRef>>, String> {
        self.run(values, headers, true)
    }

    fn run(
        &mut self,
        values: &ArrayRef,
        headers: Option<&ArrayRef>,
        ask: bool,
    ) -> Result<Result<Decoded, Vec<SchemaRef>>, String> {
        let batch = Batch::of(values, headers, self.key)?;
        let mut outcomes: Vec<Outcome> = Vec::with_capacity(batch.payloads.len());
        let mut failures = Vec::new();
        let mut arrays: Vec<ArrayRef> = Vec::new();
        let mut missing: Vec<SchemaRef> = Vec::new();
        // Runs of bodies of one writer schema, in order (tombstones and failures in between do
        // not end a run): decoded a run at a time.
        let mut run: Vec<(usize, &[u8])> = Vec::new();
        let mut run_schema: Option<SchemaRef> = None;
        for i in 0..batch.payloads.len() {
            let (schema, body) = match batch.row(i) {
                Row::Null => {
                    outcomes.push(Outcome::Null);
                    continue;
                }
                Row::Failed(failure) => {
                    outcomes.push(Outcome::Null);
                    failures.push(failure);
                    continue;
                }
                Row::Body(schema, body) => (schema, body),
            };
            if !missing.is_empty() {
                // Nothing is decoded now: only the missing are looked for.
                if run_schema != Some(schema) && !self.holds(&schema) && !missing.contains(&schema)
                {
                    missing.push(schema);
                }
                run_schema = Some(schema);
                continue;
            }
            // A run's next record: its writer schema was found for the first.
            let same_run = run_schema == Some(schema) && !run.is_empty();
            let reason = if same_run {
                None
            } else {
                match (self.writers.get(&schema), self.refused.get(&schema)) {
                    (Some(Ok(_)), _) => None,
                    (Some(Err(reason)), _) | (None, Some(reason)) => Some(reason.clone()),
                    (None, None) if ask => {
                        missing.push(schema);
                        run_schema = Some(schema);
                        continue;
                    }
                    (None, None) => Some(format!("no writer schema was given for {schema}")),
                }
            };
            if let Some(reason) = reason {
                outcomes.push(Outcome::Null);
                failures.push(Failure {
                    row: i,
                    schema: Some(schema),
                    reason,
                });
                continue;
            }
            if run_schema != Some(schema) {
                self.flush_run(
                    run_schema,
                    &mut run,
                    &mut outcomes,
                    &mut arrays,
                    &mut failures,
                );
                run_schema = Some(schema);
            }
            outcomes.push(Outcome::Pending);
            run.push((i, body));
        }
        if !missing.is_empty() {
            return Ok(Err(missing));
        }
        self.flush_run(
            run_schema,
            &mut run,
            &mut outcomes,
            &mut arrays,
            &mut failures,
        );
        self.refused.clear();
        failures.sort_by_key(|f| f.row);
        let schema_ids = outcomes
            .iter()
            .map(|o| match o {
                Outcome::Value(SchemaRef::Id(id), _, _) => Some(*id as i32),
                _ => None,
            })
            .collect();
        Ok(Ok(Decoded {
            values: assemble(&outcomes, &arrays, &self.target)?,
            schema_ids,
            failures,
        }))
    }

    /// Whether a writer schema or a refusal was given for `schema`.
    fn holds(&self, schema: &SchemaRef) -> bool {
        self.writers.contains_key(schema) || self.refused.contains_key(schema)
    }

    fn flush_run(
        &mut self,
        schema: Option<SchemaRef>,
        run: &mut Vec<(usize, &[u8])>,
        outcomes: &mut [Outcome],
        arrays: &mut Vec<ArrayRef>,
        failures: &mut Vec<Failure>,
    ) {
        let Some(schema) = schema else { return };
        if run.is_empty() {
            return;
        }
        let Some(Ok(writer)) = self.writers.get_mut(&schema) else {
            return;
        };
        let bodies: Vec<&[u8]> = run.iter().map(|(_, body)| *body).collect();
        let decoded = writer.decode(&bodies, &self.target);
        let first = arrays.len();
        arrays.extend(decoded.arrays);
        for ((row, _), result) in run.drain(..).zip(decoded.rows) {
            outcomes[row] = match result {
                Ok((array, at)) => Outcome::Value(schema, first + array, at),
                Err(reason) => {
                    failures.push(Failure {
                        row,
                        schema: Some(schema),
                        reason,
                    });
                    Outcome::Null
                }
            };
        }
    }
}

/// A batch's payloads and schema headers.
struct Batch<'a> {
    payloads: &'a BinaryArray,
    headers: Option<SchemaHeaders<'a>>,
    key: bool,
}

impl<'a> Batch<'a> {
    fn of(values: &'a ArrayRef, headers: Option<&'a ArrayRef>, key: bool) -> Result<Self, String> {
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

    /// Record `i` framed: a tombstone, a framing failure, or a schema and body.
    fn row(&self, i: usize) -> Row<'a> {
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

/// A record's value: none (null), not decoded yet, or row `.2` of array `.1`, written with schema `.0`.
#[derive(Clone, Copy)]
enum Outcome {
    Null,
    Pending,
    Value(SchemaRef, usize, usize),
}

/// The values in row order: runs of rows copied from the decoded arrays, nulls between.
fn assemble(
    outcomes: &[Outcome],
    arrays: &[ArrayRef],
    target: &DataType,
) -> Result<ArrayRef, String> {
    if arrays.len() == 1 && outcomes.iter().all(|o| matches!(o, Outcome::Value(..))) {
        return Ok(arrays[0].clone()); // one run, no nulls: as decoded
    }
    if arrays.is_empty() {
        return Ok(new_null_array(target, outcomes.len()));
    }
    let data: Vec<_> = arrays.iter().map(|a| a.to_data()).collect();
    let mut out = MutableArrayData::new(data.iter().collect(), true, outcomes.len());
    let mut span: Option<(usize, usize, usize)> = None; // array, start, end
    for outcome in outcomes {
        match (*outcome, span) {
            (Outcome::Value(_, array, row), Some((a, start, end))) if a == array && end == row => {
                span = Some((a, start, end + 1));
            }
            (Outcome::Value(_, array, row), _) => {
                if let Some((a, start, end)) = span.replace((array, row, row + 1)) {
                    out.try_extend(a, start, end).map_err(|e| e.to_string())?;
                }
            }
            _ => {
                if let Some((a, start, end)) = span.take() {
                    out.try_extend(a, start, end).map_err(|e| e.to_string())?;
                }
                out.try_extend_nulls(1).map_err(|e| e.to_string())?;
            }
        }
    }
    if let Some((a, start, end)) = span {
        out.try_extend(a, start, end).map_err(|e| e.to_string())?;
    }
    Ok(make_array(out.freeze()))
}

/// The source's `headers` column: list<struct<key: string, value: binary>>.
struct SchemaHeaders<'a> {
    list: &'a ListArray,
    keys: &'a arrow_array::StringArray,
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

    /// The value of record `row`'s first header called `name` (empty when null), if any.
    fn find(&self, row: usize, name: &str) -> Option<&'a [u8]> {
        if self.list.is_null(row) {
            return None;
        }
        let offsets = self.list.value_offsets();
        (offsets[row] as usize..offsets[row + 1] as usize)
            .find(|&j| self.keys.is_valid(j) && self.keys.value(j) == name)
            .map(|j| {
                if self.values.is_null(j) {
                    &[][..]
                } else {
                    self.values.value(j)
                }
            })
    }
}

#[cfg(test)]
mod tests;
