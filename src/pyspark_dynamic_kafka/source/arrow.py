"""Arrow output: Spark's kafka-source columns plus ``cluster``, built column-wise."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

__all__ = ["ARROW_SCHEMA", "SPARK_SCHEMA", "BatchBuilder"]

SPARK_SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
        StructField("cluster", StringType()),
    ]
)

ARROW_SCHEMA = pa.schema(
    [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
        pa.field("cluster", pa.string()),
    ]
)

# librdkafka timestamp types (0 not available, 1 create, 2 log append) -> Spark's ids.
_TIMESTAMP_TYPE = {0: -1, 1: 0, 2: 1}


class BatchBuilder:
    """Accumulates messages of one cluster and emits bounded Arrow record batches.

    Parameters
    ----------
    cluster_id:
        Value of the ``cluster`` column.
    max_rows, max_bytes:
        A batch is due when either bound is reached.
    """

    def __init__(self, cluster_id: str, max_rows: int = 65536, max_bytes: int = 32 << 20) -> None:
        self.cluster_id = cluster_id
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self._messages: list[Any] = []
        self._bytes = 0

    def add(self, messages: list[Any]) -> None:
        """Add confluent-kafka messages (already checked to be data within their range)."""
        self._messages.extend(messages)
        self._bytes += sum(len(m) for m in messages)

    @property
    def due(self) -> bool:
        """Whether a batch should be emitted now."""
        return len(self._messages) >= self.max_rows or self._bytes >= self.max_bytes

    def __len__(self) -> int:
        return len(self._messages)

    def flush(self) -> pa.RecordBatch:
        """Build one record batch from what was added and reset."""
        messages = self._messages
        self._messages = []
        self._bytes = 0
        stamps = [m.timestamp() for m in messages]
        times = [ts * 1000 if kind else None for kind, ts in stamps]
        kinds = [_TIMESTAMP_TYPE.get(kind, -1) for kind, _ in stamps]
        columns = [
            pa.array([m.key() for m in messages], pa.binary()),
            pa.array([m.value() for m in messages], pa.binary()),
            pa.array([m.topic() for m in messages], pa.string()),
            pa.array([m.partition() for m in messages], pa.int32()),
            pa.array([m.offset() for m in messages], pa.int64()),
            pa.array(times, pa.timestamp("us", tz="UTC")),
            pa.array(kinds, pa.int32()),
            pa.array([self.cluster_id] * len(messages), pa.string()),
        ]
        return pa.RecordBatch.from_arrays(columns, schema=ARROW_SCHEMA)
