//! Arrow output: Spark's kafka-source columns plus `cluster`, exactly the Python reader's schema
//! (`pyspark_dynamic_kafka.source.schema.arrow_schema`): key, value, topic, partition, offset,
//! timestamp (µs, UTC), timestampType, then `headers` when asked for, then `cluster`; every
//! field nullable.

use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, Int32Builder, Int64Builder, ListBuilder, StringBuilder, StructBuilder,
    TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{ArrowError, DataType, Field, Fields, Schema, SchemaRef, TimeUnit};

use crate::protocol::records::Headers;

/// librdkafka's "no timestamp" type: the timestamp is null, Spark's type id is -1.
const NO_TIMESTAMP: i32 = 0;

/// The largest and smallest record timestamps (ms) Spark's timestamp type holds: Spark's kafka
/// source turns ms into µs with an exact multiplication and fails the task on the others.
const LATEST_MS: i64 = i64::MAX / 1000;
const EARLIEST_MS: i64 = i64::MIN / 1000;

/// Why a record cannot be added: its timestamp is past Spark's range (a producer that wrote
/// nanoseconds or microseconds as CreateTime). The message names the record and the value.
fn past_range(topic: &str, partition: i32, offset: i64, ms: i64) -> String {
    format!(
        "the record of {topic}/{partition} at offset {offset} has a timestamp of {ms} ms, past \
         Spark's timestamp range ({EARLIEST_MS} to {LATEST_MS} ms): was it written in \
         nanoseconds or microseconds? Spark's own kafka source fails on it too. Fix the \
         producer; to read on, start from a later offset"
    )
}

fn header_fields() -> Fields {
    Fields::from(vec![
        Field::new("key", DataType::Utf8, true),
        Field::new("value", DataType::Binary, true),
    ])
}

fn header_item() -> Field {
    Field::new("element", DataType::Struct(header_fields()), true)
}

/// The schema of the batches, with `headers` when `include_headers`.
pub fn schema(include_headers: bool) -> Schema {
    let mut fields = vec![
        Field::new("key", DataType::Binary, true),
        Field::new("value", DataType::Binary, true),
        Field::new("topic", DataType::Utf8, true),
        Field::new("partition", DataType::Int32, true),
        Field::new("offset", DataType::Int64, true),
        Field::new(
            "timestamp",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
        Field::new("timestampType", DataType::Int32, true),
    ];
    if include_headers {
        fields.push(Field::new(
            "headers",
            DataType::List(Arc::new(header_item())),
            true,
        ));
    }
    fields.push(Field::new("cluster", DataType::Utf8, true));
    Schema::new(fields)
}

/// One record as the reader hands it over: borrowed from the consumed message.
pub struct Record<'a> {
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    pub topic: &'a str,
    pub partition: i32,
    pub offset: i64,
    /// librdkafka's timestamp type (0 none, 1 create time, 2 log append time) and ms.
    pub timestamp: (i32, i64),
    pub headers: Option<Headers<'a>>,
}

/// Accumulates records of one cluster; a batch is due when a row or byte bound is reached
/// (bytes count value bytes, as the Python reader's builder does).
pub struct BatchBuilder {
    cluster: String,
    include_headers: bool,
    max_rows: usize,
    max_bytes: usize,
    schema: SchemaRef,
    keys: BinaryBuilder,
    values: BinaryBuilder,
    topics: StringBuilder,
    partitions: Int32Builder,
    offsets: Int64Builder,
    timestamps: TimestampMicrosecondBuilder,
    types: Int32Builder,
    headers: ListBuilder<StructBuilder>,
    rows: usize,
    bytes: usize,
}

/// How much the last batch's columns held: the next batch reserves as much up front, so that
/// its buffers do not regrow while it fills (an Arrow buffer is 64-byte aligned, so each
/// regrowth is a fresh allocation and a copy of everything so far).
#[derive(Debug, Clone, Copy, Default)]
struct Sizes {
    rows: usize,
    key_bytes: usize,
    value_bytes: usize,
    topic_bytes: usize,
}

fn headers_builder() -> ListBuilder<StructBuilder> {
    ListBuilder::new(StructBuilder::from_fields(header_fields(), 0)).with_field(header_item())
}

impl BatchBuilder {
    pub fn new(cluster: &str, include_headers: bool, max_rows: usize, max_bytes: usize) -> Self {
        BatchBuilder {
            cluster: cluster.to_string(),
            include_headers,
            max_rows,
            max_bytes,
            schema: Arc::new(schema(include_headers)),
            keys: BinaryBuilder::new(),
            values: BinaryBuilder::new(),
            topics: StringBuilder::new(),
            partitions: Int32Builder::new(),
            offsets: Int64Builder::new(),
            timestamps: TimestampMicrosecondBuilder::new().with_timezone("UTC"),
            types: Int32Builder::new(),
            headers: headers_builder(),
            rows: 0,
            bytes: 0,
        }
    }

