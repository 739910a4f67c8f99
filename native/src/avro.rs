//! Avro keys or values decoded straight into an Arrow column of the reader schema's Spark type,
//! giving what the Python package's `avro.decode.Decoder` gives for the schemas it accepts.
//!
//! Each record names its writer schema ([`framing`]); the writer schemas come from the caller (the
//! registry's I/O stays in Python: [`AvroDecoder::decode_or_missing`] says which are missing, the
//! caller adds them or says why it could not). arrow-avro decodes the bodies and resolves each writer
//! schema to the reader schema ([`writer`]); its Arrow types are then made Spark's ([`conform`]).
//! A reader schema whose type cannot be made Spark's is refused when the decoder is made.
//!
//! - [`framing`]: Confluent's wire formats: the schema a record names and where its body starts;
//! - [`records`]: a batch's records framed, a record's schema header found in its headers;
//! - [`assembly`]: the decoded values put in row order, with each record's schema id;
//! - [`writer`]: one writer schema's runs of bodies decoded, record by record after a failure;
//! - [`conform`]: arrow-avro's Arrow types into Spark's;
//! - [`union`]: unions of several types into Spark's struct of members (or a long, a double).

mod assembly;
pub mod conform;
pub mod framing;
mod records;
pub mod union;
pub mod writer;

use std::collections::HashMap;

use arrow_array::{ArrayRef, Int32Array};
use arrow_avro::schema::AvroSchema;
use arrow_schema::DataType;

use assembly::{Output, Slot};
pub use framing::SchemaRef;
use records::{Batch, Row};
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

    /// The writer schema (Avro JSON) `schema` names. Err (nothing added) for a writer schema
    /// arrow-avro cannot be trusted with ([`writer::unsupported`]) or cannot resolve to the
    /// reader schema (naming both): the caller decodes otherwise (Avro Java fails only the
    /// records whose values reach what does not resolve; arrow-avro would fail them all).
    pub fn add_writer(&mut self, schema: SchemaRef, writer_schema: &str) -> Result<(), String> {
        let (wrapped, name) = wrap(writer_schema).map_err(|e| format!("{schema}: {e}"))?;
        let writer = Writer::new(&self.reader, wrapped).map_err(|e| {
            format!(
                "the writer schema {name} ({schema}) cannot be read as the reader schema {}: {e}",
                self.reader_name
            )
        })?;
        self.refused.remove(&schema);
        self.writers.insert(schema, Ok(writer));
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
        let mut out = Output::new(batch.records());
        let mut missing: Vec<SchemaRef> = Vec::new();
        let mut last: Option<SchemaRef> = None; // once something is missing
        let mut run: Option<Run> = None;
        for i in 0..batch.records() {
            let (schema, body) = match batch.row(i) {
                Row::Null => continue,
                Row::Failed(failure) => {
                    out.failures.push(failure);
                    continue;
                }
                Row::Body(schema, body) => (schema, body),
            };
            if let Some(run) = run.as_mut().filter(|run| run.schema == schema) {
                run.feed(i, body);
                continue;
            }
            if !missing.is_empty() {
                // Nothing is decoded now: only the missing are looked for.
                if last != Some(schema) && !self.holds(&schema) && !missing.contains(&schema) {
                    missing.push(schema);
                }
                last = Some(schema);
                continue;
            }
            let reason = match (self.writers.get(&schema), self.refused.get(&schema)) {
                (Some(Ok(_)), _) => None,
                (Some(Err(reason)), _) | (None, Some(reason)) => Some(reason.clone()),
                (None, None) if ask => {
                    (missing, last) = (vec![schema], Some(schema));
                    if let Some(done) = run.take() {
                        self.finish(done, &batch, &mut out); // its decoder is left clean
                    }
                    continue;
                }
                (None, None) => Some(format!("no writer schema was given for {schema}")),
            };
            if let Some(reason) = reason {
                out.failures.push(Failure {
                    row: i,
                    schema: Some(schema),
                    reason,
                });
                continue;
            }
            if let Some(done) = run.take() {
                self.finish(done, &batch, &mut out);
            }
            if let Some(Ok(writer)) = self.writers.remove(&schema) {
                let mut next = Run::new(schema, writer);
                next.feed(i, body);
                run = Some(next);
            }
        }
        if let Some(done) = run.take() {
            self.finish(done, &batch, &mut out);
        }
        if !missing.is_empty() {
            return Ok(Err(missing));
        }
        self.refused.clear();
        out.into_decoded(&self.target).map(Ok)
    }

    /// Whether a writer schema or a refusal was given for `schema`.
    fn holds(&self, schema: &SchemaRef) -> bool {
        self.writers.contains_key(schema) || self.refused.contains_key(schema)
    }

    /// `run`'s values into `out`: all at once, or record by record after a failure (each
    /// failing record fails alone); its writer back with the others.
    fn finish(&mut self, mut run: Run, batch: &Batch<'_>, out: &mut Output) {
        let decoded = match run.failed {
            true => {
                run.writer.renew();
                None
            }
            false => run.writer.finish(&self.target).ok(),
        };
        if let Some(array) = decoded {
            let array = out.add(run.schema, array);
            for (at, row) in run.rows.iter().enumerate() {
                out.slots[*row] = Slot::at(array, at);
            }
        } else {
            let bodies: Vec<&[u8]> = run
                .rows
                .iter()
                .map(|row| match batch.row(*row) {
                    Row::Body(_, body) => body,
                    _ => &[], // framed a body before: framing is the same each time
                })
                .collect();
            let decoded = run.writer.one_by_one(&bodies, &self.target);
            let first = out.arrays.len();
            for array in decoded.arrays {
                out.add(run.schema, array);
            }
            for (row, result) in run.rows.iter().zip(decoded.rows) {
                match result {
                    Ok((array, at)) => out.slots[*row] = Slot::at(first + array, at),
                    Err(reason) => out.failures.push(Failure {
                        row: *row,
                        schema: Some(run.schema),
                        reason,
                    }),
                }
            }
        }
        self.writers.insert(run.schema, Ok(run.writer));
    }
}

/// One writer schema's records of a batch in row order (tombstones and failures in between do not
/// end it): each body is handed to its writer's decoder as soon as it is framed.
struct Run {
    schema: SchemaRef,
    writer: Writer,
    rows: Vec<usize>,
    failed: bool,
}

impl Run {
    fn new(schema: SchemaRef, writer: Writer) -> Self {
        Run {
            schema,
            writer,
            rows: Vec::new(),
            failed: false,
        }
    }

    /// Record `row`'s `body`; after a failure the bodies wait to be decoded one by one.
    fn feed(&mut self, row: usize, body: &[u8]) {
        if !self.failed && self.writer.feed(body).is_err() {
            self.failed = true;
        }
        self.rows.push(row);
    }
}

#[cfg(test)]
mod tests;
