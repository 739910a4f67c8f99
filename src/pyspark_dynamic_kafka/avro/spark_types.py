"""The Spark type an Avro schema decodes into: the types Spark's own ``from_avro`` gives
(spark-avro's schema conversion, its default options), so a ``valueFormat=avro`` column reads
as a ``format("kafka")`` + ``from_avro`` query's would.

The rules, by Avro type: ``boolean``, ``int``, ``long``, ``float``, ``double``, ``string`` and
``bytes`` map to Spark's boolean, int, bigint, float, double, string and binary; ``enum`` to
string; ``fixed`` to binary; ``record`` to a struct of its fields in order; ``array`` to an array
and ``map`` to a map of string keys, their elements nullable as their schema is; ``null`` to
Spark's null type. Logical types: ``date`` (on int) is a date, ``timestamp-millis`` and
``timestamp-micros`` (on long) a timestamp, ``local-timestamp-millis`` and ``-micros`` a
timestamp without time zone, ``time-micros`` (on long) a ``time(6)``, ``decimal`` (on bytes, or on
a fixed large enough for its precision) a decimal of its precision and scale; any other
(``uuid``, ``time-millis``, ...) reads as its base type, except the nanosecond timestamps,
refused: Spark reads them as ``timestamp_ltz(9)`` / ``timestamp_ntz(9)``, types PySpark cannot
represent. Unions: with ``null`` among the branches the rest decides and the column is
nullable; one branch is that branch; none (``[]``, or ``["null"]``) an empty struct; ``int``
with ``long`` is bigint and ``float`` with ``double`` is double; any other union is a struct of
nullable ``member0``, ``member1``, ... in branch order. Nothing is nullable unless a union with
``null`` makes it so. A record that contains itself is refused (Spark refuses it too, unless
told how deep to go). Named types may be referred to by name, with Avro's namespace rules. The
schema is walked by :mod:`.walker`, which the decoder's and the encoder's shaping share.
Checked against spark-avro itself by ``tests/integration/test_avro_spark_types_oracle.py``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from pyspark_dynamic_kafka.avro.walker import AvroSchemaError, Member, SchemaWalk

try:  # PySpark 4.1+: spark-avro reads a time-micros as a time(6)
    from pyspark.sql.types import TimeType
except ImportError:  # PySpark 4.0: as the long it is
    TimeType = None  # type: ignore[misc, assignment]

__all__ = [
    "TIME_OF_DAY",
    "AvroSchemaError",
    "SparkType",
    "checked_schema",
    "spark_number",
    "spark_type",
]

#: Whether a ``time-micros`` reads as a time of day (PySpark 4.1+), else as its long.
TIME_OF_DAY = TimeType is not None

_PRIMITIVES: Mapping[str, DataType] = {
    "boolean": BooleanType(),
    "int": IntegerType(),
    "long": LongType(),
    "float": FloatType(),
    "double": DoubleType(),
    "string": StringType(),
    "bytes": BinaryType(),
    "null": NullType(),
}
_ON_LONG: Mapping[str, DataType] = {
    "timestamp-millis": TimestampType(),
    "timestamp-micros": TimestampType(),
    "local-timestamp-millis": TimestampNTZType(),
    "local-timestamp-micros": TimestampNTZType(),
    "time-micros": TimeType(6) if TimeType is not None else LongType(),
}
#: Logical types on long whose Spark type (``timestamp_ltz(9)``, ``timestamp_ntz(9)``) PySpark
#: cannot represent, so no Python data source can produce it.
_NANOS = ("timestamp-nanos", "local-timestamp-nanos")
_MAX_DECIMAL_PRECISION = 38  # Spark's DecimalType


@dataclass(frozen=True)
class SparkType:
    """A Spark type and whether values of it may be null."""

    data_type: DataType
    nullable: bool


def spark_type(schema: object) -> SparkType:
    """The Spark type of the Avro ``schema`` (parsed JSON: a name, an object or a list).

    Raises
    ------
    AvroSchemaError
        When the schema is malformed, refers to a name it does not define, or holds a record
        that contains itself; the message names the path in the schema.
    """
    return _SparkTypes().walk(schema)


def checked_schema(text: str) -> str:
    """An Avro schema given as JSON text (an option's value), checked: JSON, a schema fastavro
    parses, with a Spark type; returned stripped.

    Raises
    ------
    ValueError
        Saying which of the three it is not.
    """
    import json

    import fastavro  # only what reads or writes Avro pays for it

    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at character {exc.pos})") from None
    try:
        spark_type(parsed)
        fastavro.parse_schema(parsed)
    except AvroSchemaError as exc:
        raise ValueError(str(exc)) from None
    except (fastavro.schema.SchemaParseException, ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"not an Avro schema ({exc})") from None
    return text.strip()


class _SparkTypes(SchemaWalk[SparkType]):
    """The Spark type of each node of a schema."""

    def primitive(self, name: str, node: Mapping[str, Any] | None, path: str) -> SparkType:
        base = SparkType(_PRIMITIVES[name], name == "null")
        return base if node is None else _logical(node, base, path)

    def wrapped(self, node: Mapping[str, Any], inner: SparkType, path: str) -> SparkType:
        return _logical(node, inner, path)

    def enum(self, node: Mapping[str, Any], path: str) -> SparkType:
        return SparkType(StringType(), False)

    def fixed(self, node: Mapping[str, Any], path: str) -> SparkType:
        return _logical(node, SparkType(BinaryType(), False), path)

    def record(
        self, node: Mapping[str, Any], fields: Sequence[tuple[str, SparkType]], path: str
    ) -> SparkType:
        struct = [StructField(name, t.data_type, t.nullable) for name, t in fields]
        return SparkType(StructType(struct), False)

    def array(self, node: Mapping[str, Any], items: SparkType, path: str) -> SparkType:
        return SparkType(ArrayType(items.data_type, items.nullable), False)

    def map(self, node: Mapping[str, Any], values: SparkType, path: str) -> SparkType:
        return SparkType(MapType(StringType(), values.data_type, values.nullable), False)

    def union(self, members: Sequence[Member[SparkType]], path: str) -> SparkType:
        types = [m.walked for m in members if not _is_null(m.schema)]
        nullable = len(types) < len(members)
        if nullable and not types:  # only null: an empty struct, as an empty union
            return SparkType(StructType([]), True)
        if len(types) == 1:
            return SparkType(types[0].data_type, True) if nullable else types[0]
        pair = {type(t.data_type) for t in types}
        if len(types) == 2 and pair == {IntegerType, LongType}:
            return SparkType(LongType(), nullable)
        if len(types) == 2 and pair == {FloatType, DoubleType}:
            return SparkType(DoubleType(), nullable)
        fields = [StructField(f"member{i}", t.data_type, True) for i, t in enumerate(types)]
        return SparkType(StructType(fields), nullable)


def _is_null(branch: object) -> bool:
    return branch == "null" or (isinstance(branch, Mapping) and branch.get("type") == "null")


def _logical(schema: Mapping[str, Any], base: SparkType, path: str) -> SparkType:
    """``base`` with ``schema``'s logical type applied where Avro accepts it (an invalid one is
    ignored, as Avro's own parser ignores it)."""
    logical = schema.get("logicalType")
    data_type = base.data_type
    if logical == "date" and isinstance(data_type, IntegerType):
        return SparkType(DateType(), base.nullable)
    if logical in _NANOS and isinstance(data_type, LongType):
        raise AvroSchemaError(
            f"Avro schema at {path}: {logical} reads in Spark as a nanosecond timestamp, which "
            "PySpark's data sources cannot produce; give a reader schema (valueSchema) whose "
            "field is a plain long to read the nanoseconds as numbers"
        )
    if isinstance(logical, str) and logical in _ON_LONG and isinstance(data_type, LongType):
        return SparkType(_ON_LONG[logical], base.nullable)
    if logical == "decimal" and isinstance(data_type, BinaryType):
        precision, scale = schema.get("precision"), schema.get("scale", 0)
        if not isinstance(precision, int) or not isinstance(scale, int):
            return base
        size = schema.get("size")
        fits = not isinstance(size, int) or precision <= _fixed_precision(size)
        if precision < 1 or not 0 <= scale <= precision or not fits:
            return base
        if precision > _MAX_DECIMAL_PRECISION:
            raise AvroSchemaError(
                f"Avro schema at {path}: decimal({precision}, {scale}) exceeds Spark's largest "
                "decimal precision, 38"
            )
        return SparkType(DecimalType(precision, scale), base.nullable)
    return base


def _fixed_precision(size: int) -> int:
    """The most decimal digits a two's-complement number of ``size`` bytes holds."""
    if size < 1:
        return 0
    return math.floor(math.log10(2 ** (8 * size - 1) - 1))


def spark_number(schema: Any) -> str | None:
    """A union branch's Spark number type (``int``, ``long``, ``float``, ``double``; a
    ``time-millis`` is Spark's int), else ``None``: a union of int and long reads as a long, of
    float and double as a double."""
    if isinstance(schema, str):
        return schema if schema in ("int", "long", "float", "double") else None
    kind, logical = schema.get("type"), schema.get("logicalType")
    if kind == "int" and logical in (None, "time-millis"):
        return "int"
    return str(kind) if kind in ("long", "float", "double") and logical is None else None
