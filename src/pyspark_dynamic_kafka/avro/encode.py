"""Spark values -> Avro in Confluent's wire format, with fastavro: the sink's encoder.

The values are those of a column of the schema's Spark type (:mod:`.spark_types`), as Arrow
hands them to Python, and are shaped back into what fastavro writes: a map's key-value pairs
into a dict, a ``timestamp-*`` or ``local-timestamp-*`` datetime into its count of milliseconds
or microseconds (an aware datetime by its instant, a naive one read as UTC), a ``time-micros``
time into microseconds, and a union of several types (a struct ``member0``, ``member1``, ...
with the written branch set) into that branch, named for fastavro. What needs no shaping
(numbers, strings, bytes, enums as their symbol, fixed, dates, decimals, ``time-millis`` as
milliseconds, a ``uuid`` as its text) goes as it is. A null value is no payload (a tombstone).
The schema (as :func:`fastavro.parse_schema` gives it) is walked by :mod:`.walker`.

Each payload is the magic byte ``0``, the schema's 4-byte big-endian id in the registry of the
record's cluster (:func:`~.framing.id_prefix`), then the Avro body: what Confluent's
serializers write, and what :class:`~.decode.Decoder` and Spark's ``from_avro`` (after the
prefix) read.
"""

from __future__ import annotations

import datetime
import io
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import fastavro
from fastavro.validation import ValidationError, validate

from pyspark_dynamic_kafka.avro.framing import id_prefix
from pyspark_dynamic_kafka.avro.names import NAMED
from pyspark_dynamic_kafka.avro.walker import Member, SchemaWalk
from pyspark_dynamic_kafka.errors import DynamicKafkaError

__all__ = ["AvroEncodeError", "Encoder"]

Shaper = Callable[[Any], Any]
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_TIMESTAMPS = {
    "timestamp-millis": (1000, False),
    "timestamp-micros": (1, False),
    "local-timestamp-millis": (1000, True),
    "local-timestamp-micros": (1, True),
}


class AvroEncodeError(DynamicKafkaError):
    """A value that does not fit its Avro schema (the message says which and why)."""

    retryable = False


class Encoder:
    """Encodes values of one Avro schema's Spark type.

    Parameters
    ----------
    schema:
        The writer schema (Avro JSON text), as registered in the registry.
    """

    def __init__(self, schema: str) -> None:
        self.schema = schema
        self._parsed = fastavro.parse_schema(json.loads(schema))
        self._shape = _Shaping().walk(self._parsed)
        self._buffer = io.BytesIO()

    def body(self, value: Any) -> bytes:
        """The Avro body of one value (not null).

        Raises
        ------
        AvroEncodeError
            When the value does not fit the schema, naming the field and why.
        """
        buffer = self._buffer
        buffer.seek(0)
        buffer.truncate()
        try:
            datum = self._shape(value)
            fastavro.schemaless_writer(buffer, self._parsed, datum)
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as exc:
            raise AvroEncodeError(self._why(value, exc)) from None
        return buffer.getvalue()

    def encode(
        self,
        values: Sequence[Any],
        schema_id: int,
        where: Callable[[int], str] = lambda i: f"row {i}",
    ) -> list[bytes | None]:
        """The payloads of ``values`` (Confluent's framing with ``schema_id``); a null value is
        a null payload. ``where(i)`` names row ``i`` in a message.

        Raises
        ------
        AvroEncodeError
            When a value does not fit the schema, naming the row, the field and why.
        """
        prefix = id_prefix(schema_id)
        payloads: list[bytes | None] = []
        for i, value in enumerate(values):
            if value is None:
                payloads.append(None)
                continue
            try:
                payloads.append(prefix + self.body(value))
            except AvroEncodeError as exc:
                raise AvroEncodeError(f"{where(i)}: {exc}") from None
        return payloads

    def _why(self, value: Any, exc: Exception) -> str:
        """What fastavro's validation says of the shaped value (it names the field), else the
        error itself."""
        try:
            validate(self._shape(value), self._parsed, raise_errors=True)
        except ValidationError as invalid:
            fields = "; ".join(str(e) for e in invalid.errors)
            return f"the value does not fit its Avro schema: {fields}"
        except Exception:  # the shaping itself failed: say the first error
            pass
        return f"the value does not fit its Avro schema: {exc or type(exc).__name__}"


