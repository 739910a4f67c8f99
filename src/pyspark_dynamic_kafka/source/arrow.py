"""Arrow output: Spark's kafka-source columns plus ``cluster``, built column-wise.

Records arrive in *runs*: consecutive records of one (topic, partition). The per-record columns
(key, value, offset, timestamp) are gathered with one C-level call per record and column; the
run-constant columns (topic, partition, cluster) are built from the runs' lengths.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import Message
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

_TIMESTAMP = pa.timestamp("us", tz="UTC")

ARROW_SCHEMA = pa.schema(
    [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", _TIMESTAMP),
        pa.field("timestampType", pa.int32()),
        pa.field("cluster", pa.string()),
    ]
)

#: librdkafka's "timestamp not available" type; Spark's ids are librdkafka's minus one
#: (CreateTime 1 -> 0, LogAppendTime 2 -> 1, not available 0 -> -1).
_NO_TIMESTAMP = 0
#: ``Message.timestamp()`` pairs, converted in one pass (faster than one pass per field).
_STAMP = pa.struct([pa.field("type", pa.int32()), pa.field("ms", pa.int64())])


class BatchBuilder:
    """Accumulates runs of records of one cluster and emits bounded Arrow record batches.

    Parameters
    ----------
    cluster_id:
        Value of the ``cluster`` column.
    max_rows, max_bytes:
        A batch is due when either bound is reached (``max_bytes`` counts value bytes).
    """

    def __init__(self, cluster_id: str, max_rows: int = 65536, max_bytes: int = 32 << 20) -> None:
        self.cluster_id = cluster_id
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self._cluster = pa.scalar(cluster_id, pa.string())
        self._reset()

    def _reset(self) -> None:
        self._keys: list[bytes | None] = []
        self._values: list[bytes | None] = []
        self._offsets: list[int | None] = []
        self._stamps: list[tuple[int, int]] = []
        self._runs: list[tuple[str, int, int]] = []
        self._bytes = 0

    def add_run(self, topic: str, partition: int, messages: list[Any]) -> None:
        """Add confluent-kafka messages of one partition, already checked to be in range."""
        if not messages:
            return
        self._keys += map(Message.key, messages)
        values = list(map(Message.value, messages))
        self._values += values
        self._offsets += map(Message.offset, messages)
        self._stamps += map(Message.timestamp, messages)
        if self._runs and self._runs[-1][:2] == (topic, partition):
            self._runs[-1] = (topic, partition, self._runs[-1][2] + len(messages))
        else:
            self._runs.append((topic, partition, len(messages)))
        self._bytes += sum(map(len, filter(None, values)))

    @property
    def due(self) -> bool:
        """Whether a batch should be emitted now."""
        return len(self._offsets) >= self.max_rows or self._bytes >= self.max_bytes

    def __len__(self) -> int:
        return len(self._offsets)

    def flush(self) -> pa.RecordBatch:
        """Build one record batch from what was added and reset."""
        n = len(self._offsets)
        stamps = pa.array(self._stamps, _STAMP)
        kind = stamps.field(0)
        micros = pc.multiply(stamps.field(1), 1000)
        micros = micros.cast(_TIMESTAMP)
        timestamp = pc.if_else(pc.equal(kind, _NO_TIMESTAMP), pa.scalar(None, _TIMESTAMP), micros)
        columns = [
            pa.array(self._keys, pa.binary()),
            pa.array(self._values, pa.binary()),
            _repeated([(t, c) for t, _, c in self._runs], pa.string()),
            _repeated([(p, c) for _, p, c in self._runs], pa.int32()),
            pa.array(self._offsets, pa.int64()),
            timestamp,
            pc.subtract(kind, 1),
            pa.repeat(self._cluster, n),
        ]
        self._reset()
        return pa.RecordBatch.from_arrays(columns, schema=ARROW_SCHEMA)


def _repeated(runs: list[tuple[Any, int]], type_: pa.DataType) -> pa.Array:
    """An array holding each run's value ``count`` times, in order."""
    if not runs:
        return pa.array([], type_)
    parts = [pa.repeat(pa.scalar(value, type_), count) for value, count in runs]
    return parts[0] if len(parts) == 1 else pa.concat_arrays(parts)
