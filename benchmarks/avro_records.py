"""The Avro records the Avro benchmarks read: a 10-field schema (long, string, int, double,
boolean, bytes, timestamp-millis, a nullable string, string, long; 68 bytes a record on the wire)
and its values, written by fastavro in Confluent's wire format (a zero byte, the schema's 4-byte
big-endian id, the Avro body).

:mod:`benchmarks.avro` produces them into Kafka, :mod:`benchmarks.avro_decode` hands them to the
decoders straight.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator
from typing import Any

import fastavro

__all__ = ["FIELDS", "SCHEMA", "framed", "record"]

SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "Order",
    "namespace": "bench",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": "string"},
        {"name": "quantity", "type": "int"},
        {"name": "price", "type": "double"},
        {"name": "paid", "type": "boolean"},
        {"name": "token", "type": "bytes"},
        {"name": "created", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "region", "type": "string"},
        {"name": "sequence", "type": "long"},
    ],
}
FIELDS = [f["name"] for f in SCHEMA["fields"]]
_REGIONS = ["eu-west", "eu-north", "us-east", "us-west", "ap-south", "ap-east", "sa-east", "af-x"]


def record(i: int) -> dict[str, Any]:
    """The ``i``-th record's values.

    Parameters
    ----------
    i:
        The record's number, from 0.

    Returns
    -------
    dict
        The value of each field of :data:`SCHEMA`.
    """
    return {
        "id": i,
        "customer": f"customer-{i % 50_000:05d}",
        "quantity": i % 1000,
        "price": (i % 100_000) / 100,
        "paid": i % 2 == 0,
        "token": i.to_bytes(8, "big"),
        "created": 1_700_000_000_000 + i * 37,
        "note": None if i % 3 == 0 else f"note {i % 97}",
        "region": _REGIONS[i % len(_REGIONS)],
        "sequence": i * 7919 % (1 << 40),
    }


def framed(count: int, schema_id: int) -> Iterator[tuple[None, bytes]]:
    """The first ``count`` records in Confluent's wire format, as keyless Kafka records.

    Parameters
    ----------
    count:
        How many records.
    schema_id:
        The id their writer schema (:data:`SCHEMA`) is registered under.

    Yields
    ------
    tuple
        ``(None, value)``: no key, the framed value.
    """
    parsed = fastavro.parse_schema(SCHEMA)
    prefix = b"\0" + struct.pack(">I", schema_id)
    buffer = io.BytesIO()
    for i in range(count):
        buffer.seek(0)
        buffer.truncate()
        fastavro.schemaless_writer(buffer, parsed, record(i))
        yield None, prefix + buffer.getvalue()
