//! One writer schema's bodies decoded by arrow-avro into the reader schema's Spark type.
//!
//! Both schemas are wrapped in a one-field record (its encoding is the field's), so a top-level
//! schema of any type decodes into column 0 of arrow-avro's record batches. A run of bodies is
//! fed as framed and decoded all into one batch; arrow-avro cannot drop a record it fails on
//! halfway (its columns would no longer line up), so a run with a failure is decoded again record
//! by record, each its own batch, a fresh decoder after each failure: only the records that fail,
//! fail.

use arrow_array::ArrayRef;
use arrow_avro::errors::AvroError;
use arrow_avro::reader::{Decoder, DecoderMode, ReaderBuilder};
use arrow_avro::schema::{AvroSchema, Fingerprint, FingerprintAlgorithm, SchemaStore};
use arrow_schema::DataType;

use super::conform::conform;

/// Why a record whose body ends early fails (the Python decoder's words).
pub const TRUNCATED: &str = "its bytes end before the schema's values do (truncated or damaged)";

/// The name of the wrapping record: no namespace, so the schema's own names keep theirs.
const WRAPPER: &str = "pyspark_dynamic_kafka_wrapper";

/// `schema` (Avro JSON) as the one field of a record, and its name for messages.
pub fn wrap(schema: &str) -> Result<(AvroSchema, String), String> {
    let parsed: serde_json::Value =
        serde_json::from_str(schema).map_err(|e| format!("not JSON: {e}"))?;
    let name = name_of(&parsed);
    if let Some(reason) = unsupported(&parsed) {
        return Err(format!("the schema {name}: {reason}"));
    }
    let wrapped = serde_json::json!({
        "type": "record",
        "name": WRAPPER,
        "fields": [{"name": "value", "type": parsed}],
    });
    Ok((AvroSchema::new(wrapped.to_string()), name))
}

/// Why arrow-avro cannot be trusted with `schema`, if so: a union of several types with a named
/// type referred to by its name as a branch (arrow-avro 60.1 resolves such a branch to another
/// branch of the union, reading wrong values without an error).
pub fn unsupported(schema: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    const PRIMITIVES: [&str; 8] = [
        "null", "boolean", "int", "long", "float", "double", "bytes", "string",
    ];
    match schema {
        Value::Array(branches) => {
            let several = branches.iter().filter(|b| *b != "null").count() > 1;
            let by_name = branches
                .iter()
                .filter_map(Value::as_str)
                .find(|b| !PRIMITIVES.contains(b));
            match by_name {
                Some(name) if several => Some(format!(
                    "the union {schema} has the named type {name} as a branch by its name, \
                     which arrow-avro 60.1 resolves to another branch"
                )),
                _ => branches.iter().find_map(unsupported),
            }
        }
        Value::Object(fields) => {
            let nested = ["type", "items", "values"]
                .iter()
                .filter_map(|k| fields.get(*k));
            let of_fields = fields
                .get("fields")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|f| f.get("type"));
            nested.chain(of_fields).find_map(unsupported)
        }
        _ => None,
    }
}

/// A schema's name for messages: a named type's full name, else its type.
fn name_of(schema: &serde_json::Value) -> String {
    match schema {
        serde_json::Value::String(name) => name.clone(),
        serde_json::Value::Array(_) => "union".to_string(),
        serde_json::Value::Object(fields) => {
            let text = |key: &str| fields.get(key).and_then(|v| v.as_str());
            match (text("name"), text("namespace")) {
                (Some(name), Some(space)) if !name.contains('.') && !space.is_empty() => {
                    format!("{space}.{name}")
                }
                (Some(name), _) => name.to_string(),
                _ => fields.get("type").map_or_else(|| "?".into(), name_of),
            }
        }
        other => other.to_string(),
    }
}

/// arrow-avro's streaming decoder of one datum per call, `writer` resolved to `reader`.
pub fn decoder(reader: &AvroSchema, writer: &AvroSchema) -> Result<Decoder, String> {
    let mut store = SchemaStore::new_with_type(FingerprintAlgorithm::Id);
    store
        .set(Fingerprint::Id(0), writer.clone())
        .map_err(|e| e.to_string())?;
    let builder = ReaderBuilder::new();
    // The same schema needs no resolution (arrow-avro then skips its projection step).
    let builder = if reader == writer {
        builder
    } else {
        builder.with_reader_schema(reader.clone())
    };
    builder
        .with_writer_schema_store(store)
        .with_active_fingerprint(Fingerprint::Id(0))
        .with_decoder_mode(DecoderMode::UnframedDatum)
        .with_batch_size(usize::MAX)
        .build_decoder()
        .map_err(|e| e.to_string())
}

/// What a run of bodies decoded into: arrays, and for each body the (array, row) of its value
/// or why it failed.
pub struct Decoding {
    pub arrays: Vec<ArrayRef>,
    pub rows: Vec<Result<(usize, usize), String>>,
}

/// A writer schema resolved to the reader schema, and its decoder.
pub struct Writer {
    reader: AvroSchema,
    schema: AvroSchema,
    decoder: Decoder,
}

