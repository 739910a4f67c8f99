"""The Spark sides: ``dynamic_kafka``, Spark's ``format("kafka")``, a union of them, the floor.

Every side is a new streaming query (noop sink) on the same warm ``local[2]`` SparkSession that
starts at the earliest offsets with all the data already there, so its first micro-batch reads
everything. The measured window is that batch's ``addBatch`` span (the Spark job that reads and
writes the rows), taken from the query's progress: query start-up, offset listing and planning are
outside it for every side alike. CPU is the whole Spark process tree (the JVM and every Python
worker it started, the source's planner process included) over the same window, from a
:class:`~benchmarks.measure.CpuSampler`.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pyspark
from benchmarks.measure import CpuSampler
from pyspark import cloudpickle


@dataclass(frozen=True)
class Run:
    """One measured read: rows, seconds and CPU seconds by process kind."""

    rows: int
    seconds: float
    cpu: dict[str, float]

    @property
    def rps(self) -> float:
        return self.rows / self.seconds

    @property
    def us_per_record(self) -> float:
        return sum(self.cpu.values()) / max(self.rows, 1) * 1e6

    def split(self) -> str:
        return ", ".join(f"{k} {v / max(self.rows, 1) * 1e6:.2f}" for k, v in self.cpu.items())


@dataclass(frozen=True)
class Cluster:
    name: str
    bootstrap: str
    #: librdkafka's security properties of the listener both sides read (none: PLAINTEXT).
    security: tuple[tuple[str, str], ...] = ()

    def java_options(self) -> dict[str, str]:
        """The same listener and credentials as ``format("kafka")``'s ``kafka.*`` options."""
        p = dict(self.security)
        if not p:
            return {}
        module = (
            "plain.PlainLoginModule" if p["sasl.mechanism"] == "PLAIN" else "scram.ScramLoginModule"
        )
        login = (
            f"org.apache.kafka.common.security.{module} required "
            f'username="{p["sasl.username"]}" password="{p["sasl.password"]}";'
        )
        return {
            "kafka.security.protocol": p["security.protocol"],
            "kafka.sasl.mechanism": p["sasl.mechanism"],
            "kafka.sasl.jaas.config": login,
            "kafka.ssl.truststore.type": "PEM",
            "kafka.ssl.truststore.location": p["ssl.ca.location"],
        }


def write_metadata(path: Path, clusters: Sequence[Cluster], topic: str) -> None:
    """Map stream ``bench`` to ``topic`` on every cluster (file metadata service)."""
    lines = ["clusters:"]
    for c in clusters:
        lines += [f"  {c.name}:", f"    bootstrap.servers: '{c.bootstrap}'"]
        lines += [f"    {key}: '{value}'" for key, value in c.security]
    lines += ["streams:", "  bench:"]
    for c in clusters:
        lines += [f"    - cluster: {c.name}", f"      topics: [{topic}]"]
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, path)


def dynamic_kafka(spark: Any, metadata: Path, reader: str | None = "python") -> Any:
    """``dynamic_kafka`` with the given ``reader`` (``python``: side ``dynamic_kafka``;
    ``native``: the compiled core, side ``native``; None: no ``reader`` option, for trees that
    predate it, see :mod:`.trees`)."""
    options = {
        "metadataService": "file",
        "metadataService.path": str(metadata),
        "streamIds": "bench",
        "startingOffsets": "earliest",
    }
    if reader is not None:
        options["reader"] = reader
    return spark.readStream.format("dynamic_kafka").options(**options).load()


def kafka(spark: Any, cluster: Cluster, topic: str) -> Any:
    return (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", cluster.bootstrap)
        .options(**cluster.java_options())
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "false")
        .load()
    )


def union_of_kafka(spark: Any, clusters: Sequence[Cluster], topic: str) -> Any:
    """The multi-cluster workaround: one ``format("kafka")`` per cluster, unioned."""
    frames = [kafka(spark, c, topic) for c in clusters]
    return functools.reduce(lambda a, b: a.union(b), frames)


def floor(spark: Any, rows: int, tasks: int) -> Any:
    return (
        spark.readStream.format("bench_floor")
        .option("rows", str(rows))
        .option("tasks", str(tasks))
        .load()
    )


def _seconds(stamp: str) -> float:
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _window(progress: list[dict[str, Any]]) -> tuple[int, float, float]:
    """(rows, start, end) of the ``addBatch`` spans of the batches that read rows."""
    rows, start, end = 0, float("inf"), 0.0
    for p in progress:
        if not p["numInputRows"]:
            continue
        d = p["durationMs"]
        done = _seconds(p["timestamp"]) + (d["triggerExecution"] - d.get("commitOffsets", 0)) / 1e3
        rows += int(p["numInputRows"])
        start = min(start, done - d["addBatch"] / 1e3)
        end = max(end, done)
    return rows, start, end


def measure(
    spark_jvm: int,
    frame: Callable[[], Any],
    total: int,
    timeout: float = 900.0,
    sink: Callable[[Any], Any] = lambda df: df.writeStream.format("noop"),
) -> Run:
    """Start a query on ``frame()`` writing to ``sink(frame)`` (a ``DataStreamWriter``; default
    the noop sink), wait until it read ``total`` rows, price it."""
    with CpuSampler({"spark": spark_jvm}) as sampler:
        query = sink(frame()).start()
        try:
            deadline = time.monotonic() + timeout
            while (read := sum(int(p["numInputRows"]) for p in query.recentProgress)) < total:
                if time.monotonic() > deadline or query.exception() is not None:
                    raise SystemExit(f"query read {read} of {total} rows: {query.exception()}")
                query.processAllAvailable()
            progress = list(query.recentProgress)
        finally:
            query.stop()
    rows, start, end = _window(progress)
    if rows != total:
        raise SystemExit(f"query read {rows} rows, expected {total}")
    return Run(rows, end - start, sampler.between("spark", start, end))


def bench_setup(*by_value: ModuleType) -> tuple[Path, list[Path]]:
    """The benchmarks' folder (``$BENCH_DIR``, made if missing) and the jars ``format("kafka")``
    needs on the installed PySpark; ``by_value``: modules the Spark sides pickle by value (the
    executors cannot import ``benchmarks``)."""
    workdir = Path(os.environ.get("BENCH_DIR", "/tmp/dynamic-kafka-bench"))
    workdir.mkdir(parents=True, exist_ok=True)
    for module in by_value:
        cloudpickle.register_pickle_by_value(module)
    # Imported here: benchmarks.tree_side imports this module on the old tree of benchmarks.trees,
    # whose testing package lacks what the Maven fetcher uses.
    from benchmarks.peers.maven import spark_kafka_jars

    return workdir, spark_kafka_jars(Path(pyspark.__file__).parent / "jars")