    /// Fresh column builders with room for a batch of these sizes.
    fn reserve(&mut self, sizes: Sizes) {
        let rows = sizes.rows;
        self.keys = BinaryBuilder::with_capacity(rows, sizes.key_bytes);
        self.values = BinaryBuilder::with_capacity(rows, sizes.value_bytes);
        self.topics = StringBuilder::with_capacity(rows, sizes.topic_bytes);
        self.partitions = Int32Builder::with_capacity(rows);
        self.offsets = Int64Builder::with_capacity(rows);
        self.timestamps = TimestampMicrosecondBuilder::with_capacity(rows).with_timezone("UTC");
        self.types = Int32Builder::with_capacity(rows);
    }

    /// Add a record; a timestamp past Spark's range ([`past_range`]) adds nothing.
    pub fn add(&mut self, record: &Record<'_>) -> Result<(), String> {
        let (kind, ms) = record.timestamp;
        let micros = match ms.checked_mul(1000) {
            Some(micros) => micros,
            None if kind == NO_TIMESTAMP => 0,
            None => {
                let (topic, partition) = (record.topic, record.partition);
                return Err(past_range(topic, partition, record.offset, ms));
            }
        };
        self.keys.append_option(record.key);
        self.values.append_option(record.value);
        self.topics.append_value(record.topic);
        self.partitions.append_value(record.partition);
        self.offsets.append_value(record.offset);
        if kind == NO_TIMESTAMP {
            self.timestamps.append_null();
        } else {
            self.timestamps.append_value(micros);
        }
        self.types.append_value(kind - 1);
        if self.include_headers {
            match &record.headers {
                Some(headers) => {
                    let items = self.headers.values();
                    for (name, value) in headers {
                        items
                            .field_builder::<StringBuilder>(0)
                            .expect("headers.key is a string")
                            .append_value(name);
                        items
                            .field_builder::<BinaryBuilder>(1)
                            .expect("headers.value is binary")
                            .append_option(*value);
                        items.append(true);
                    }
                    self.headers.append(true);
                }
                None => self.headers.append(false),
            }
        }
        self.rows += 1;
        self.bytes += record.value.map_or(0, <[u8]>::len);
        Ok(())
    }

    pub fn due(&self) -> bool {
        self.rows >= self.max_rows || self.bytes >= self.max_bytes
    }

    /// Rows added since the last flush.
    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// One record batch of what was added; the builder starts over, with room for as much.
    pub fn flush(&mut self) -> Result<RecordBatch, ArrowError> {
        let sizes = Sizes {
            rows: self.rows,
            key_bytes: self.keys.values_slice().len(),
            value_bytes: self.values.values_slice().len(),
            topic_bytes: self.topics.values_slice().len(),
        };
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(self.keys.finish()),
            Arc::new(self.values.finish()),
            Arc::new(self.topics.finish()),
            Arc::new(self.partitions.finish()),
            Arc::new(self.offsets.finish()),
            Arc::new(self.timestamps.finish()),
            Arc::new(self.types.finish()),
        ];
        if self.include_headers {
            columns.push(Arc::new(self.headers.finish()));
        }
        // One value for every row: filled in one go rather than appended per record.
        columns.push(Arc::new(StringArray::new_repeated(
            &self.cluster,
            sizes.rows,
        )));
        self.rows = 0;
        self.bytes = 0;
        self.reserve(sizes);
        RecordBatch::try_new(self.schema.clone(), columns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, Int64Type, TimestampMicrosecondType};
    use arrow_array::Array;

    fn record<'a>(offset: i64, key: Option<&'a [u8]>, value: Option<&'a [u8]>) -> Record<'a> {
        Record {
            key,
            value,
            topic: "orders",
            partition: 3,
            offset,
            timestamp: (1, 1_700_000_000_123),
            headers: None,
        }
    }

