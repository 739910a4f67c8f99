//! The decoder over whole batches: framing, missing and refused schemas, a writer schema
//! changing mid-batch, a truncated body among good ones.

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, ListBuilder, StringBuilder, StructBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, BinaryArray};
use arrow_schema::{DataType, Field, Fields};

use super::*;

const READER: &str = r#"{"type":"record","name":"R","namespace":"n","fields":[
    {"name":"a","type":"long"},{"name":"b","type":"string","default":"none"}]}"#;
const OLD: &str =
    r#"{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":"int"}]}"#;

fn target() -> DataType {
    DataType::Struct(Fields::from(vec![
        Field::new("a", DataType::Int64, false),
        Field::new("b", DataType::Utf8, false),
    ]))
}

fn zigzag(v: i64) -> Vec<u8> {
    let mut n = ((v << 1) ^ (v >> 63)) as u64;
    let mut out = Vec::new();
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

fn framed(id: u32, body: &[u8]) -> Vec<u8> {
    let mut out = vec![0];
    out.extend(id.to_be_bytes());
    out.extend(body);
    out
}

fn new_record(a: i64, b: &str) -> Vec<u8> {
    let mut body = zigzag(a);
    body.extend(zigzag(b.len() as i64));
    body.extend(b.as_bytes());
    body
}

fn batch(payloads: &[Option<Vec<u8>>]) -> ArrayRef {
    Arc::new(BinaryArray::from_iter(
        payloads.iter().map(|p| p.as_deref()),
    ))
}

/// A row of a record written with `OLD`: its `b` takes the reader's default.
fn old(a: i64) -> Option<(i64, String)> {
    Some((a, "none".into()))
}

fn rows(values: &ArrayRef) -> Vec<Option<(i64, String)>> {
    let values = values.as_struct();
    let a = values.column(0).as_primitive::<Int64Type>();
    let b = values.column(1).as_string::<i32>();
    (0..values.len())
        .map(|i| {
            values
                .is_valid(i)
                .then(|| (a.value(i), b.value(i).to_string()))
        })
        .collect()
}

#[test]
fn a_writer_schema_change_mid_batch_tombstones_and_a_truncated_body() {
    let mut decoder = AvroDecoder::new(READER, false, target()).unwrap();
    let values = batch(&[
        Some(framed(1, &zigzag(5))),
        None,
        Some(framed(2, &new_record(6, "six"))),
        Some(framed(2, &new_record(7, "seven")[..3])),
        Some(framed(1, &zigzag(8))),
        Some(vec![9]),
    ]);
    let missing = decoder.decode_or_missing(&values, None).unwrap().err();
    assert_eq!(missing, Some(vec![SchemaRef::Id(1), SchemaRef::Id(2)]));
    decoder.add_writer(SchemaRef::Id(1), OLD).unwrap();
    decoder.add_writer(SchemaRef::Id(2), READER).unwrap();
    let Ok(decoded) = decoder.decode_or_missing(&values, None).unwrap() else {
        panic!("every writer schema was added");
    };
    assert_eq!(
        rows(&decoded.values),
        vec![old(5), None, Some((6, "six".into())), None, old(8), None]
    );
    assert_eq!(decoded.values.data_type(), &target());
    let ids: Vec<Option<i32>> = decoded.schema_ids.iter().collect();
    assert_eq!(ids, vec![Some(1), None, Some(2), None, Some(1), None]);
    assert_eq!(
        decoded.failures,
        vec![
            Failure {
                row: 3,
                schema: Some(SchemaRef::Id(2)),
                reason: writer::TRUNCATED.into()
            },
            Failure {
                row: 5,
                schema: None,
                reason: "the payload starts with byte 9, not a magic byte (0: a schema id \
                         follows, 1: a schema GUID): not written by a schema registry's serializer"
                    .into()
            },
        ]
    );
}

#[test]
fn a_refused_schema_fails_its_records_in_the_next_batch_only() {
    let mut decoder = AvroDecoder::new(READER, false, target()).unwrap();
    let values = batch(&[Some(framed(4, &new_record(1, "x")))]);
    decoder.refuse(SchemaRef::Id(4), "the registry is down".into());
    let decoded = decoder.decode(&values, None).unwrap();
    assert_eq!(rows(&decoded.values), vec![None]);
    assert_eq!(decoded.failures[0].reason, "the registry is down");
    let again = decoder.decode(&values, None).unwrap();
    assert_eq!(
        again.failures[0].reason,
        "no writer schema was given for schema id 4"
    );
}

#[test]
fn the_missing_are_named_once_after_decoded_runs_and_refusals_last_one_decode() {
    let mut decoder = AvroDecoder::new(READER, false, target()).unwrap();
    decoder.add_writer(SchemaRef::Id(1), OLD).unwrap();
    decoder.refuse(SchemaRef::Id(3), "the registry is down".into());
    let values = batch(&[
        Some(framed(1, &zigzag(5))),
        Some(framed(3, &zigzag(6))),
        Some(framed(1, &zigzag(7))),
        Some(framed(4, &zigzag(8))),
        Some(framed(1, &zigzag(9))),
        Some(framed(5, &zigzag(10))),
        Some(framed(4, &zigzag(11))),
        Some(framed(3, &zigzag(12))),
    ]);
    let missing = decoder.decode_or_missing(&values, None).unwrap().err();
    assert_eq!(missing, Some(vec![SchemaRef::Id(4), SchemaRef::Id(5)]));
    decoder.refuse(SchemaRef::Id(4), "not found".into());
    decoder.add_writer(SchemaRef::Id(5), OLD).unwrap();
    let Ok(decoded) = decoder.decode_or_missing(&values, None).unwrap() else {
        panic!("every schema was added or refused");
    };
    assert_eq!(
        rows(&decoded.values),
        vec![old(5), None, old(7), None, old(9), old(10), None, None]
    );
    let failed: Vec<(usize, &str)> = decoded
        .failures
        .iter()
        .map(|f| (f.row, f.reason.as_str()))
        .collect();
    assert_eq!(
        failed,
        vec![
            (1, "the registry is down"),
            (3, "not found"),
            (6, "not found"),
            (7, "the registry is down")
        ]
    );
    // Refusals last one decode: the next batch asks for them again.
    let again = decoder.decode_or_missing(&values, None).unwrap().err();
    assert_eq!(again, Some(vec![SchemaRef::Id(3), SchemaRef::Id(4)]));
}

#[test]
fn an_unresolvable_writer_is_refused_naming_both_schemas() {
    let mut decoder = AvroDecoder::new(READER, true, target()).unwrap();
    let other =
        r#"{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":"string"}]}"#;
    let reason = decoder.add_writer(SchemaRef::Id(3), other).unwrap_err();
    // Nothing was added: its records still name a missing writer schema.
    let decoded = decoder
        .decode(&batch(&[Some(framed(3, &[0]))]), None)
        .unwrap();
    assert_eq!(
        decoded.failures[0].reason,
        "no writer schema was given for schema id 3"
    );
    assert!(
        reason.starts_with(
            "the writer schema n.R (schema id 3) cannot be read as the reader schema n.R: "
        ),
        "{reason}"
    );
}

#[test]
fn a_reader_schema_of_a_type_spark_reads_otherwise_is_refused() {
    let duration = r#"{"type":"fixed","name":"D","size":12,"logicalType":"duration"}"#;
    let refusal = AvroDecoder::new(duration, false, DataType::Binary)
        .err()
        .unwrap();
    assert!(refusal.starts_with("the reader schema D: "), "{refusal}");
}

#[test]
fn unions_of_several_types_become_spark_members() {
    let members = DataType::Struct(Fields::from(vec![
        Field::new("member0", DataType::Int32, true),
        Field::new("member1", DataType::Utf8, true),
    ]));
    let union = r#"["int","null","string"]"#;
    let mut decoder = AvroDecoder::new(union, false, members.clone()).unwrap();
    decoder.add_writer(SchemaRef::Id(1), union).unwrap();
    let mut text = zigzag(2);
    text.extend(zigzag(2));
    text.extend(b"hi");
    let values = batch(&[
        Some(framed(1, &[0, 6])),    // branch 0, int 3
        Some(framed(1, &zigzag(1))), // branch 1, null
        Some(framed(1, &text)),      // branch 2, "hi"
    ]);
    let decoded = decoder.decode(&values, None).unwrap();
    assert_eq!(decoded.values.data_type(), &members);
    let values = decoded.values.as_struct();
    assert_eq!(
        (0..3).map(|i| values.is_valid(i)).collect::<Vec<_>>(),
        vec![true, false, true]
    );
    let ints: Vec<Option<i32>> = values
        .column(0)
        .as_primitive::<arrow_array::types::Int32Type>()
        .iter()
        .collect();
    assert_eq!(ints[0], Some(3));
    assert_eq!(
        values
            .column(1)
            .as_string::<i32>()
            .iter()
            .collect::<Vec<_>>()[2],
        Some("hi")
    );
    assert!(values.column(0).is_null(2) && values.column(1).is_null(0));
    let long = AvroDecoder::new(r#"["int","long"]"#, false, DataType::Int64);
    assert!(long.is_ok());
}

/// A record header: its key and value (None: null).
type Header<'a> = (&'a str, Option<Vec<u8>>);

/// A `headers` column (list<struct<key: string, value: binary>>) of these records' headers.
fn headers(records: &[Vec<Header<'_>>]) -> ArrayRef {
    let fields = Fields::from(vec![
        Field::new("key", DataType::Utf8, true),
        Field::new("value", DataType::Binary, true),
    ]);
    let entry = || StructBuilder::from_fields(fields.clone(), 0);
    let mut list = ListBuilder::new(entry());
    for record in records {
        for (key, value) in record {
            let entries = list.values();
            let keys = entries.field_builder::<StringBuilder>(0).unwrap();
            keys.append_value(key);
            let values = entries.field_builder::<BinaryBuilder>(1).unwrap();
            values.append_option(value.as_deref());
            entries.append(true);
        }
        list.append(true);
    }
    Arc::new(list.finish())
}

fn named(id: u32) -> Option<Vec<u8>> {
    Some(framed(id, &[]))
}

/// Schema Registry's Java `DualSchemaIdDeserializer` takes `Headers.lastHeader`: a record a
/// stream processor re-serialized carries its input's schema header, then its output's.
#[test]
fn the_last_schema_header_wins_and_a_null_one_leaves_the_prefix() {
    for key in [false, true] {
        let (name, other) = if key {
            (framing::KEY_HEADER, framing::VALUE_HEADER)
        } else {
            (framing::VALUE_HEADER, framing::KEY_HEADER)
        };
        let mut decoder = AvroDecoder::new(READER, key, target()).unwrap();
        decoder.add_writer(SchemaRef::Id(1), OLD).unwrap();
        decoder.add_writer(SchemaRef::Id(2), READER).unwrap();
        let values = batch(&[
            Some(new_record(7, "payload-b")),
            Some(framed(2, &new_record(8, "eight"))),
            Some(framed(1, &zigzag(9))),
            Some(new_record(10, "ten")),
            Some(new_record(11, "eleven")),
            Some(new_record(12, "twelve")),
        ]);
        let mut suffixed = framed(2, &[]);
        suffixed.extend([0xff, 0xfe]);
        let headers = headers(&[
            vec![(name, named(1)), (name, named(2))],
            vec![(name, None)],
            vec![(name, named(2)), ("other", named(2)), (name, None)],
            vec![(name, named(2)), (other, named(1))],
            vec![(name, Some(suffixed))],
            vec![(name, named(1)), (name, Some(vec![]))],
        ]);
        let decoded = decoder.decode(&values, Some(&headers)).unwrap();
        assert_eq!(
            rows(&decoded.values),
            vec![
                Some((7, "payload-b".into())),
                Some((8, "eight".into())),
                old(9),
                Some((10, "ten".into())),
                Some((11, "eleven".into())),
                None,
            ],
            "key: {key}"
        );
        let ids: Vec<Option<i32>> = decoded.schema_ids.iter().collect();
        assert_eq!(ids, vec![Some(2), Some(2), Some(1), Some(2), Some(2), None]);
        assert_eq!(
            decoded.failures,
            vec![Failure {
                row: 5,
                schema: None,
                reason: format!("the header {name} is empty: no magic byte names its schema"),
            }]
        );
    }
}
