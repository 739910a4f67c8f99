"""Avro keys or values decoded into an Arrow column of the reader schema's Spark type
(:mod:`.spark_types`), with fastavro: the Python reader's decoder.

Each record names the schema it was written with (:mod:`.framing`); that writer schema comes
from the record's cluster's registry (fetched once per id, :mod:`~pyspark_dynamic_kafka.registry.
client`) and is resolved to the reader schema by Avro's rules (fields added with defaults,
fields removed, promotions). A null payload (a tombstone) is a null value. What fastavro gives
is then shaped into what Arrow takes for the Spark type, where it differs: ``time-millis`` as
milliseconds (Spark reads it as an int), a ``uuid`` as its text, and a union of several types as
a struct with the branch that was written set (``member0``, ``member1``, ...); values that need no
shaping are handed to Arrow as fastavro gives them.

A record that cannot be decoded (no schema in a known framing, an id its registry does not
hold, a registry that cannot be reached, truncated or damaged Avro, a writer schema the reader
schema cannot be resolved from) fails the read in ``FAILFAST`` mode, naming where it is and why;
in ``PERMISSIVE`` mode its value is null and its raw bytes are kept for the ``_corrupt_value``
column, and a schema that could not be fetched is asked for again at the next record that names
it (a registry's return is picked up).
"""

from __future__ import annotations

import datetime
import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import fastavro
import pyarrow as pa
from fastavro.read import SchemaResolutionError
from pyspark.sql.pandas.types import to_arrow_type

from pyspark_dynamic_kafka.avro.framing import (
    KEY_HEADER,
    VALUE_HEADER,
    FramingError,
    SchemaRef,
    frame,
)
from pyspark_dynamic_kafka.avro.logical import logical_shaper, raw_defaults, without_logical
from pyspark_dynamic_kafka.avro.resolution import plain_reader, resolve
from pyspark_dynamic_kafka.avro.spark_types import spark_type
from pyspark_dynamic_kafka.errors import DynamicKafkaError, SchemaRegistryError
from pyspark_dynamic_kafka.registry.client import RegisteredSchema, canonical_text

__all__ = [
    "AvroDecodeError",
    "Decoded",
    "Decoder",
    "arrow_headers",
    "decode_failure",
    "schema_name",
]

Shaper = Callable[[Any], Any]
Headers = Sequence[tuple[str, bytes | None]] | None


class AvroDecodeError(DynamicKafkaError):
    """A record that cannot be decoded, in ``FAILFAST`` mode (the message says where and why)."""


@dataclass
class Decoded:
    """A batch decoded: the values, the schema id of each (null for a tombstone, a GUID-named
    schema, or a record that could not be decoded), and the raw bytes of each record that could
    not be decoded (``PERMISSIVE``; null for the others)."""

    values: pa.Array
    schema_ids: pa.Array
    corrupt: pa.Array


