"""The floors of Spark's Python Data Source API: a stream source that yields prebuilt Arrow batches,
and a stream sink that takes Spark's Arrow batches and drops them.

``bench_floor`` has ``dynamic_kafka``'s exact schema and emits ``rows`` rows in ``tasks`` tasks,
in batches of 65,536 rows (the source's batch size) with 100-byte values, built once per Python
worker and yielded again and again: no Kafka, no per-record Python work. What Spark spends to
move those rows (Python worker to JVM over Arrow, then into rows for the sink) is the least any
Python source pays; whatever ``dynamic_kafka`` spends beyond it is the reading itself.

``bench_write_floor`` is the write side's twin: a ``DataSourceStreamArrowWriter`` (the base class
of ``dynamic_kafka``'s stream writer on PySpark 4.1+) whose tasks take the same Arrow batches the
sink takes and only count their rows (so every batch is received and looked at), and whose commit
writes the micro-batch's count to the file its option ``counts`` names, for the benchmark to check.
What Spark spends to hand those rows to a Python worker (rows to Arrow in the JVM, the socket, the
batches in the worker) is the least any Python sink pays (:mod:`benchmarks.write_floor`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    InputPartition,
    WriterCommitMessage,
)

from pyspark_dynamic_kafka.source.schema import ARROW_SCHEMA, SPARK_SCHEMA

BATCH_ROWS = 65536


def source_batch(
    values: pa.Array, offsets: pa.Array, stamps: pa.Array, name: str
) -> pa.RecordBatch:
    """``values`` at ``offsets`` in ``dynamic_kafka``'s schema: no keys, partition 0 of topic
    ``name`` on cluster ``name``, CreateTime ``stamps`` (``bench_clock``'s batches too)."""
    n = len(offsets)
    label = pa.repeat(pa.scalar(name, pa.string()), n)
    zeros = pa.repeat(pa.scalar(0, pa.int32()), n)
    columns = [pa.nulls(n, pa.binary()), values, label, zeros, offsets, stamps, zeros, label]
    return pa.RecordBatch.from_arrays(columns, schema=ARROW_SCHEMA)


def task_shares(rows: int, tasks: int) -> list[int]:
    """``rows`` split over ``tasks`` tasks as evenly as can be (the first ones take the extra)."""
    share, extra = divmod(rows, tasks)
    return [share + (1 if i < extra else 0) for i in range(tasks)]


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
    return source_batch(values, offsets, stamps, "bench")


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
        counts = task_shares(end["n"] - start["n"], self.tasks)
        return [_Slice(c, self.size) for c in counts if c]

    def read(self, partition: _Slice) -> Iterator[pa.RecordBatch]:
        batch = _batch(partition.size)
        left = partition.rows
        while left > 0:
            yield batch if left >= BATCH_ROWS else batch.slice(0, left)
            left -= BATCH_ROWS


class BenchSource(DataSource):  # type: ignore[misc]
    """A stream source with ``dynamic_kafka``'s schema whose reader is ``reader`` (given the
    query's options); a subclass names the format."""

    reader: type[DataSourceStreamReader]

    def schema(self) -> Any:
        return SPARK_SCHEMA

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return self.reader(dict(self.options))


class FloorSource(BenchSource):
    reader = FloorStreamReader

    @classmethod
    def name(cls) -> str:
        return "bench_floor"


@dataclass(frozen=True)
class Counted(WriterCommitMessage):  # type: ignore[misc]
    """What one write-floor task received."""

    rows: int
    batches: int


class FloorStreamWriter(DataSourceStreamArrowWriter):  # type: ignore[misc]
    def __init__(self, counts: str) -> None:
        self.counts = counts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Counted:
        rows = batches = 0
        for batch in iterator:
            rows += batch.num_rows
            batches += 1
        return Counted(rows, batches)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Add the micro-batch's rows to the ``counts`` file (JSON lines, one a micro-batch)."""
        done = [m for m in messages if m is not None]  # Counted, maybe pickled by value
        rows = sum(getattr(m, "rows", 0) for m in done)
        batches = sum(getattr(m, "batches", 0) for m in done)
        line = {"batch": batchId, "rows": rows, "batches": batches, "tasks": len(done)}
        with Path(self.counts).open("a") as out:
            out.write(json.dumps(line) + "\n")


class WriteFloorSink(DataSource):  # type: ignore[misc]
    """``writeStream.format("bench_write_floor").option("counts", <file>)``."""

    @classmethod
    def name(cls) -> str:
        return "bench_write_floor"

    def streamWriter(self, schema: Any, overwrite: bool) -> DataSourceStreamWriter:
        return FloorStreamWriter(self.options["counts"])


def floor_rows(counts: Path) -> int:
    """The rows the write floor's commits counted in ``counts`` (0: none yet)."""
    if not counts.exists():
        return 0
    return sum(int(json.loads(line)["rows"]) for line in counts.read_text().splitlines() if line)
