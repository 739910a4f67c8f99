"""The source's schema: Spark's kafka-source columns plus ``cluster``, as Spark and as Arrow types;
with Avro keys or values (:class:`AvroColumns`) the decoded struct in place of the bytes, then
``keySchemaId``/``valueSchemaId`` and, in ``PERMISSIVE`` mode, ``_corrupt_key``/``_corrupt_value``.

Its own module so that the processes that only declare or check the schema (``load()``, the
planner) need neither ``pyarrow.compute`` nor the batch builders of
:mod:`~pyspark_dynamic_kafka.engines.read_python_batches`.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pyspark_dynamic_kafka.engines.batches import HEADERS_TYPE, TIMESTAMP_TYPE, batch_schema

__all__ = [
    "ARROW_SCHEMA",
    "HEADERS_TYPE",
    "SPARK_SCHEMA",
    "TIMESTAMP_TYPE",
    "AvroColumn",
    "AvroColumns",
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


@dataclass(frozen=True)
class AvroColumn:
    """A key or value column decoded as Avro: the reader schema (Avro JSON), the mode, and the
    reader schema's registry name when a subject named it (``subject 's' version 3``), for
    errors."""

    reader_schema: str
    permissive: bool = False
    reader_name: str | None = None

    def spark_type(self) -> DataType:
        """The column's Spark type: the reader schema's, as ``from_avro`` gives it."""
        from pyspark_dynamic_kafka.avro.spark_types import spark_type

        return spark_type(json.loads(self.reader_schema)).data_type


@dataclass(frozen=True)
class AvroColumns:
    """The Avro columns of a query (at least one of ``key`` and ``value``).

    Attributes
    ----------
    key, value:
        How each is decoded, or ``None`` for bytes.
    include_headers:
        Whether the rows keep the ``headers`` column (``includeHeaders``): the readers read
        headers anyway, since a record's schema may be named in one.
    """

    key: AvroColumn | None = None
    value: AvroColumn | None = None
    include_headers: bool = False

    def decoded(self) -> list[tuple[str, AvroColumn]]:
        """(column name, how it is decoded) of each Avro column, key first."""
        pairs = (("key", self.key), ("value", self.value))
        return [(name, column) for name, column in pairs if column is not None]


def _avro_fields(avro: AvroColumns | None) -> tuple[dict[str, DataType], list[StructField]]:
    """The decoded columns' types by name, and the columns that follow ``cluster``."""
    if avro is None:
        return {}, []
    decoded = avro.decoded()
    types = {name: column.spark_type() for name, column in decoded}
    extra = [StructField(f"{name}SchemaId", IntegerType()) for name, _ in decoded]
    extra += [StructField(f"_corrupt_{name}", BinaryType()) for name, c in decoded if c.permissive]
    return types, extra


def spark_schema(include_headers: bool = False, avro: AvroColumns | None = None) -> StructType:
    """The source's Spark schema, with ``headers`` when ``include_headers``, and the decoded
    columns of ``avro``."""
    headers = [_SPARK_HEADERS] if include_headers else []
    types, extra = _avro_fields(avro)
    base = [StructField(f.name, types.get(f.name, f.dataType)) for f in _SPARK_FIELDS]
    return StructType([*base, *headers, _SPARK_CLUSTER, *extra])


def arrow_schema(include_headers: bool = False, avro: AvroColumns | None = None) -> pa.Schema:
    """The Arrow schema of the batches: equal to ``to_arrow_schema(spark_schema(...))``."""
    if avro is not None:
        return _avro_arrow_schema(include_headers, avro)
    return batch_schema(include_headers)


@functools.lru_cache(maxsize=64)
def _avro_arrow_schema(include_headers: bool, avro: AvroColumns) -> pa.Schema:
    """Made once per worker and query columns: executors ask for it at every batch."""
    from pyspark_dynamic_kafka.spark_versions import arrow_schema

    return arrow_schema(spark_schema(include_headers, avro))


SPARK_SCHEMA = spark_schema()
ARROW_SCHEMA = arrow_schema()