@dataclass
class Decoder:
    """Decodes one cluster's keys or values into the reader schema's column.

    Parameters
    ----------
    reader_schema:
        The reader schema (Avro JSON text).
    fetch:
        The writer schema a record names, from its cluster's registry
        (``RegistryClient.schema_by_id`` / ``schema_by_guid``).
    permissive:
        ``PERMISSIVE`` mode (else ``FAILFAST``).
    key:
        Decode keys (their schema header is ``__key_schema_id``).
    """

    reader_schema: str
    fetch: Callable[[SchemaRef], RegisteredSchema]
    permissive: bool = False
    key: bool = False
    _writers: dict[SchemaRef, Any] = field(default_factory=dict, init=False)
    _same: dict[SchemaRef, bool] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        parsed = json.loads(self.reader_schema)
        self._parsed_reader = parsed
        plain = plain_reader(parsed)
        # fastavro reads base values (.logical): Java's reading of defaults and logical types.
        self._reader = fastavro.parse_schema(without_logical(plain))
        raw_defaults(self._reader)
        self.arrow_type = to_arrow_type(spark_type(parsed).data_type, timezone="UTC")
        self._shape = _shaper(plain, {})
        self._reader_name = schema_name(parsed)
        self._writer_names: dict[SchemaRef | None, str] = {}
        self._reader_json = canonical_text(self.reader_schema)
        # Confluent's 5-byte prefix -> (its schema, the writer, the reader or None when the
        # writer is the reader): a record without a schema header skips framing and lookups.
        self._by_prefix: dict[bytes, tuple[SchemaRef, Any, Any]] = {}
        self._header = KEY_HEADER if self.key else VALUE_HEADER

    def decode_arrow(
        self, values: pa.Array, headers: pa.Array | None, where: Callable[[int], str]
    ) -> Decoded:
        """:meth:`decode` of a batch's ``value`` (or ``key``) column and its ``headers`` column
        (``list<struct<key, value>>``, or ``None``)."""
        return self.decode(values.to_pylist(), arrow_headers(headers), where)

    def decode(
        self,
        payloads: Sequence[bytes | None],
        headers: Sequence[Headers] | None = None,
        where: Callable[[int], str] = lambda i: f"record {i}",
    ) -> Decoded:
        """Decode ``payloads`` (with each record's ``headers``); ``where(i)`` names record ``i``
        in a message (cluster, topic, partition, offset)."""
        values: list[Any] = []
        ids: list[int | None] = []
        corrupt: list[bytes | None] = []
        for i, payload in enumerate(payloads):
            value, schema_id, bad = self._one(i, payload, headers[i] if headers else None, where)
            values.append(value)
            ids.append(schema_id)
            corrupt.append(bad)
        return Decoded(
            pa.array(values, type=self.arrow_type),
            pa.array(ids, type=pa.int32()),
            pa.array(corrupt, type=pa.binary()),
        )

    def _one(
        self, i: int, payload: bytes | None, headers: Headers, where: Callable[[int], str]
    ) -> tuple[Any, int | None, bytes | None]:
        """Record ``i``'s value, schema id and (when it cannot be decoded) raw bytes."""
        if payload is None:
            return None, None, None
        ref: SchemaRef | None = None
        try:
            named = headers is not None and any(h == self._header for h, _ in headers)
            known = None if named else self._by_prefix.get(payload[:5])
            if known is None:
                ref, body = frame(payload, headers, self.key)
                writer = self._writer(ref)
                reader = self._reader_of(ref)
                if not named and ref.schema_id is not None:
                    self._by_prefix[bytes(payload[:5])] = (ref, writer, reader)
            else:
                ref, writer, reader = known
                body = memoryview(payload)[5:]
            value = fastavro.schemaless_reader(
                io.BytesIO(body), writer, reader, return_named_type=True
            )
            return self._shape(value), ref.schema_id, None
        except SchemaRegistryError as exc:
            if not self.permissive:
                raise SchemaRegistryError(f"{where(i)}: {exc}") from None
        except SchemaResolutionError as exc:
            if not self.permissive:
                writer = self._writer_names.get(ref, "?")
                reason = (
                    f"the writer schema {writer} ({ref}) cannot be read as the reader schema "
                    f"{self._reader_name}: {exc}"
                )
                raise decode_failure(where(i), ref, reason, self.key) from None
        except (
            FramingError,
            ValueError,
            EOFError,
            IndexError,
            TypeError,
            KeyError,
            OverflowError,  # a timestamp past what datetime holds
        ) as exc:
            if not self.permissive:
                raise decode_failure(where(i), ref, _reason(exc), self.key) from None
        return None, None, payload

    def _writer(self, ref: SchemaRef) -> Any:
        writer = self._writers.get(ref)
        if writer is None:
            registered = self.fetch(ref)
            if registered.schema_type != "AVRO":
                raise ValueError(f"{ref} is a {registered.schema_type} schema, not Avro")
            parsed = json.loads(registered.schema)
            # Named as Java pairs them, so fastavro's resolution is Java's (.resolution).
            resolved = resolve(parsed, self._parsed_reader).writer
            writer = fastavro.parse_schema(without_logical(resolved))
            self._writers[ref] = writer
            self._writer_names[ref] = schema_name(parsed)
            self._same[ref] = canonical_text(registered.schema) == self._reader_json
        return writer

    def _reader_of(self, ref: SchemaRef) -> Any:
        """The reader schema to resolve ``ref``'s writer schema to; ``None`` when they are the
        same schema (fastavro would compare them at every record)."""
        return None if self._same.get(ref) else self._reader


def decode_failure(place: str, ref: SchemaRef | None, reason: str, key: bool) -> AvroDecodeError:
    """The ``FAILFAST`` error of a record at ``place`` (naming ``ref`` when its framing did)."""
    named = f" ({ref})" if ref is not None else ""
    side = "key" if key else "value"
    return AvroDecodeError(
        f"{place}{named} cannot be decoded as Avro: {reason}. Set {side}Mode=PERMISSIVE to read "
        f"such records as null with their bytes in _corrupt_{side}"
    )


def schema_name(schema: Any) -> str:
    """A schema's name for messages (parsed JSON): a named type's full name, else its type."""
    if isinstance(schema, str):
        return schema
    if isinstance(schema, list):
        return "union"
    if isinstance(schema, dict):
        name, space = schema.get("name"), schema.get("namespace")
        if isinstance(name, str):
            return (
                f"{space}.{name}" if isinstance(space, str) and space and "." not in name else name
            )
        return schema_name(schema.get("type", "?"))
    return str(schema)


