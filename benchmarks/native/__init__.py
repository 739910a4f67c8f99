"""A prototype of the proposed native reader, measured beside ``dynamic_kafka`` (not product code).

``columns.c`` lets librdkafka fill Arrow column buffers (value offsets and bytes, partition,
offset, timestamp) for exact per-partition ranges, with no Python object per record; Python only
wraps the buffers into a ``RecordBatch`` of ``dynamic_kafka``'s schema. ``bench_native`` is a
Spark stream source that plans the same tasks as ``dynamic_kafka`` (``plan_tasks``) and reads
them with it, so its side of the benchmark is what the proposed reader would cost in Spark:
the same Python Data Source API, the same tasks, the same client library and fetch settings.

It reads what the benchmark loads (records without keys or headers); keys, headers, transaction
markers and data loss, which the product reader handles, are left out.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import confluent_kafka
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from pyspark_dynamic_kafka.kafka.pool import CONSUMER_DEFAULTS
from pyspark_dynamic_kafka.source.executor.arrow import ARROW_SCHEMA, SPARK_SCHEMA

BATCH_ROWS = 65536
VALUE_BYTES = 32 * 1024 * 1024
SOURCE = Path(__file__).with_name("columns.c")


def build(cache: Path) -> Path:
    """Compile ``columns.c`` against the librdkafka that confluent-kafka's wheel ships (cached)."""
    libs = Path(confluent_kafka.__file__).parent.parent / "confluent_kafka.libs"
    rdkafka = next(libs.glob("librdkafka*.so*"))
    digest = hashlib.sha256(SOURCE.read_bytes() + str(rdkafka).encode()).hexdigest()[:12]
    out = cache / f"libcolumns-{digest}.so"
    if not out.exists():
        cache.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        subprocess.run(
            [
                "gcc",
                "-O2",
                "-Wall",
                "-shared",
                "-fPIC",
                "-o",
                str(tmp),
                str(SOURCE),
                str(rdkafka),
                f"-Wl,-rpath,{rdkafka.parent}",
            ],
            check=True,
        )
        tmp.rename(out)
    return out


def _library(path: str) -> Any:
    lib = ctypes.CDLL(path)
    p64, p32 = ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int32)
    lib.cols_open.restype = ctypes.c_void_p
    lib.cols_open.argtypes = [
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_int,
        p32,
        p64,
        p64,
        ctypes.c_char_p,
        ctypes.c_size_t,
    ]
    lib.cols_fill.restype = ctypes.c_int64
    lib.cols_fill.argtypes = [
        ctypes.c_void_p,
        ctypes.c_int64,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_int64,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_int,
    ]
    lib.cols_error.restype = ctypes.c_char_p
    lib.cols_error.argtypes = [ctypes.c_void_p]
    lib.cols_close.argtypes = [ctypes.c_void_p]
    return lib


