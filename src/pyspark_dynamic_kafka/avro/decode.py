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

import io
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import fastavro
import pyarrow as pa
from fastavro.read import SchemaResolutionError
from fastavro.schema import SchemaParseException

from pyspark_dynamic_kafka.avro.framing import (
    KEY_HEADER,
    VALUE_HEADER,
    FramingError,
    SchemaRef,
    frame,
)
from pyspark_dynamic_kafka.avro.logical import raw_defaults, without_logical
from pyspark_dynamic_kafka.avro.references import by_reference
from pyspark_dynamic_kafka.avro.resolution import plain_reader, resolve
from pyspark_dynamic_kafka.avro.shaping import Shaper, shaper, tags_named
from pyspark_dynamic_kafka.avro.spark_types import spark_type
from pyspark_dynamic_kafka.avro.text import JAVA_UTF8
from pyspark_dynamic_kafka.errors import DynamicKafkaError, SchemaRegistryError
from pyspark_dynamic_kafka.registry.client import RegisteredSchema, canonical_text
from pyspark_dynamic_kafka.spark_versions import arrow_type

__all__ = [
    "AvroDecodeError",
    "Decoded",
    "Decoder",
    "arrow_headers",
    "decode_failure",
    "schema_name",
]

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
    reader_name:
        The reader schema's name in its registry (``subject 's' version 3``), for errors.
    """

    reader_schema: str
    fetch: Callable[[SchemaRef], RegisteredSchema]
    permissive: bool = False
    key: bool = False
    reader_name: str | None = None
    _writers: dict[SchemaRef, Any] = field(default_factory=dict, init=False)
    _same: dict[SchemaRef, bool] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        parsed = json.loads(self.reader_schema)
        self._parsed_reader = parsed
        plain = plain_reader(parsed)
        # fastavro reads base values (.logical): Java's reading of defaults and logical types.
        reader = fastavro.parse_schema(without_logical(plain))
        raw_defaults(reader)
        self._reader = by_reference(reader)  # fastavro resolves named types alike everywhere
        self.arrow_type = arrow_type(spark_type(parsed).data_type)
        self._shape = shaper(plain)
        self._shape_untagged = shaper(plain, untag=True)
        self._untag: set[SchemaRef] = set()  # writer schemas with named types in unions
        self._unlike: dict[SchemaRef, str] = {}  # writer schemas fastavro reads unlike Java
        self._shapes: dict[SchemaRef, Shaper] = {}  # writer schemas with unions Java marks
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
        try:
            column = pa.array(values, type=self.arrow_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            # A value shaped into what Arrow does not take for the type: a defect of ours, which
            # fails its record (found record by record), never the batch's other records.
            for i, value in enumerate(values):
                try:
                    pa.array([value], type=self.arrow_type)
                except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
                    if not self.permissive:
                        reason = f"its value does not fit the reader schema's type: {exc}"
                        raise decode_failure(where(i), None, reason, self.key) from None
                    values[i], ids[i], corrupt[i] = None, None, payloads[i]
            column = pa.array(values, type=self.arrow_type)
        return Decoded(column, pa.array(ids, type=pa.int32()), pa.array(corrupt, type=pa.binary()))

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
            if ref in self._unlike:
                raise SchemaResolutionError(self._unlike[ref])
            wrapped: Any = fastavro.schemaless_reader(
                io.BytesIO(body),
                writer,
                reader,
                return_named_type=True,
                handle_unicode_errors=JAVA_UTF8,  # text not UTF-8 read as Java reads it
            )
            value = wrapped["value"]  # .references wraps every schema as a record's field
            shape = self._shapes.get(ref) or (
                self._shape_untagged if ref in self._untag else self._shape
            )
            return shape(value), ref.schema_id, None
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
                raise decode_failure(where(i), ref, reason, self.key, self.reader_name) from None
        except (
            FramingError,
            ValueError,
            EOFError,
            IndexError,
            TypeError,
            KeyError,
            OverflowError,  # a timestamp past what datetime holds
            SchemaParseException,  # a resolved writer schema fastavro cannot take
        ) as exc:
            if not self.permissive:
                raise decode_failure(
                    where(i), ref, _reason(exc), self.key, self.reader_name
                ) from None
        return None, None, payload

    def _writer(self, ref: SchemaRef) -> Any:
        writer = self._writers.get(ref)
        if writer is None:
            registered = self.fetch(ref)
            if registered.schema_type != "AVRO":
                raise ValueError(f"{ref} is a {registered.schema_type} schema, not Avro")
            parsed = json.loads(registered.schema)
            # Named as Java pairs them, so fastavro's resolution is Java's (.resolution).
            resolution = resolve(parsed, self._parsed_reader)
            resolved = resolution.writer
            if tags_named(resolved):
                self._untag.add(ref)
            if resolution.unlike_fastavro:  # refused, where fastavro would read another value
                self._unlike[ref] = resolution.unlike_fastavro[0]
            if resolution.shaping is not None:  # unions whose branch Java decides statically
                self._shapes[ref] = shaper(resolution.shaping, untag=tags_named(resolved))
            writer = by_reference(fastavro.parse_schema(without_logical(resolved)))
            self._writers[ref] = writer
            self._writer_names[ref] = schema_name(parsed)
            self._same[ref] = canonical_text(registered.schema) == self._reader_json
        return writer

    def _reader_of(self, ref: SchemaRef) -> Any:
        """The reader schema to resolve ``ref``'s writer schema to; ``None`` when they are the
        same schema (fastavro would compare them at every record)."""
        return None if self._same.get(ref) else self._reader


def decode_failure(
    place: str, ref: SchemaRef | None, reason: str, key: bool, reader: str | None = None
) -> AvroDecodeError:
    """The ``FAILFAST`` error of a record at ``place`` (naming ``ref``, the writer schema, when
    its framing did, and ``reader``, the reader schema's registry name, when it has one)."""
    names = [str(ref)] if ref is not None else []
    if reader is not None:
        names.append(f"reader schema: {reader}")
    named = f" ({', '.join(names)})" if names else ""
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
