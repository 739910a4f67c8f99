"""The Arrow batches every range reader gives: Spark's kafka-source columns plus ``cluster``.

The Python reader (:mod:`.read_python_batches`) and the compiled core (its ``arrow_schema``,
the same schema) build exactly these; the source's schema with Avro columns
(:mod:`~pyspark_dynamic_kafka.source.schema`) starts from them.
"""

from __future__ import annotations

import functools

import pyarrow as pa

__all__ = [
    "EARLIEST_MS",
    "HEADERS_TYPE",
    "LATEST_MS",
    "TIMESTAMP_TYPE",
    "batch_schema",
    "past_range",
]

#: The ``timestamp`` column's Arrow type (Spark's TimestampType).
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")
#: Spark's ``headers`` as Arrow: a list of (key string, value binary) structs.
HEADERS_TYPE = pa.list_(
    pa.field("element", pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
)
_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", TIMESTAMP_TYPE),
    pa.field("timestampType", pa.int32()),
]
_HEADERS = pa.field("headers", HEADERS_TYPE)
_CLUSTER = pa.field("cluster", pa.string())
#: The latest and earliest record timestamps (ms) Spark's timestamp type holds (µs in a signed
#: 64-bit integer): Spark's kafka source multiplies exactly and fails the task on the others.
LATEST_MS = (2**63 - 1) // 1000
EARLIEST_MS = -LATEST_MS


@functools.lru_cache(maxsize=2)
def batch_schema(include_headers: bool = False) -> pa.Schema:
    """The Arrow schema of a range reader's batches, with ``headers`` when
    ``include_headers``."""
    headers = [_HEADERS] if include_headers else []
    return pa.schema([*_FIELDS, *headers, _CLUSTER])


def past_range(cluster_id: str, topic: str, partition: int, offset: int, ms: int) -> str:
    """The message of a read failing on a record whose timestamp is past Spark's range (the
    compiled core's, word for word)."""
    return (
        f"Reading from cluster '{cluster_id}' failed: the record of {topic}/{partition} at "
        f"offset {offset} has a timestamp of {ms} ms, past Spark's timestamp range "
        f"({EARLIEST_MS} to {LATEST_MS} ms): was it written in nanoseconds or microseconds? "
        "Spark's own kafka source fails on it too. Fix the producer; to read on, start from a "
        "later offset"
    )