class _Shaping(SchemaWalk[Shaper]):
    """What turns a Spark value of each node into what fastavro writes for it."""

    def primitive(self, name: str, node: Mapping[str, Any] | None, path: str) -> Shaper:
        logical = node.get("logicalType") if node is not None else None
        if name == "long" and logical in _TIMESTAMPS:
            unit, local = _TIMESTAMPS[logical]
            return lambda v: _since_epoch(v, unit, local)
        if name == "long" and logical == "time-micros":
            return _micros_of_day
        return _same

    def record(
        self, node: Mapping[str, Any], fields: Sequence[tuple[str, Shaper]], path: str
    ) -> Shaper:
        if all(shape is _same for _, shape in fields):
            return _same
        return lambda v: {name: shape(v[name]) for name, shape in fields}

    def enum(self, node: Mapping[str, Any], path: str) -> Shaper:
        return _same

    def fixed(self, node: Mapping[str, Any], path: str) -> Shaper:
        return _same

    def array(self, node: Mapping[str, Any], items: Shaper, path: str) -> Shaper:
        return _same if items is _same else lambda v: [items(x) for x in v]

    def map(self, node: Mapping[str, Any], values: Shaper, path: str) -> Shaper:
        # Arrow gives a map as its (key, value) pairs
        return lambda v: v if isinstance(v, dict) else {k: values(x) for k, x in v}

    def union(self, members: Sequence[Member[Shaper]], path: str) -> Shaper:
        nullable = any(_branch_name(m.schema) == "null" for m in members)
        rest = [m for m in members if _branch_name(m.schema) != "null"]
        if not rest:
            return lambda v: None
        if len(rest) == 1:  # a nullable type: the column holds its value
            only, name = rest[0].walked, _branch_name(rest[0].schema)
            return lambda v: None if v is None else (name, only(v))
        kinds = {m.kind for m in rest}
        if len(rest) == 2 and kinds in ({"int", "long"}, {"float", "double"}):
            return _same  # Spark's bigint or double: fastavro picks the branch the value fits
        branches = [(f"member{i}", _branch_name(m.schema), m.walked) for i, m in enumerate(rest)]

        def branch(v: Any) -> Any:
            if v is None:
                return None
            for member, name, shape in branches:
                value = v[member]
                if value is not None:
                    return name, shape(value)
            if nullable:
                return None
            raise ValueError(
                "a union's struct has no member set (member0, member1, ...), and the union has "
                "no null branch"
            )

        return branch


def _branch_name(schema: Any) -> str:
    """The name fastavro's tuple notation picks a union's branch by (``schema`` as fastavro
    parsed it, every name a full name): a named type's full name, else its type."""
    if isinstance(schema, str):
        return schema
    if isinstance(schema, dict):
        kind = schema["type"]
        if kind in NAMED:
            return str(schema["name"])
        return kind if isinstance(kind, str) else _branch_name(kind)
    return "union"


def _same(value: Any) -> Any:
    return value


def _since_epoch(value: Any, unit: int, local: bool) -> Any:
    """A datetime as its count of ``unit`` microseconds since the epoch (a naive one, or any
    one for a ``local-`` type, read as UTC wall time)."""
    if not isinstance(value, datetime.datetime):
        return value
    if local or value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    delta = value - _EPOCH
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return micros // unit


def _micros_of_day(value: Any) -> Any:
    if not isinstance(value, datetime.time):
        return value
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
