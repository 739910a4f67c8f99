"""A trivial Python stream source: Spark's own cost per Python micro-batch, no Kafka.

``bench_clock`` makes records appear at ``rate`` per second from ``t0`` (an option: every reader
instance Spark makes must agree on it): record ``n`` "is produced" at ``t0 + n / rate``, which
is its ``timestamp``, so the latency sink of :mod:`benchmarks.latency` prices it exactly as a
Kafka side. ``latestOffset`` is the number of records produced so far; a micro-batch is split
into ``tasks`` tasks (2, as ``dynamic_kafka`` plans small micro-batches), each yielding one Arrow
batch with ``dynamic_kafka``'s schema built by a few vectorised calls. Whatever a micro-batch of
``dynamic_kafka`` costs beyond this one is the reading itself.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from benchmarks.floor import BenchSource, source_batch, task_shares
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

_VALUE = bytes(range(100))


class _Slice(InputPartition):  # type: ignore[misc]
    def __init__(self, first: int, end: int, t0: float, rate: float) -> None:
        super().__init__(first)
        self.first, self.end, self.t0, self.rate = first, end, t0, rate


def _batch(s: _Slice) -> pa.RecordBatch:
    offsets = pa.array(range(s.first, s.end), pa.int64())
    micros = pc.add(pc.divide(pc.cast(offsets, pa.float64()), s.rate / 1e6), s.t0 * 1e6)
    stamps = pc.cast(pc.cast(pc.floor(micros), pa.int64()), pa.timestamp("us", tz="UTC"))
    values = pa.array([_VALUE] * (s.end - s.first), pa.binary())
    return source_batch(values, offsets, stamps, "clock")


class ClockStreamReader(DataSourceStreamReader):  # type: ignore[misc]
    def __init__(self, options: dict[str, str]) -> None:
        self.rate = float(options["rate"])
        self.tasks = int(options.get("tasks", "2"))
        # the same for every instance Spark makes of the reader (it makes several)
        self.t0 = float(options.get("t0", time.time()))

    def _now(self) -> dict[str, int]:
        return {"n": int((time.time() - self.t0) * self.rate)}

    def initialOffset(self) -> dict[str, int]:
        return {"n": 0}  # Spark may ask again after latestOffset: never later than it

    def latestOffset(self) -> dict[str, int]:
        return self._now()

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[_Slice]:
        slices, at = [], start["n"]
        for count in task_shares(end["n"] - start["n"], self.tasks):
            if count:
                slices.append(_Slice(at, at + count, self.t0, self.rate))
            at += count
        return slices

    def read(self, partition: _Slice) -> Iterator[pa.RecordBatch]:
        yield _batch(partition)


class ClockSource(BenchSource):
    reader = ClockStreamReader

    @classmethod
    def name(cls) -> str:
        return "bench_clock"
