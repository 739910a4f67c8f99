//! The encoder's bytes for a few columns, against bytes worked out by hand from Avro's spec and
//! fastavro's rules (the differential test in Python checks them against Apache Avro Java).

use std::sync::Arc;

use arrow_array::builder::{Int64Builder, ListBuilder, MapBuilder, StringBuilder};
use arrow_array::{
    Array, ArrayRef, Decimal128Array, Float64Array, Int32Array, Int64Array, StringArray,
    StructArray,
};
use arrow_schema::{DataType, Field};

use super::body::long;
use super::AvroEncoder;

fn payloads(schema: &str, values: ArrayRef) -> Result<Vec<Option<Vec<u8>>>, usize> {
    let encoded = AvroEncoder::new(schema)
        .unwrap()
        .encode(&values, 7)
        .unwrap()?;
    Ok((0..encoded.len())
        .map(|i| encoded.is_valid(i).then(|| encoded.value(i)[5..].to_vec()))
        .collect())
}

#[test]
fn longs_are_zigzag_varints() {
    let mut out = Vec::new();
    for value in [0, -1, 1, -64, 64, i64::MIN] {
        long(value, &mut out);
    }
    assert_eq!(out[..7], [0, 1, 2, 0x7f, 0x80, 0x01, 0xff]);
    assert_eq!(out.len(), 6 + 10);
}

#[test]
fn a_record_is_framed_with_the_id_and_a_null_is_a_tombstone() {
    let schema = r#"{"type":"record","name":"R","fields":[{"name":"id","type":"long"},
        {"name":"name","type":["null","string"]}]}"#;
    let ids: ArrayRef = Arc::new(Int64Array::from(vec![1, 2, 3]));
    let names: ArrayRef = Arc::new(StringArray::from(vec![Some("ab"), None, None]));
    let fields = vec![
        Arc::new(Field::new("id", DataType::Int64, false)),
        Arc::new(Field::new("name", DataType::Utf8, true)),
    ];
    let nulls = Some(vec![true, true, false].into());
    let values = StructArray::new(fields.into(), vec![ids, names], nulls);
    let encoded = AvroEncoder::new(schema).unwrap();
    let out = encoded
        .encode(&(Arc::new(values) as ArrayRef), 258)
        .unwrap()
        .unwrap();
    assert_eq!(out.value(0), [0, 0, 0, 1, 2, 2, 2, 4, b'a', b'b']);
    assert_eq!(out.value(1), [0, 0, 0, 1, 2, 4, 0]);
    assert!(out.is_null(2));
}

#[test]
fn a_null_where_the_schema_has_none_is_refused_at_its_row() {
    let values: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None]));
    let encoder = AvroEncoder::new(
        r#"{"type":"record","name":"R","fields":[
        {"name":"a","type":"int"}]}"#,
    )
    .unwrap();
    let fields = vec![Arc::new(Field::new("a", DataType::Int32, true))];
    let record: ArrayRef = Arc::new(StructArray::new(fields.into(), vec![values], None));
    assert_eq!(encoder.encode(&record, 1).unwrap().unwrap_err(), 1);
}

#[test]
fn decimals_are_written_as_fastavro_writes_them() {
    let values = Decimal128Array::from(vec![0, 127, 128, -128, -129, 12345])
        .with_precision_and_scale(10, 2)
        .unwrap();
    let values: ArrayRef = Arc::new(values);
    let bytes = r#"{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}"#;
    let written = payloads(bytes, values.clone()).unwrap();
    let expected: [&[u8]; 6] = [
        &[2, 0],
        &[2, 0x7f],
        &[4, 0, 0x80],
        &[4, 0xff, 0x80],
        &[4, 0xff, 0x7f],
        &[4, 0x30, 0x39],
    ];
    for (got, want) in written.iter().zip(expected) {
        assert_eq!(got.as_deref(), Some(want));
    }
    let fixed = r#"{"type":"fixed","name":"D","size":5,"logicalType":"decimal","precision":10,
        "scale":2}"#;
    let written = payloads(fixed, values).unwrap();
    assert_eq!(
        written[3].as_deref(),
        Some(&[0xff, 0xff, 0xff, 0xff, 0x80][..])
    );
    assert_eq!(written[5].as_deref(), Some(&[0, 0, 0, 0x30, 0x39][..]));
}