def read_ranges(
    library: str,
    bootstrap: str,
    topic: str,
    cluster: str,
    ranges: list[tuple[int, int, int]],
    deadline_s: float = 300.0,
) -> Iterator[pa.RecordBatch]:
    """Arrow batches of ``ranges`` ((partition, start, end) of one topic of one cluster)."""
    lib = _library(library)
    conf = dict(CONSUMER_DEFAULTS)
    conf.update(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-native",
            "enable.partition.eof": "false",
        }
    )
    text = "".join(f"{k}={v}\n" for k, v in conf.items()).encode()
    n = len(ranges)
    parts = (ctypes.c_int32 * n)(*[r[0] for r in ranges])
    starts = (ctypes.c_int64 * n)(*[r[1] for r in ranges])
    ends = (ctypes.c_int64 * n)(*[r[2] for r in ranges])
    err = ctypes.create_string_buffer(512)
    handle = lib.cols_open(text, topic.encode(), n, parts, starts, ends, err, 512)
    if not handle:
        raise RuntimeError(f"cols_open: {err.value.decode()}")
    topic_col = pa.scalar(topic, pa.string())
    cluster_col = pa.scalar(cluster, pa.string())
    zero = pa.scalar(0, pa.int32())
    try:
        last = time.monotonic()
        while True:
            # fresh buffers per batch: the batch owns them once yielded
            offsets_buf = pa.allocate_buffer(4 * (BATCH_ROWS + 1))
            values_buf = pa.allocate_buffer(VALUE_BYTES)
            part_buf = pa.allocate_buffer(4 * BATCH_ROWS)
            off_buf = pa.allocate_buffer(8 * BATCH_ROWS)
            ts_buf = pa.allocate_buffer(8 * BATCH_ROWS)
            ctypes.c_int32.from_address(offsets_buf.address).value = 0
            rows = lib.cols_fill(
                handle,
                BATCH_ROWS,
                offsets_buf.address,
                values_buf.address,
                VALUE_BYTES,
                part_buf.address,
                off_buf.address,
                ts_buf.address,
                100,
            )
            if rows == 0:
                return
            if rows == -1:
                raise RuntimeError(f"cols_fill: {lib.cols_error(handle).decode()}")
            if rows == -2:
                if time.monotonic() - last > deadline_s:
                    raise RuntimeError(f"no record from {bootstrap} for {deadline_s} s")
                continue
            last = time.monotonic()
            used = ctypes.c_int32.from_address(offsets_buf.address + 4 * rows).value
            columns = [
                pa.nulls(rows, pa.binary()),
                pa.BinaryArray.from_buffers(
                    pa.binary(), rows, [None, offsets_buf, values_buf.slice(0, used)]
                ),
                pa.repeat(topic_col, rows),
                pa.Array.from_buffers(pa.int32(), rows, [None, part_buf]),
                pa.Array.from_buffers(pa.int64(), rows, [None, off_buf]),
                pa.Array.from_buffers(pa.timestamp("us", tz="UTC"), rows, [None, ts_buf]),
                pa.repeat(zero, rows),
                pa.repeat(cluster_col, rows),
            ]
            yield pa.RecordBatch.from_arrays(columns, schema=ARROW_SCHEMA)
    finally:
        lib.cols_close(handle)


class _Task(InputPartition):  # type: ignore[misc]
    def __init__(self, index: int, reads: list[tuple[str, str, str, list[tuple[int, int, int]]]]):
        super().__init__(index)
        self.reads = reads


class NativeStreamReader(DataSourceStreamReader):  # type: ignore[misc]
    """Reads ``shares`` (JSON: [[bootstrap, topic, {partition: end}], ...]) from offset 0."""

    def __init__(self, options: dict[str, str]) -> None:
        self.library = options["library"]
        self.shares = json.loads(options["shares"])

    def initialOffset(self) -> dict[str, int]:
        return {"done": 0}

    def latestOffset(self) -> dict[str, int]:
        return {"done": 1}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[_Task]:
        from pyspark_dynamic_kafka.kafka.config import FrozenProperties
        from pyspark_dynamic_kafka.source.driver.planning import plan_tasks
        from pyspark_dynamic_kafka.source.executor.task import OffsetRange, ReadSettings

        if start["done"] == end["done"]:
            return []
        ranges = [
            OffsetRange(f"c{i}", topic, int(p), 0, e)
            for i, (_, topic, ends) in enumerate(self.shares)
            for p, e in ends.items()
        ]
        props = {f"c{i}": FrozenProperties({}) for i in range(len(self.shares))}
        tasks = []
        for index, task in enumerate(plan_tasks(ranges, props, ReadSettings(0, 0, frozenset()))):
            reads = []
            for cluster, group in task.by_cluster().items():
                bootstrap, topic, _ = self.shares[int(cluster[1:])]
                reads.append(
                    (bootstrap, topic, cluster, [(r.partition, r.start, r.end) for r in group])
                )
            tasks.append(_Task(index, reads))
        return tasks

    def read(self, partition: _Task) -> Iterator[pa.RecordBatch]:
        for bootstrap, topic, cluster, ranges in partition.reads:
            yield from read_ranges(self.library, bootstrap, topic, cluster, ranges)

    def commit(self, end: dict[str, int]) -> None:
        pass


class NativeSource(DataSource):  # type: ignore[misc]
    @classmethod
    def name(cls) -> str:
        return "bench_native"

    def schema(self) -> Any:
        return SPARK_SCHEMA

    def streamReader(self, schema: Any) -> NativeStreamReader:
        return NativeStreamReader(dict(self.options))
