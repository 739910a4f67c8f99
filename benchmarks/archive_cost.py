"""Where the archive phase's Python time goes, read in one process without Spark.

Reads a hybrid read's archive (``ARCHIVE``: a directory of Parquet files of this source's columns,
e.g. the one ``benchmarks/hybrid.py`` writes; without it, ``--records`` rows are written first,
as Spark's archiving job writes them: snappy, ``cluster=``/``topic=`` directories, INT96
timestamps) with the source's planner and executor path, every file once per pass, with the
cyclic GC paused as a task does. CPU per record of each pass (median of ``--rounds``):

* ``parquet``: pyarrow's ``iter_batches`` of the columns the output needs, batches dropped: the
  Parquet decoding every reader of these files pays;
* ``read_archive``: the source's executor path (``source/executor/archive.py``) into batches of the
  output schema: decoding plus conforming (casts, directory columns);
* ``ipc``: ``read_archive`` plus writing its batches as an Arrow IPC stream to a null sink, which
  is what a Python worker does with them before the JVM takes over.

With ``--profile`` the ``read_archive`` pass runs once more under cProfile (top functions by
cumulative time). Run: ``python -m benchmarks.archive_cost [ARCHIVE] [--records N]``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pyspark_dynamic_kafka.source.archive.plan import ArchivePlan, make_plan
from pyspark_dynamic_kafka.source.executor.archive import (
    ArchiveRead,
    ArchiveTask,
    filesystem,
    read_archive,
)
from pyspark_dynamic_kafka.source.schema import arrow_schema

PARTITIONS = 8
SIZE = 100


def write_archive(root: Path, records: int, files: int = 24) -> None:
    """``records`` rows over 2 clusters x 8 partitions in ``files`` files, as Spark writes them."""
    per_file = records // files
    for index in range(files):
        cluster = ("east", "west")[index % 2]
        partition = index // 2 % PARTITIONS
        first = index // (2 * PARTITIONS) * per_file
        offsets = pa.array(range(first, first + per_file), pa.int64())
        values = [
            f"{cluster}/{partition}/{o}".ljust(SIZE, ".").encode() for o in offsets.to_pylist()
        ]
        table = pa.table(
            {
                "key": pa.nulls(per_file, pa.binary()),
                "value": pa.array(values, pa.binary()),
                "partition": pa.array([partition] * per_file, pa.int32()),
                "offset": offsets,
                "timestamp": pa.array(
                    [1_700_000_000_000_000 + o for o in offsets.to_pylist()], pa.timestamp("us")
                ),
                "timestampType": pa.array([0] * per_file, pa.int32()),
            }
        )
        where = root / f"cluster={cluster}" / "topic=orders"
        where.mkdir(parents=True, exist_ok=True)
        pq.write_table(
            table,
            where / f"part-{index:05d}.snappy.parquet",
            compression="snappy",
            use_deprecated_int96_timestamps=True,
        )


def _cpu(run: Callable[[], int]) -> float:
    """CPU µs per record of ``run()`` (returns records), GC paused."""
    gc.collect()
    gc.disable()
    try:
        began = time.process_time()
        records = run()
        return (time.process_time() - began) / max(records, 1) * 1e6
    finally:
        gc.enable()


def _passes(plan: ArchivePlan) -> dict[str, Callable[[], int]]:
    settings = ArchiveRead(plan.base)
    task = ArchiveTask(plan.files, settings)
    schema = arrow_schema(False)
    fs, _ = filesystem(plan.base)

    def parquet() -> int:
        rows = 0
        for file in plan.files:
            with fs.open_input_file(file.path) as handle:
                parquet = pq.ParquetFile(handle, coerce_int96_timestamp_unit="us")
                wanted = [n for n in schema.names if n in parquet.schema_arrow.names]
                for batch in parquet.iter_batches(batch_size=65536, columns=wanted):
                    rows += batch.num_rows
        return rows

    def archive() -> int:
        return sum(batch.num_rows for batch in read_archive(task))

    def ipc() -> int:
        rows = 0
        with pa.ipc.new_stream(pa.BufferOutputStream(), schema) as writer:
            for batch in read_archive(task):
                writer.write_batch(batch)
                rows += batch.num_rows
        return rows

    return {"parquet": parquet, "read_archive": archive, "ipc": ipc}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("archive", nargs="?", help="an archive directory (default: write one)")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="cProfile read_archive once")
    args = parser.parse_args()
    root = Path(args.archive) if args.archive else Path(tempfile.mkdtemp(prefix="archive-cost-"))
    if not args.archive:
        write_archive(root, args.records)
    plan = make_plan(str(root), exact=True)
    print(f"{root}: {len(plan.files)} files, {sum(plan.rows):,} rows")
    passes = _passes(plan)
    results: dict[str, list[float]] = {name: [] for name in passes}
    for _ in range(args.rounds + 1):  # the first round warms the page cache up, not counted
        for name, run in passes.items():
            results[name].append(_cpu(run))
    for name, values in results.items():
        shown = " ".join(f"{v:.3f}" for v in values[1:])
        print(f"  {name:>12}: {shown}  median {statistics.median(values[1:]):.3f} us/record")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(passes["read_archive"])
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(15)


if __name__ == "__main__":
    main()
