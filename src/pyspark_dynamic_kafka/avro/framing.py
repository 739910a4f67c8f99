"""Which schema an Avro key or value was written with, in the wire formats of Confluent's
serializers, and where its Avro body starts.

Two places can name the schema. A record header ``__value_schema_id`` (``__key_schema_id`` for
keys), as confluent-kafka and Schema Registry's newer serializers write it, holds a magic byte
``1`` and the schema's 16-byte GUID (or ``0`` and a 4-byte id); the whole payload is then the
Avro body. Otherwise the payload starts with the schema: a zero byte and the 4-byte big-endian
id (the classic framing), or ``1`` and a GUID; the body follows. The sink writes the classic
framing (:func:`id_prefix`). Anything else is not in these formats, a :class:`FramingError`
saying why.

Which place counts is the rule of Schema Registry's Java deserializer (``DualSchemaIdDeserializer``,
its default): the *last* header of that name, as a serializer appends its own after the ones a
stream processor forwarded from its input; that header wins over the payload's prefix, but a
header whose value is null does not count, and the prefix names the schema. Bytes after the
schema reference in a header are ignored, as Java ignores them for Avro.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["FramingError", "SchemaRef", "frame", "id_prefix"]

KEY_HEADER = "__key_schema_id"
VALUE_HEADER = "__value_schema_id"
_ID, _GUID = 0, 1


class FramingError(ValueError):
    """A payload (or its schema header) that names no schema in Confluent's wire formats."""


@dataclass(frozen=True)
class SchemaRef:
    """A schema as a record names it: an id of its cluster's registry, or a GUID."""

    schema_id: int | None = None
    guid: str | None = None

    def __str__(self) -> str:
        return f"schema id {self.schema_id}" if self.guid is None else f"schema {self.guid}"


def frame(
    payload: bytes, headers: Iterable[tuple[str, bytes | None]] | None = None, key: bool = False
) -> tuple[SchemaRef, memoryview]:
    """The schema ``payload`` (a record's value, or its key with ``key``) was written with, and
    its Avro body: named by the last of its ``headers`` naming schemas, unless that one is null,
    else by the payload's prefix.

    Raises
    ------
    FramingError
        When neither the header nor the payload names a schema in a known way.
    """
    name = KEY_HEADER if key else VALUE_HEADER
    values = [value for header, value in headers or () if header == name]
    if values and values[-1] is not None:
        return _named(bytes(values[-1]), f"header {name}"), memoryview(payload)
    ref = _named(payload, "payload")
    start = 5 if ref.guid is None else 17
    return ref, memoryview(payload)[start:]


def id_prefix(schema_id: int) -> bytes:
    """What a payload written with ``schema_id`` starts with in the classic framing: a zero
    byte and the id, 4 bytes big-endian.

    Raises
    ------
    ValueError
        When the id does not fit in 4 bytes (no registry issues such an id).
    """
    if not 0 <= schema_id < 2**32:
        raise ValueError(f"schema id {schema_id} does not fit in the 4 bytes of the framing")
    return bytes([_ID]) + schema_id.to_bytes(4, "big")


def _named(data: bytes, where: str) -> SchemaRef:
    """The schema ``data`` starts with."""
    if not data:
        raise FramingError(f"the {where} is empty: no magic byte names its schema")
    magic = data[0]
    if magic == _ID and len(data) >= 5:
        return SchemaRef(schema_id=int.from_bytes(data[1:5], "big"))
    if magic == _GUID and len(data) >= 17:
        return SchemaRef(guid=str(uuid.UUID(bytes=data[1:17])))
    if magic in (_ID, _GUID):
        need = 5 if magic == _ID else 17
        raise FramingError(
            f"the {where} is {len(data)} byte(s): too short for the schema reference its magic "
            f"byte {magic} announces ({need} bytes)"
        )
    raise FramingError(
        f"the {where} starts with byte {magic}, not a magic byte (0: a schema id follows, 1: a "
        "schema GUID): not written by a schema registry's serializer"
    )
