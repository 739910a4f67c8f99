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
told how deep to go). Named types may be referred to by name, with Avro's namespace rules.
Checked against spark-avro itself by ``tests/integration/test_avro_spark_types_oracle.py``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
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

from pyspark_dynamic_kafka.errors import DynamicKafkaError

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
_NAMED = ("record", "error", "enum", "fixed")
_MAX_DECIMAL_PRECISION = 38  # Spark's DecimalType


class AvroSchemaError(DynamicKafkaError):
    """An Avro schema that is malformed or has no Spark type, naming where in it."""


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
    return _Converter().convert(schema, "", (), "$")


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


class _Converter:
    def __init__(self) -> None:
        self.named: dict[str, Any] = {}

    def convert(
        self, schema: object, namespace: str, enclosing: tuple[str, ...], path: str
    ) -> SparkType:
        if isinstance(schema, str):
            return self._name(schema, namespace, enclosing, path)
        if isinstance(schema, list):
            return self._union(schema, namespace, enclosing, path)
        if not isinstance(schema, Mapping) or "type" not in schema:
            raise AvroSchemaError(
                f"Avro schema at {path}: expected a type name, a union (a list) or an object "
                f"with 'type', got {schema!r:.80}"
            )
        kind = schema["type"]
        if not isinstance(kind, str) or kind in _PRIMITIVES:
            plain = self.convert(kind, namespace, enclosing, f"{path}.type")
            return _logical(schema, plain, path)
        if kind in _NAMED:
            fullname = self._define(schema, namespace, path)
            return self._named_type(schema, fullname, enclosing, path)
        if kind == "array":
            items = self.convert(schema.get("items"), namespace, enclosing, f"{path}.items")
            return SparkType(ArrayType(items.data_type, items.nullable), False)
        if kind == "map":
            values = self.convert(schema.get("values"), namespace, enclosing, f"{path}.values")
            return SparkType(MapType(StringType(), values.data_type, values.nullable), False)
        return self._name(kind, namespace, enclosing, f"{path}.type")

    def _name(self, name: str, namespace: str, enclosing: tuple[str, ...], path: str) -> SparkType:
        if name in _PRIMITIVES:
            return SparkType(_PRIMITIVES[name], name == "null")
        fullname = name if "." in name or not namespace else f"{namespace}.{name}"
        for candidate in (fullname, name):
            if candidate in self.named:
                return self._named_type(self.named[candidate], candidate, enclosing, path)
        raise AvroSchemaError(f"Avro schema at {path}: unknown type {name!r}")

    def _named_type(
        self, schema: Mapping[str, Any], fullname: str, enclosing: tuple[str, ...], path: str
    ) -> SparkType:
        """A named type, where it is defined or used again by its name (a record inside itself
        is refused by :meth:`_record`)."""
        if schema["type"] == "enum":
            return SparkType(StringType(), False)
        if schema["type"] == "fixed":
            return _logical(schema, SparkType(BinaryType(), False), path)
        return self._record(schema, fullname, enclosing, path)

    def _define(self, schema: Mapping[str, Any], namespace: str, path: str) -> str:
        name = schema.get("name")
        if not isinstance(name, str) or not name:
            raise AvroSchemaError(f"Avro schema at {path}: a {schema['type']} needs a 'name'")
        fullname = _fullname(schema, namespace)
        self.named.setdefault(fullname, schema)
        return fullname

    def _record(
        self,
        schema: Mapping[str, Any],
        fullname: str,
        enclosing: tuple[str, ...],
        path: str,
    ) -> SparkType:
        if fullname in enclosing:
            raise AvroSchemaError(
                f"Avro schema at {path}: record {fullname!r} contains itself; Spark has no "
                "type for a recursive record"
            )
        fields = schema.get("fields")
        if not isinstance(fields, list):
            raise AvroSchemaError(f"Avro schema at {path}: record {fullname!r} needs 'fields'")
        space = fullname.rpartition(".")[0]
        inner = (*enclosing, fullname)
        struct = []
        for i, entry in enumerate(fields):
            where = f"{path}.fields[{i}]"
            if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
                raise AvroSchemaError(f"Avro schema at {where}: a field needs a 'name'")
            converted = self.convert(entry.get("type"), space, inner, f"{where}.type")
            struct.append(StructField(entry["name"], converted.data_type, converted.nullable))
        return SparkType(StructType(struct), False)

    def _union(
        self, branches: list[Any], namespace: str, enclosing: tuple[str, ...], path: str
    ) -> SparkType:
        rest = [(i, b) for i, b in enumerate(branches) if not _is_null(b)]
        if len(rest) < len(branches):
            if not rest:  # only null: an empty struct, as an empty union
                return SparkType(StructType([]), True)
            if len(rest) == 1:
                only = self.convert(rest[0][1], namespace, enclosing, f"{path}[{rest[0][0]}]")
                return SparkType(only.data_type, True)
            chosen = self._union([b for _, b in rest], namespace, enclosing, path)
            return SparkType(chosen.data_type, True)
        types = [self.convert(b, namespace, enclosing, f"{path}[{i}]") for i, b in rest]
        if len(types) == 1:
            return types[0]
        pair = {type(t.data_type) for t in types}
        if len(types) == 2 and pair == {IntegerType, LongType}:
            return SparkType(LongType(), False)
        if len(types) == 2 and pair == {FloatType, DoubleType}:
            return SparkType(DoubleType(), False)
        members = [StructField(f"member{i}", t.data_type, True) for i, t in enumerate(types)]
        return SparkType(StructType(members), False)


def _is_null(branch: object) -> bool:
    return branch == "null" or (isinstance(branch, Mapping) and branch.get("type") == "null")


def _fullname(schema: Mapping[str, Any], namespace: str) -> str:
    name = str(schema["name"])
    if "." in name:
        return name
    space = schema.get("namespace", namespace)
    return f"{space}.{name}" if space else name


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
