"""Test support: the Avro schemas the tests share, a record schema written in one line a field
(:func:`record_schema`), and the writer-schema lookup the decoders are handed, through the real
registry client (:func:`registry_fetch`).

The logical types Spark reads are named once here (:class:`Logical`, with its decimals), and a
field of each date and time type (:data:`TIME_FIELDS`); the orders schemas are the v1 and v2 many
tests register (v2 adds a field with a default), read as stream ``orders`` with the source
options :data:`ORDERS_SOURCE`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark_dynamic_kafka.avro.framing import SchemaRef
from pyspark_dynamic_kafka.registry.client import RegisteredSchema, RegistryClient
from pyspark_dynamic_kafka.registry.endpoint import RegistryEndpoint
from pyspark_dynamic_kafka.testing.schema_registry import LocalSchemaRegistry

__all__ = [
    "LOGICAL_TYPES",
    "ORDERS_SOURCE",
    "ORDER_V1",
    "ORDER_V2",
    "TIME_FIELDS",
    "Field",
    "Logical",
    "record_schema",
    "registry_fetch",
]


class Logical:
    """The logical types Spark reads, by name; a decimal of the precision and scale a test gives."""

    DATE = {"type": "int", "logicalType": "date"}
    TIME_MILLIS = {"type": "int", "logicalType": "time-millis"}
    TIME_MICROS = {"type": "long", "logicalType": "time-micros"}
    TIMESTAMP_MILLIS = {"type": "long", "logicalType": "timestamp-millis"}
    TIMESTAMP_MICROS = {"type": "long", "logicalType": "timestamp-micros"}
    LOCAL_TIMESTAMP_MILLIS = {"type": "long", "logicalType": "local-timestamp-millis"}
    LOCAL_TIMESTAMP_MICROS = {"type": "long", "logicalType": "local-timestamp-micros"}
    UUID = {"type": "string", "logicalType": "uuid"}

    @staticmethod
    def decimal(precision: int, scale: int, fixed: tuple[str, int] | None = None) -> dict[str, Any]:
        """A decimal of ``precision`` digits, ``scale`` of them after the point: on bytes, or on
        a fixed type of the name and size ``fixed`` gives."""
        on = (
            {"type": "bytes"}
            if fixed is None
            else {"type": "fixed", "name": fixed[0], "size": fixed[1]}
        )
        return {**on, "logicalType": "decimal", "precision": precision, "scale": scale}


#: Every logical type Spark reads, a decimal of precision 9 and scale 2 for the decimals.
LOGICAL_TYPES = [
    Logical.DATE,
    Logical.TIME_MILLIS,
    Logical.TIME_MICROS,
    Logical.TIMESTAMP_MILLIS,
    Logical.TIMESTAMP_MICROS,
    Logical.LOCAL_TIMESTAMP_MILLIS,
    Logical.LOCAL_TIMESTAMP_MICROS,
    Logical.decimal(9, 2),
    Logical.UUID,
]
#: A field of each date and time type, named as the tests of every type name them.
TIME_FIELDS = [
    ("day", Logical.DATE),
    ("at_ms", Logical.TIMESTAMP_MILLIS),
    ("at_us", Logical.TIMESTAMP_MICROS),
    ("local_ms", Logical.LOCAL_TIMESTAMP_MILLIS),
    ("local_us", Logical.LOCAL_TIMESTAMP_MICROS),
    ("clock_ms", Logical.TIME_MILLIS),
    ("clock_us", Logical.TIME_MICROS),
]

#: The source options of stream ``orders`` in the metadata file ``m.yaml``, which the tests of
#: the Avro options add to.
ORDERS_SOURCE = {"metadataService": "file", "metadataService.path": "m.yaml", "streamIds": "orders"}

#: A field of :func:`record_schema`: ``(name, type)``, or the whole field (a default, aliases...).
Field = tuple[str, Any] | dict[str, Any]


def record_schema(name: str, *fields: Field, **attributes: Any) -> dict[str, Any]:
    """A record schema named ``name`` of ``fields`` (``attributes``: its namespace, aliases...).

    Parameters
    ----------
    name:
        The record's name.
    fields:
        Each field: a ``(name, type)`` pair, or the field's whole declaration.
    attributes:
        More attributes of the record.

    Returns
    -------
    dict
        The schema, as ``json.dumps`` writes it for a registry.
    """
    declared = [f if isinstance(f, dict) else {"name": f[0], "type": f[1]} for f in fields]
    return {"type": "record", "name": name, "fields": declared, **attributes}


ORDER_V1 = record_schema("Order", ("id", "long"), ("item", "string"))
ORDER_V2 = record_schema("Order", *ORDER_V1["fields"], {"name": "qty", "type": "int", "default": 1})


def registry_fetch(registry: LocalSchemaRegistry) -> Callable[[SchemaRef], RegisteredSchema]:
    """The decoders' ``fetch``: a writer schema from ``registry``, by its id or its GUID, through
    the registry client of a cluster named ``east``.

    Parameters
    ----------
    registry:
        The testing kit's registry.

    Returns
    -------
    Callable
        ``fetch(ref)``: the schema ``ref`` names.
    """
    client = RegistryClient(RegistryEndpoint((registry.url,)), "east", timeout_s=5)

    def fetch(ref: SchemaRef) -> RegisteredSchema:
        if ref.schema_id is not None:
            return client.schema_by_id(ref.schema_id)
        return client.schema_by_guid(str(ref.guid))

    return fetch
