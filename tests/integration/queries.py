"""Queries of the integration tests: batch reads, streams into memory tables and Parquet files,
and what they hold. Waits are :func:`~tests.integration.helpers.wait_until`'s (generous
deadlines, never part of a passing run)."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.integration.helpers import DEADLINE, Row, wait_until

from pyspark_dynamic_kafka.monitoring.progress import offset_document


def batch_read(spark: Any, options: Mapping[str, str]) -> Any:
    """A batch DataFrame of the dynamic_kafka source."""
    return spark.read.format("dynamic_kafka").options(**options).load()


def keyed_rows(df: Any) -> list[Row]:
    """(cluster, topic, partition, offset, value) of a DataFrame of the source, sorted."""
    return sorted(
        (r.cluster, r.topic, r.partition, r.offset, r.value.decode())
        for r in df.select("cluster", "topic", "partition", "offset", "value").collect()
    )


def end_offset(query: Any) -> dict[str, Any]:
    """The end offset of a query's last progress (as JSON); ``{}`` before the first."""
    progress = query.lastProgress
    if not progress:
        return {}
    end = progress["sources"][0]["endOffset"]
    return offset_document(end) or {}


def read_paths(progress: Sequence[Mapping[str, Any]]) -> dict[str, set[str]]:
    """The engines the source's progress names per cluster (``readPaths`` of its status, see
    ``source/contract.py``), over every report: what a user sees read each cluster."""
    paths: dict[str, set[str]] = {}
    for report in progress:
        latest = report["sources"][0].get("latestOffset") or {}
        latest = offset_document(latest) or {}
        for cluster, path in latest.get("dynamicKafka", {}).get("readPaths", {}).items():
            paths.setdefault(cluster, set()).add(path)
    return paths


_tables = itertools.count()


@dataclass
class MemoryQuery:
    """A running ``dynamic_kafka`` stream into a memory table."""

    spark: Any
    query: Any
    table: str

    def rows(self) -> list[Row]:
        """(cluster, topic, partition, offset, value) of every row of the table."""
        return [
            (r.cluster, r.topic, r.partition, r.offset, r.value.decode())
            for r in self.spark.sql(
                f"select cluster, topic, partition, offset, value from {self.table}"
            ).collect()
        ]

    def values(self) -> list[str]:
        """The decoded values of the table, sorted (with duplicates)."""
        return sorted(value for *_, value in self.rows())

    def offsets(self) -> dict[str, Any]:
        """The end offset of the query's last progress (as JSON); ``{}`` before the first."""
        return end_offset(self.query)

    def read_paths(self) -> dict[str, set[str]]:
        """:func:`read_paths` of the query's recent progress."""
        return read_paths(self.query.recentProgress)

    def batch_sizes(self) -> list[int]:
        """Rows of each micro-batch that read something, in order."""
        return [p["numInputRows"] for p in self.query.recentProgress if p["numInputRows"] > 0]

    def expect(self, expected: Sequence[str]) -> None:
        """Wait until the table holds as many rows as ``expected``, then assert it holds exactly
        them (a failed query fails at once with its error)."""
        wait_until(lambda: len(self.healthy_values()) >= len(expected), what=f"{expected!r}")
        self.query.processAllAvailable()
        assert self.values() == sorted(expected)

    def healthy_values(self) -> list[str]:
        """:meth:`values`, failing at once if the query failed."""
        if self.query.exception() is not None:
            raise AssertionError(f"query failed: {self.query.exception()}")
        return self.values()

    def failure(self) -> str:
        """Wait until the query fails; its error message."""
        wait_until(lambda: self.query.exception() is not None, what="the query to fail")
        return str(self.query.exception())

    def finish(self) -> MemoryQuery:
        """Wait for a query that ends by itself (``availableNow``, ``once``) and check it ended
        without an error."""
        self.query.awaitTermination(DEADLINE)
        assert not self.query.isActive and self.query.exception() is None
        return self


def start_memory_query(
    spark: Any, options: Mapping[str, str], prefix: str = "t", **trigger: Any
) -> MemoryQuery:
    """Start a ``dynamic_kafka`` stream into a fresh memory table.

    ``trigger`` is passed to ``DataStreamWriter.trigger`` (every 200 ms by default).
    """
    table = f"{prefix}{next(_tables)}"
    query = (
        spark.readStream.format("dynamic_kafka")
        .options(**options)
        .load()
        .writeStream.format("memory")
        .queryName(table)
        .trigger(**(trigger or {"processingTime": "200 milliseconds"}))
        .start()
    )
    return MemoryQuery(spark, query, table)


@contextlib.contextmanager
def memory_query(
    spark: Any, options: Mapping[str, str], prefix: str = "t", **trigger: Any
) -> Iterator[MemoryQuery]:
    """:func:`start_memory_query`, stopped on exit."""
    running = start_memory_query(spark, options, prefix, **trigger)
    try:
        yield running
    finally:
        running.query.stop()


def available_now(spark: Any, options: Mapping[str, str], prefix: str = "t") -> MemoryQuery:
    """Read everything available into a memory table (``Trigger.AvailableNow``) and wait."""
    return start_memory_query(spark, options, prefix, availableNow=True).finish()


def parquet_values(spark: Any, output: Path) -> list[str]:
    """The ``value`` column of a :func:`parquet_query`'s output so far (as strings)."""
    if not (output / "_spark_metadata").exists():
        return []
    # An explicit schema: the sink's log may exist before its first data file does.
    table = spark.read.schema("cluster string, value string").parquet(str(output))
    return [r.value for r in table.select("value").collect()]


def wait_parquet(spark: Any, output: Path, count: int) -> None:
    """Wait until a :func:`parquet_query`'s output holds ``count`` rows or more."""
    wait_until(lambda: len(parquet_values(spark, output)) >= count, what=f"{count} rows")


def parquet_query(spark: Any, options: Mapping[str, str], tmp_path: Path) -> Any:
    """A ``dynamic_kafka`` stream of (cluster, value as string) into Parquet files in
    ``tmp_path / "out"``, checkpointed in ``tmp_path / "ckpt"``: started again with the same
    ``tmp_path``, it resumes from its checkpoint and appends to the same output."""
    df = (
        spark.readStream.format("dynamic_kafka")
        .options(**options)
        .load()
        .selectExpr("cluster", "cast(value as string) as value")
    )
    return (
        df.writeStream.format("parquet")
        .option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