    #[test]
    fn columns_in_order_with_nulls_and_timestamp_types() {
        let mut b = BatchBuilder::new("east", false, 10, 1 << 20);
        b.add(&record(5, None, Some(b"v1"))).unwrap();
        let mut r = record(7, Some(b"k"), None);
        r.timestamp = (0, -1);
        b.add(&r).unwrap();
        let batch = b.flush().unwrap();
        let names: Vec<_> = batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(
            names,
            [
                "key",
                "value",
                "topic",
                "partition",
                "offset",
                "timestamp",
                "timestampType",
                "cluster"
            ]
        );
        assert!(batch.schema().fields().iter().all(|f| f.is_nullable()));
        let keys = batch.column(0).as_binary::<i32>();
        assert!(keys.is_null(0));
        assert_eq!(keys.value(1), b"k");
        assert!(batch.column(1).is_null(1));
        assert_eq!(
            batch.column(3).as_primitive::<Int32Type>().values(),
            &[3, 3]
        );
        assert_eq!(
            batch.column(4).as_primitive::<Int64Type>().values(),
            &[5, 7]
        );
        let stamps = batch.column(5).as_primitive::<TimestampMicrosecondType>();
        assert_eq!(stamps.value(0), 1_700_000_000_123_000);
        assert!(stamps.is_null(1));
        assert_eq!(
            batch.column(6).as_primitive::<Int32Type>().values(),
            &[0, -1]
        );
        assert_eq!(batch.column(7).as_string::<i32>().value(1), "east");
        assert!(b.is_empty());
    }

    #[test]
    fn timestamps_in_spark_range_become_micros_and_the_others_fail() {
        let mut b = BatchBuilder::new("east", false, 10, 1 << 20);
        let mut stamped = |offset: i64, kind: i32, ms: i64| {
            let mut r = record(offset, None, Some(b"v"));
            r.timestamp = (kind, ms);
            b.add(&r)
        };
        // The edges of Spark's range (±9223372036854775 ms, µs in an i64), as CreateTime and
        // LogAppendTime; -1 ms is a timestamp like any other (Spark's 1969-12-31 23:59:59.999).
        stamped(0, 1, 9_223_372_036_854_775).unwrap();
        stamped(1, 2, -9_223_372_036_854_775).unwrap();
        stamped(2, 1, -1).unwrap();
        // No timestamp: null, whatever the value beside it.
        stamped(3, 0, i64::MIN).unwrap();
        assert_eq!(
            stamped(4, 1, 9_223_372_036_854_776).unwrap_err(),
            "the record of orders/3 at offset 4 has a timestamp of 9223372036854776 ms, past \
             Spark's timestamp range (-9223372036854775 to 9223372036854775 ms): was it written \
             in nanoseconds or microseconds? Spark's own kafka source fails on it too. Fix the \
             producer; to read on, start from a later offset"
        );
        assert!(stamped(5, 2, -9_223_372_036_854_776)
            .unwrap_err()
            .contains("at offset 5 has a timestamp of -9223372036854776 ms, past"));
        let nanos = 1_764_316_800_000_000_000;
        assert!(stamped(6, 1, nanos)
            .unwrap_err()
            .contains(&format!("timestamp of {nanos} ms")));
        // A refused record adds nothing: the batch holds the four before it, whole.
        let batch = b.flush().unwrap();
        assert_eq!(batch.num_rows(), 4);
        assert_eq!(
            batch.column(4).as_primitive::<Int64Type>().values(),
            &[0, 1, 2, 3]
        );
        let stamps = batch.column(5).as_primitive::<TimestampMicrosecondType>();
        assert_eq!(stamps.value(0), 9_223_372_036_854_775_000);
        assert_eq!(stamps.value(1), -9_223_372_036_854_775_000);
        assert_eq!(stamps.value(2), -1_000);
        assert!(stamps.is_null(3));
        assert_eq!(
            batch.column(6).as_primitive::<Int32Type>().values(),
            &[0, 1, 0, -1]
        );
    }

    #[test]
    fn headers_null_when_absent_and_values_nullable() {
        let mut b = BatchBuilder::new("c", true, 10, 1 << 20);
        let mut with = record(0, None, Some(b""));
        with.headers = Some(vec![
            ("a".into(), Some(b"1".as_slice())),
            ("b".into(), None),
        ]);
        b.add(&with).unwrap();
        b.add(&record(1, None, Some(b"x"))).unwrap();
        let batch = b.flush().unwrap();
        assert_eq!(batch.schema().field(7).name(), "headers");
        let headers = batch.column(7).as_list::<i32>();
        assert!(headers.is_null(1));
        let first = headers.value(0);
        let items = first.as_struct();
        assert_eq!(items.column(0).as_string::<i32>().value(1), "b");
        assert!(items.column(1).is_null(1));
        assert_eq!(batch.column(1).as_binary::<i32>().value(0), b"");
        assert!(!batch.column(1).is_null(0));
    }

    #[test]
    fn due_by_rows_or_value_bytes() {
        let mut b = BatchBuilder::new("c", false, 3, 4);
        b.add(&record(0, None, Some(b"ab"))).unwrap();
        assert!(!b.due());
        b.add(&record(1, None, Some(b"cd"))).unwrap();
        assert!(b.due());
        b.flush().unwrap();
        assert!(!b.due());
        assert!(b.is_empty());
    }
}
