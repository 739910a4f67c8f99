"""PySpark 4.0 hands a stream writer Spark's rows: they become the Arrow batches PySpark 4.1+
hands it."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    Row,
    StringType,
    StructField,
    StructType,
)

from pyspark_dynamic_kafka.sink.rows import ROWS_PER_BATCH, as_batches
from pyspark_dynamic_kafka.spark_versions import arrow_schema

SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", StringType()),
        StructField(
            "headers",
            ArrayType(
                StructType([StructField("key", StringType()), StructField("value", BinaryType())])
            ),
        ),
    ]
)


def test_rows_become_the_batches_arrow_writers_get() -> None:
    rows = [
        Row(key=bytearray(f"k{i}".encode()), value=f"v{i}", headers=[Row(key="h", value=b"1")])
        for i in range(ROWS_PER_BATCH + 3)
    ]
    batches = list(as_batches(iter(rows), SCHEMA))
    assert [b.num_rows for b in batches] == [ROWS_PER_BATCH, 3]
    assert all(b.schema == arrow_schema(SCHEMA) for b in batches)
    table = pa.Table.from_batches(batches)
    assert table.column("key").to_pylist()[:2] == [b"k0", b"k1"]
    assert table.column("value").to_pylist()[-1] == f"v{ROWS_PER_BATCH + 2}"
    assert table.column("headers").to_pylist()[0] == [{"key": "h", "value": b"1"}]


def test_arrow_batches_pass_through_and_nothing_gives_nothing() -> None:
    batch = pa.RecordBatch.from_pylist([{"key": b"k", "value": "v", "headers": None}])
    assert list(as_batches(iter([batch, batch]), SCHEMA)) == [batch, batch]
    assert list(as_batches(iter([]), SCHEMA)) == []
