"""The source's schema: Spark's kafka-source columns plus ``cluster``, as Spark and as Arrow types.

Its own module so that the processes that only declare or check the schema (``load()``, the
planner) need neither ``pyarrow.compute`` nor the batch builders of
:mod:`~pyspark_dynamic_kafka.source.executor.arrow`.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

__all__ = [
    "ARROW_SCHEMA",
    "HEADERS_TYPE",
    "SPARK_SCHEMA",
    "TIMESTAMP_TYPE",
    "arrow_schema",
    "spark_schema",
]

_SPARK_FIELDS = [
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
]
#: Spark's ``headers`` column: ``array<struct<key:string,value:binary>>``, all nullable.
_SPARK_HEADERS = StructField(
    "headers",
    ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())])),
)
_SPARK_CLUSTER = StructField("cluster", StringType())

#: The ``timestamp`` column's Arrow type (Spark's TimestampType).
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")
_ARROW_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", TIMESTAMP_TYPE),
    pa.field("timestampType", pa.int32()),
]
#: Spark's ``headers`` as Arrow: a list of (key string, value binary) structs.
HEADERS_TYPE = pa.list_(
    pa.field("element", pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
)
_ARROW_HEADERS = pa.field("headers", HEADERS_TYPE)
_ARROW_CLUSTER = pa.field("cluster", pa.string())


def spark_schema(include_headers: bool = False) -> StructType:
    """The source's Spark schema, with ``headers`` when ``include_headers``."""
    headers = [_SPARK_HEADERS] if include_headers else []
    return StructType([*_SPARK_FIELDS, *headers, _SPARK_CLUSTER])


def arrow_schema(include_headers: bool = False) -> pa.Schema:
    """The Arrow schema of the batches: equal to ``to_arrow_schema(spark_schema(...))``."""
    headers = [_ARROW_HEADERS] if include_headers else []
    return pa.schema([*_ARROW_FIELDS, *headers, _ARROW_CLUSTER])


SPARK_SCHEMA = spark_schema()
ARROW_SCHEMA = arrow_schema()