impl Writer {
    /// The writer schema `schema` (wrapped) read as `reader` (wrapped), or why it cannot be.
    pub fn new(reader: &AvroSchema, schema: AvroSchema) -> Result<Self, String> {
        let decoder = decoder(reader, &schema)?;
        Ok(Writer {
            reader: reader.clone(),
            schema,
            decoder,
        })
    }

    /// Hand `body` to the decoder; after an Err, [`Self::renew`] it before decoding more.
    pub fn feed(&mut self, body: &[u8]) -> Result<(), String> {
        self.decoder
            .decode(body)
            .map(|_| ())
            .map_err(|e| reason(&e))
    }

    /// The bodies fed since the last finish, as an array of `target` (the decoder is renewed
    /// after a failure).
    pub fn finish(&mut self, target: &DataType) -> Result<ArrayRef, String> {
        let batch = self.decoder.flush().map_err(|e| reason(&e));
        let decoded = batch
            .and_then(|b| b.ok_or_else(|| TRUNCATED.to_string()))
            .and_then(|b| conform(b.column(0), target));
        if decoded.is_err() {
            self.renew();
        }
        decoded
    }

    /// Each of `bodies` decoded alone into an array of `target` (the decoder is fresh): only the
    /// records that fail, fail.
    pub fn one_by_one(&mut self, bodies: &[&[u8]], target: &DataType) -> Decoding {
        let mut run = Decoding {
            arrays: Vec::new(),
            rows: Vec::with_capacity(bodies.len()),
        };
        for body in bodies {
            match self.feed(body).and_then(|()| self.finish(target)) {
                Ok(array) => {
                    run.rows.push(Ok((run.arrays.len(), 0)));
                    run.arrays.push(array);
                }
                Err(reason) => {
                    run.rows.push(Err(reason));
                    self.renew();
                }
            }
        }
        run
    }

    /// A fresh decoder after a failure left the last one's columns uneven.
    pub fn renew(&mut self) {
        if let Ok(fresh) = decoder(&self.reader, &self.schema) {
            self.decoder = fresh;
        }
    }
}

/// Why a body failed, in the Python decoder's words where they are the same failure.
fn reason(error: &AvroError) -> String {
    match error {
        AvroError::EOF(_) | AvroError::NeedMoreData(_) | AvroError::NeedMoreDataRange(_) => {
            TRUNCATED.to_string()
        }
        // A varint the body ends inside of, or a length or count no body could hold: what
        // fastavro reports as reading past the end.
        AvroError::ParseError(text)
            if matches!(
                text.as_str(),
                "bad varint" | "varint overflow" | "offset overflow reading avro bytes"
            ) =>
        {
            TRUNCATED.to_string()
        }
        other => format!("its Avro body is damaged: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;

    /// `bodies` decoded as the batch decoder does: all at once, one by one after a failure.
    fn decode(writer: &mut Writer, bodies: &[&[u8]], target: &DataType) -> Decoding {
        let fed = bodies.iter().try_for_each(|body| writer.feed(body));
        match fed.and_then(|()| writer.finish(target)) {
            Ok(array) => Decoding {
                arrays: vec![array],
                rows: (0..bodies.len()).map(|row| Ok((0, row))).collect(),
            },
            Err(_) => {
                writer.renew();
                writer.one_by_one(bodies, target)
            }
        }
    }

    fn writer(reader: &str, schema: &str) -> Result<Writer, String> {
        Writer::new(&wrap(reader)?.0, wrap(schema)?.0)
    }

    #[test]
    fn a_truncated_body_fails_alone_and_trailing_bytes_are_ignored() {
        let mut writer = writer(r#""long""#, r#""int""#).unwrap();
        // zig-zag varints: 2 -> 1, 0x80 starts a varint that never ends, 6 -> 3 (then junk).
        let run = decode(&mut writer, &[&[2], &[0x80], &[6, 99]], &DataType::Int64);
        assert_eq!(run.rows[0], Ok((0, 0)));
        assert_eq!(run.rows[1], Err(TRUNCATED.to_string()));
        assert_eq!(run.rows[2], Ok((1, 0)));
        let values: Vec<i64> = run
            .arrays
            .iter()
            .map(|a| a.as_primitive::<Int64Type>().value(0))
            .collect();
        assert_eq!(values, vec![1, 3]);
    }

    #[test]
    fn a_writer_the_reader_cannot_read_is_refused_and_names_are_full_names() {
        let reader =
            r#"{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":"int"}]}"#;
        let schema = r#"{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":"string"}]}"#;
        assert!(writer(reader, schema).is_err());
        assert_eq!(wrap(reader).unwrap().1, "n.R");
        assert_eq!(wrap(r#"["null","int"]"#).unwrap().1, "union");
        let by_name = r#"{"type":"record","name":"W","fields":[
            {"name":"f","type":{"type":"enum","name":"E","symbols":["P"]}},
            {"name":"g","type":{"type":"array","items":["int","E"]}}]}"#;
        let refusal = wrap(by_name).err().unwrap();
        assert!(
            refusal.starts_with(r#"the schema W: the union ["int","E"] has the named type E"#),
            "{refusal}"
        );
        assert!(wrap(r#"{"type":"array","items":["null","E"]}"#).is_ok());
    }
}