#[test]
fn an_int_or_long_takes_the_first_branch_the_value_fits() {
    let values: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), Some(1 << 40), None]));
    let written = payloads(r#"["null","int","long"]"#, values.clone()).unwrap();
    assert_eq!(written[0].as_deref(), Some(&[2, 2][..]));
    assert_eq!(written[1].as_deref().map(|b| b[0]), Some(4));
    assert_eq!(written[2], None); // a null value is a tombstone, not the null branch
    let written = payloads(r#"["long","int"]"#, values).unwrap();
    assert_eq!(written[0].as_deref(), Some(&[0, 2][..]));
    let doubles: ArrayRef = Arc::new(Float64Array::from(vec![1.5]));
    let written = payloads(r#"["float","double"]"#, doubles).unwrap();
    assert_eq!(written[0].as_deref().map(|b| (b[0], b.len())), Some((2, 9)));
}

#[test]
fn arrays_and_maps_are_one_block_and_a_key_twice_is_refused() {
    let mut list = ListBuilder::new(Int64Builder::new());
    list.values().append_value(1);
    list.values().append_value(2);
    list.append(true);
    list.append(true);
    let written = payloads(
        r#"{"type":"array","items":"long"}"#,
        Arc::new(list.finish()),
    );
    assert_eq!(
        written.unwrap(),
        vec![Some(vec![4, 2, 4, 0]), Some(vec![0])]
    );
    let mut map = MapBuilder::new(None, StringBuilder::new(), Int64Builder::new());
    map.keys().append_value("a");
    map.values().append_value(1);
    map.append(true).unwrap();
    map.keys().append_value("a");
    map.values().append_value(1);
    map.keys().append_value("a");
    map.values().append_value(2);
    map.append(true).unwrap();
    let written = payloads(r#"{"type":"map","values":"long"}"#, Arc::new(map.finish()));
    assert_eq!(written.unwrap_err(), 1);
}

#[test]
fn schemas_the_python_encoder_writes_are_refused() {
    for schema in [
        r#"[]"#,
        r#"{"type":"fixed","name":"Z","size":0,"logicalType":"decimal","precision":1}"#,
        r#"{"type":"fixed","name":"S","size":2,"logicalType":"decimal","precision":5}"#,
        r#"{"type":"long","logicalType":"timestamp-nanos"}"#,
        r#"{"type":"fixed","name":"U","size":16,"logicalType":"uuid"}"#,
        r#"["string",{"type":"string","logicalType":"uuid"}]"#,
        r#""Named""#,
    ] {
        assert!(AvroEncoder::new(schema).is_err(), "{schema}");
    }
}

#[test]
fn a_column_still_held_keeps_its_bytes_and_a_dropped_one_is_written_again() {
    let schema = r#"{"type":"record","name":"R","fields":[{"name":"s","type":"string"}]}"#;
    let column = |texts: &[&str]| -> ArrayRef {
        let field = Arc::new(Field::new("s", DataType::Utf8, false));
        let texts: ArrayRef = Arc::new(StringArray::from(texts.to_vec()));
        Arc::new(StructArray::new(vec![field].into(), vec![texts], None))
    };
    let encoder = AvroEncoder::new(schema).unwrap();
    let first = encoder.encode(&column(&["ab", "c"]), 1).unwrap().unwrap();
    let second = encoder.encode(&column(&["xyz"]), 2).unwrap().unwrap();
    // the first is still held: the second was written elsewhere
    assert_eq!(first.value(0), [0, 0, 0, 0, 1, 4, b'a', b'b']);
    assert_eq!(first.value(1), [0, 0, 0, 0, 1, 2, b'c']);
    assert_eq!(second.value(0), [0, 0, 0, 0, 2, 6, b'x', b'y', b'z']);
    let at = second.values().as_ptr();
    drop((first, second));
    let third = encoder.encode(&column(&["q"]), 3).unwrap().unwrap();
    assert_eq!(third.value(0), [0, 0, 0, 0, 3, 2, b'q']);
    assert_eq!(third.len(), 1);
    assert_eq!(
        third.values().as_ptr(),
        at,
        "the dropped column's buffer is written again"
    );
}

/// CPU per record of encoding `benchmarks.avro_records`' 10-field record as Spark hands it over,
/// 10,000-row columns. `cargo test --release -- --ignored --nocapture encode_cost`.
#[test]
#[ignore]
fn encode_cost() {
    use arrow_array::{BinaryArray, BooleanArray, TimestampMicrosecondArray};
    let schema = r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},
        {"name":"customer","type":"string"},{"name":"quantity","type":"int"},
        {"name":"price","type":"double"},{"name":"paid","type":"boolean"},
        {"name":"token","type":"bytes"},{"name":"created","type":{"type":"long",
        "logicalType":"timestamp-millis"}},{"name":"note","type":["null","string"]},
        {"name":"region","type":"string"},{"name":"sequence","type":"long"}]}"#;
    let regions = ["eu-west", "us-east", "ap-south", "sa-east"];
    let columns = |b: i64| -> ArrayRef {
        let ids: Vec<i64> = (b * 10_000..(b + 1) * 10_000).collect();
        let field = |name: &str, t: DataType, n: bool| Arc::new(Field::new(name, t, n));
        let utc = DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, Some("UTC".into()));
        let fields = vec![
            field("id", DataType::Int64, false),
            field("customer", DataType::Utf8, false),
            field("quantity", DataType::Int32, false),
            field("price", DataType::Float64, false),
            field("paid", DataType::Boolean, false),
            field("token", DataType::Binary, false),
            field("created", utc, false),
            field("note", DataType::Utf8, true),
            field("region", DataType::Utf8, false),
            field("sequence", DataType::Int64, false),
        ];
        let tokens: Vec<[u8; 8]> = ids.iter().map(|i| i.to_be_bytes()).collect();
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(ids.clone())),
            Arc::new(StringArray::from_iter_values(
                ids.iter().map(|i| format!("customer-{:05}", i % 50_000)),
            )),
            Arc::new(Int32Array::from_iter_values(
                ids.iter().map(|i| (i % 1000) as i32),
            )),
            Arc::new(Float64Array::from_iter_values(
                ids.iter().map(|i| (i % 100_000) as f64 / 100.0),
            )),
            Arc::new(BooleanArray::from_iter(
                ids.iter().map(|i| Some(i % 2 == 0)),
            )),
            Arc::new(BinaryArray::from_iter_values(tokens.iter())),
            Arc::new(
                TimestampMicrosecondArray::from_iter_values(
                    ids.iter().map(|i| (1_700_000_000_000 + i * 37) * 1000),
                )
                .with_timezone("UTC"),
            ),
            Arc::new(StringArray::from_iter(
                ids.iter()
                    .map(|i| (i % 3 != 0).then(|| format!("note {}", i % 97))),
            )),
            Arc::new(StringArray::from_iter_values(
                ids.iter().map(|i| regions[(*i % 4) as usize]),
            )),
            Arc::new(Int64Array::from_iter_values(
                ids.iter().map(|i| i * 7919 % (1 << 40)),
            )),
        ];
        Arc::new(StructArray::new(fields.into(), arrays, None))
    };
    let batches: Vec<ArrayRef> = (0..100).map(columns).collect();
    let encoder = AvroEncoder::new(schema).unwrap();
    let cpu = || {
        let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
        s.split_whitespace().next().unwrap().parse::<u64>().unwrap()
    };
    for round in 0..5 {
        let started = cpu();
        let mut bytes = 0;
        for values in &batches {
            bytes += encoder.encode(values, 1).unwrap().unwrap().values().len();
        }
        let ns = (cpu() - started) as f64 / 1_000_000.0;
        println!(
            "round {round}: {ns:.1} ns/record CPU, {} bytes/record",
            bytes / 1_000_000
        );
    }
}