def arrow_headers(headers: pa.Array | None) -> list[Headers] | None:
    """The ``headers`` column (``list<struct<key: string, value: binary>>``) as :meth:`Decoder.
    decode` takes it."""
    if headers is None:
        return None
    return [
        None if row is None else [(h["key"], h["value"]) for h in row]
        for row in headers.to_pylist()
    ]


def _reason(exc: Exception) -> str:
    if isinstance(exc, EOFError | IndexError):
        return "its bytes end before the schema's values do (truncated or damaged)"
    return str(exc) or type(exc).__name__


def _shaper(schema: Any, named: dict[str, Any]) -> Shaper:
    """What turns fastavro's value of ``schema`` (parsed) into what Arrow takes for its type."""
    if isinstance(schema, str):
        return _shaper(named[schema], named) if schema in named else _same
    if isinstance(schema, list):
        return _union(schema, named)
    kind, logical = schema["type"], schema.get("logicalType")
    if kind in ("record", "error"):
        named[_full_name(schema)] = schema
        fields = [(f["name"], _shaper(f["type"], named)) for f in schema["fields"]]
        if all(shape is _same for _, shape in fields):
            return _same  # fastavro's dict is what Arrow takes: no copy
        return lambda v: {name: shape(v[name]) for name, shape in fields}
    if kind in ("enum", "fixed"):
        named[_full_name(schema)] = schema
    if logical is not None and isinstance(kind, str):
        return logical_shaper(schema) or _same
    if kind in ("enum", "fixed"):
        return _same
    if kind == "array":
        items = _shaper(schema["items"], named)
        return _same if items is _same else lambda v: [items(x) for x in v]
    if kind == "map":  # Arrow takes a dict for a map
        values = _shaper(schema["values"], named)
        return _same if values is _same else lambda v: {k: values(x) for k, x in v.items()}
    return _shaper(kind, named) if isinstance(kind, list | dict) else _same


def _union(branches: list[Any], named: dict[str, Any]) -> Shaper:
    rest = [b for b in branches if b != "null"]
    if len(rest) == 1:  # a named type's value comes tagged with its name: untag it
        only = _shaper(rest[0], named)
        if only is _same and _name(rest[0], named) is None:
            return _same
        return lambda v: None if v is None else only(v[1] if isinstance(v, tuple) else v)
    kinds = {_kind(b, named) for b in rest}
    if kinds in ({"int", "long"}, {"float", "double"}) and len(rest) == 2:
        return lambda v: v
    shapes = [(_kind(b, named), _name(b, named), _shaper(b, named)) for b in rest]

    def member(v: Any) -> Any:
        if v is None:
            return None
        name, value = v if isinstance(v, tuple) else (None, v)
        for i, (kind, branch_name, shape) in enumerate(shapes):
            # fastavro names a named type's value only when the writer's type is a union too
            if (name is not None and name == branch_name) or (name is None and _matches(kind, value)):
                return {f"member{j}": shape(value) if j == i else None for j in range(len(rest))}
        raise TypeError(f"a value of type {type(value).__name__} matches no branch of its union")

    return member


def _kind(schema: Any, named: Mapping[str, Any]) -> str:
    if isinstance(schema, str):
        return str(named[schema]["type"]) if schema in named else schema
    return str(schema["type"]) if isinstance(schema["type"], str) else "union"


def _name(schema: Any, named: Mapping[str, Any]) -> str | None:
    """The full name of a named type (what fastavro tags a union's value with), else None."""
    if isinstance(schema, dict) and schema.get("type") in ("record", "error", "enum", "fixed"):
        return _full_name(schema)
    return schema if isinstance(schema, str) and schema in named else None


_PYTHON = {
    "boolean": (bool,),
    "int": (int, datetime.date, datetime.time),
    "long": (int, datetime.datetime, datetime.time),
    "float": (float,),
    "double": (float,),
    "string": (str,),
    "bytes": (bytes,),
    "array": (list,),
    "map": (dict,),
    "record": (dict,),
    "error": (dict,),
    "enum": (str,),
    "fixed": (bytes,),
}


def _matches(kind: str, value: Any) -> bool:
    types = _PYTHON.get(kind, ())
    return isinstance(value, types) and not (kind != "boolean" and isinstance(value, bool))


def _full_name(schema: dict[str, Any]) -> str:
    """A named type's full name (the reader is given with name and namespace apart)."""
    name, space = str(schema["name"]), schema.get("namespace")
    return f"{space}.{name}" if space and "." not in name else name


def _same(value: Any) -> Any:
    return value
