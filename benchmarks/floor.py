"""The floor of Spark's Python Data Source API: a stream source that yields prebuilt Arrow batches.

``bench_floor`` has ``dynamic_kafka``'s exact schema and emits ``rows`` rows in ``tasks`` tasks,
in batches of 65,536 rows (the source's batch size) with 100-byte values, built once per Python
worker and yielded again and again: no Kafka, no per-record Python work. What Spark spends to
move those rows (Python worker to JVM over Arrow, then into rows for the sink) is the least any
Python source pays; whatever ``dynamic_kafka`` spends beyond it is the reading itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from pyspark_dynamic_kafka.source.executor.arrow import ARROW_SCHEMA, SPARK_SCHEMA

BATCH_ROWS = 65536


def _batch(size: int) -> pa.RecordBatch:
    """One full batch, built with a few vectorised calls (each task builds its own: the module
    travels to the workers by value, so nothing survives between tasks)."""
    n = BATCH_ROWS
    value = (bytes(range(256)) * (size // 256 + 1))[:size]
    ends = pa.array(range(0, (n + 1) * size, size), pa.int32())
    values = pa.BinaryArray.from_buffers(
        pa.binary(), n, [None, ends.buffers()[1], pa.py_buffer(value * n)]
    )
    offsets = pa.array(range(n), pa.int64())
    stamps = pc.add(offsets, 1_700_000_000_000_000).cast(pa.timestamp("us", tz="UTC"))
    columns = [
        pa.nulls(n, pa.binary()),
        values,
        pa.repeat(pa.scalar("bench", pa.string()), n),
        pa.repeat(pa.scalar(0, pa.int32()), n),
        offsets,
        stamps,
        pa.repeat(pa.scalar(0, pa.int32()), n),
        pa.repeat(pa.scalar("bench", pa.string()), n),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=ARROW_SCHEMA)


class _Slice(InputPartition):  # type: ignore[misc]
    def __init__(self, rows: int, size: int) -> None:
        super().__init__(rows)
        self.rows = rows
        self.size = size


class FloorStreamReader(DataSourceStreamReader):  # type: ignore[misc]
    def __init__(self, options: dict[str, str]) -> None:
        self.rows = int(options["rows"])
        self.tasks = int(options.get("tasks", "2"))
        self.size = int(options.get("size", "100"))

    def initialOffset(self) -> dict[str, int]:
        return {"n": 0}

    def latestOffset(self) -> dict[str, int]:
        return {"n": self.rows}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[_Slice]:
        total = end["n"] - start["n"]
        share, extra = divmod(total, self.tasks)
        counts = [share + (1 if i < extra else 0) for i in range(self.tasks)]
        return [_Slice(c, self.size) for c in counts if c]

    def read(self, partition: _Slice) -> Iterator[pa.RecordBatch]:
        batch = _batch(partition.size)
        left = partition.rows
        while left > 0:
            yield batch if left >= BATCH_ROWS else batch.slice(0, left)
            left -= BATCH_ROWS

    def commit(self, end: dict[str, int]) -> None:
        pass


class FloorSource(DataSource):  # type: ignore[misc]
    @classmethod
    def name(cls) -> str:
        return "bench_floor"

    def schema(self) -> Any:
        return SPARK_SCHEMA

    def streamReader(self, schema: Any) -> FloorStreamReader:
        return FloorStreamReader(dict(self.options))
