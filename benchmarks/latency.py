"""End-to-end latency of small micro-batches: ``dynamic_kafka`` beside Spark's ``format("kafka")``.

A producer process writes ``rate`` records per second (100 bytes, round-robin into 4 partitions of
topic ``lat``) on Apache Kafka, all the time a case runs; each side is a streaming query started
at the latest offsets on one warm ``local[2]`` session. The latency of a record is the time the
query's sink sees it minus its produce time (its Kafka ``timestamp``, CreateTime set by the
producer): with ``foreachBatch`` (the default sink) the moment the batch's timestamps are
collected on the driver; in the case ``1k-async-progress`` every side writes with ``foreach``
instead (``asyncProgressTrackingEnabled`` is allowed on the noop, console, memory, Kafka and
``foreach`` sinks only in Spark 4.3), the moment an executor's writer sees the row, and the
sides ``+apt`` turn async progress tracking on. After a warm-up, every record of ``--seconds``
seconds counts; ``addBatch``, ``triggerExecution`` and ``latestOffset`` are the medians of the
progress reports of the micro-batches that read rows in that window.

Sides: ``dynamic_kafka``; ``kafka`` (Spark's own source); ``python``: a trivial Python stream
source without Kafka (:mod:`benchmarks.clock`, Spark's own cost per Python micro-batch);
``flink``: Flink's ``DynamicKafkaSource`` on a local mini-cluster of parallelism 2
(:mod:`benchmarks.peers.flink`), an unbounded job from the latest offsets whose sink notes each
record's latency the same way (no micro-batches: its progress columns are empty); Flink's latency
is the anchor to approach. The variant cases add ``dynamic_kafka`` with ``assignment=group``, with
``monitoring.attach``, over 3 clusters (beside a union of three ``format("kafka")``), and both
Kafka sides with and without ``asyncProgressTrackingEnabled``; the ``*-readers`` cases
``dynamic_kafka`` with ``reader=native`` (pooled consumers), with ``reader=native`` and
``kafkaConsumer.cacheTimeoutMs=0`` (``native-unpooled``: a new consumer per task) and with
``reader=python`` (``pyreader``).

Targets (issue 21, on a quiet machine): at 1,000 records/s with the default trigger, p50 at most
1.5x and p99 at most 2x ``kafka``'s; median ``addBatch`` at most 2x ``python``'s. Ratios are
printed per case; results go to ``$BENCH_DIR/latency.json``.

Run with ``make bench`` or ``python -m benchmarks.latency [--seconds S] [--cases ...]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from benchmarks import clock as clock_module
from benchmarks import floor as floor_module
from benchmarks.measure import load_average
from benchmarks.peers.flink import FlinkPeer
from benchmarks.spark_sides import Cluster, bench_setup, write_metadata

from pyspark_dynamic_kafka.monitoring import attach
from pyspark_dynamic_kafka.testing import local_spark_session, start_clusters
from pyspark_dynamic_kafka.testing.kafka_jars import find_java

TOPIC = "lat"
PARTITIONS = 4
#: name: (records per second, trigger seconds (0: as fast as possible), sides, clusters)
CASES: dict[str, tuple[int, float, list[str], int]] = {
    "1k-default": (1000, 0, ["dynamic_kafka", "kafka", "python", "flink"], 1),
    "1k-1s": (1000, 1, ["dynamic_kafka", "kafka", "python"], 1),
    "20k-default": (20000, 0, ["dynamic_kafka", "kafka", "python", "flink"], 1),
    "20k-1s": (20000, 1, ["dynamic_kafka", "kafka", "python"], 1),
    "1k-variants": (1000, 0, ["dynamic_kafka", "group", "monitoring", "kafka"], 1),
    "1k-3-clusters": (1000, 0, ["dynamic_kafka", "union"], 3),
    "1k-async-progress": (1000, 0, ["dynamic_kafka", "dynamic_kafka+apt", "kafka", "kafka+apt"], 1),
    "1k-readers": (1000, 0, ["native", "native-unpooled", "pyreader", "kafka"], 1),
    "20k-readers": (20000, 0, ["native", "native-unpooled", "pyreader", "kafka"], 1),
}

#: Cases whose sides all write with ``foreach`` (async progress tracking refuses foreachBatch).
FOREACH_CASES = {"1k-async-progress"}


@dataclass
class Result:
    """One side of one case: latency percentiles (ms) and progress medians (ms)."""

    p50: float
    p99: float
    add_batch: float
    trigger: float
    latest_offset: float
    batches: int
    rows_per_s: float


def _produce(bootstraps: list[str], rate: float, stop: Any, ready: Any) -> None:
    """Producer process: ``rate`` records/s in total, spread over the clusters' partitions."""
    from confluent_kafka import Producer

    producers = [Producer({"bootstrap.servers": b, "linger.ms": 2}) for b in bootstraps]
    value = bytes(100)
    ready.set()
    sent, t0 = 0, time.monotonic()
    while not stop.is_set():
        for _ in range(10):
            producers[sent % len(producers)].produce(
                TOPIC, value, partition=(sent // len(producers)) % PARTITIONS
            )
            sent += 1
        for p in producers:
            p.poll(0)
        ahead = t0 + sent / rate - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    for p in producers:
        p.flush(30)


class _Producing:
    """The producer process, for the duration of one case."""

    def __init__(self, bootstraps: list[str], rate: float) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._stop, ready = ctx.Event(), ctx.Event()
        self._process = ctx.Process(target=_produce, args=(bootstraps, rate, self._stop, ready))
        self._process.start()
        if not ready.wait(60):
            raise SystemExit("the producer process did not start")

    def close(self) -> None:
        self._stop.set()
        self._process.join(60)


class _LatencyWriter:
    """``foreach`` sink: each row's latency, appended to a file per task."""

    def __init__(self, path: str) -> None:
        self.path = path

    def open(self, partition_id: int, epoch_id: int) -> bool:
        self.seen: list[float] = []
        return True

    def process(self, row: Any) -> None:
        self.seen.append((time.time(), row.t))

    def close(self, error: Any) -> None:
        if self.seen:
            with open(self.path, "a") as out:
                out.write("".join(f"{now} {now - t}\n" for now, t in self.seen))


def _frames(spark: Any, workdir: Path, clusters: list[Cluster]) -> dict[str, Callable[[], Any]]:
    from pyspark.sql import functions as F

    metadata = workdir / f"latency-{len(clusters)}.yaml"
    write_metadata(metadata, clusters, TOPIC)

    def dynamic(**options: str) -> Any:
        source = {
            "metadataService": "file",
            "metadataService.path": str(metadata),
            "streamIds": "bench",
            "startingOffsets": "latest",
        }
        return spark.readStream.format("dynamic_kafka").options(**{**source, **options}).load()

    def kafka(cluster: Cluster) -> Any:
        return (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", cluster.bootstrap)
            .option("subscribe", TOPIC)
            .option("startingOffsets", "latest")
            .load()
        )

    def union() -> Any:
        frames = [kafka(c).select("timestamp") for c in clusters]
        result = frames[0]
        for frame in frames[1:]:
            result = result.union(frame)
        return result

    group = f"latency-{time.time_ns()}"
    frames: dict[str, Callable[[], Any]] = {
        "dynamic_kafka": dynamic,
        "group": lambda: dynamic(**{"assignment": "group", "kafka.group.id": group}),
        "monitoring": dynamic,
        "native": lambda: dynamic(reader="native"),
        "native-unpooled": lambda: dynamic(
            reader="native", **{"kafkaConsumer.cacheTimeoutMs": "0"}
        ),
        "pyreader": lambda: dynamic(reader="python"),
        "kafka": lambda: kafka(clusters[0]),
        "union": union,
    }
    return {
        k: (lambda f=f: f().select(F.col("timestamp").cast("double").alias("t")))
        for k, f in frames.items()
    }


def _progress(query: Any, since: float) -> tuple[float, float, float, int]:
    """Medians of addBatch, triggerExecution and latestOffset of the batches that read rows."""
    import datetime as dt

    spans: list[tuple[float, float, float]] = []
    for p in query.recentProgress:
        stamp = dt.datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp()
        if stamp >= since and p["numInputRows"]:
            d = p["durationMs"]
            spans.append(
                (d.get("addBatch", 0), d.get("triggerExecution", 0), d.get("latestOffset", 0))
            )
    if not spans:
        return float("nan"), float("nan"), float("nan"), 0
    return (
        statistics.median(s[0] for s in spans),
        statistics.median(s[1] for s in spans),
        statistics.median(s[2] for s in spans),
        len(spans),
    )


def _run(
    spark: Any,
    frame: Any,
    trigger: float,
    sink: tuple[bool, bool],
    warmup: float,
    seconds: float,
    scratch: Path,
) -> Result:
    """Run one query for ``warmup + seconds``; the latencies of the records seen after warm-up.

    ``sink``: (``foreach`` rather than ``foreachBatch``, ``asyncProgressTrackingEnabled``).
    """
    import numpy as np

    seen: list[Any] = []
    start = time.time() + warmup
    end = start + seconds
    foreach, apt = sink
    out = scratch / f"foreach-{time.time_ns()}.txt"
    if foreach:  # the executors write latencies to a file
        writer = frame.writeStream.foreach(_LatencyWriter(str(out)))
        if apt:
            writer = writer.option("asyncProgressTrackingEnabled", "true")
    else:

        def collect(df: Any, batch_id: int) -> None:
            stamps = df.toArrow().column("t").to_numpy()
            now = time.time()
            if start <= now <= end:
                seen.append(now - stamps)

        writer = frame.writeStream.foreachBatch(collect)
    if trigger:
        writer = writer.trigger(processingTime=f"{trigger} seconds")
    query = writer.start()
    try:
        while time.time() < end:
            if query.exception() is not None:
                raise SystemExit(f"query failed: {query.exception()}")
            time.sleep(0.5)
        add_batch, trigger_ms, latest_ms, batches = _progress(query, start)
    finally:
        query.stop()
    if foreach and out.exists():
        pairs = np.loadtxt(out, ndmin=2)
        seen = [pairs[(pairs[:, 0] >= start) & (pairs[:, 0] <= end), 1]]
    latencies = np.concatenate(seen) * 1000 if seen else np.array([])
    rows = len(latencies)
    if not rows:  # no micro-batch ended in the window (a heavily loaded machine)
        latencies = np.array([float("nan")])
    return Result(
        float(np.percentile(latencies, 50)),
        float(np.percentile(latencies, 99)),
        add_batch,
        trigger_ms,
        latest_ms,
        batches,
        rows / seconds,
    )


def _flink_side(flink: FlinkPeer, clusters: list[Cluster], warmup: float, seconds: float) -> Result:
    nan = float("nan")
    rows, p50, p99 = flink.latency(warmup, seconds, TOPIC, {c.name: c.bootstrap for c in clusters})
    if not rows:
        p50 = p99 = nan
    return Result(p50, p99, nan, nan, nan, 0, rows / seconds)


def _case(
    spark: Any,
    name: str,
    clusters: list[Cluster],
    workdir: Path,
    warmup: float,
    seconds: float,
    flink: FlinkPeer | None = None,
) -> dict[str, Result]:
    rate, trigger, sides, count = CASES[name]
    used = clusters[:count]
    frames = _frames(spark, workdir, used)
    frames["python"] = lambda: (
        spark.readStream.format("bench_clock")
        .option("rate", str(rate))
        .option("t0", repr(time.time()))
        .load()
    ).selectExpr("CAST(timestamp AS DOUBLE) AS t")
    results: dict[str, Result] = {}
    producing = _Producing([c.bootstrap for c in used], rate)
    try:
        for side in sides:
            if side == "flink":
                if flink is not None:
                    results[side] = _flink_side(flink, used, warmup, seconds)
                continue
            base, apt = side.removesuffix("+apt"), side.endswith("+apt")
            sink = (name in FOREACH_CASES, apt)
            monitor = (
                attach(spark, path=workdir / "monitoring.jsonl") if side == "monitoring" else None
            )
            try:
                results[side] = _run(spark, frames[base](), trigger, sink, warmup, seconds, workdir)
            finally:
                if monitor is not None:
                    monitor.detach()
    finally:
        producing.close()
    return results


def _report(name: str, results: dict[str, Result], load: float) -> str:
    rate, trigger, _, count = CASES[name]
    head = (
        f"{name}: {rate:,} records/s, trigger {'default' if not trigger else f'{trigger:g} s'}, "
        f"{count} cluster(s), load {load:.1f}"
    )
    lines = [
        head,
        f"    {'side':<20}{'p50 ms':>9}{'p99 ms':>9}{'addBatch':>10}{'trigger':>9}"
        f"{'latest':>8}{'batches':>9}{'rows/s':>9}",
    ]
    for side, r in results.items():
        lines.append(
            f"    {side:<20}{r.p50:>9.0f}{r.p99:>9.0f}{r.add_batch:>10.0f}{r.trigger:>9.0f}"
            f"{r.latest_offset:>8.0f}{r.batches:>9}{r.rows_per_s:>9.0f}"
        )
    ratios = []
    for ours, peer in [
        ("dynamic_kafka", "kafka"),
        ("dynamic_kafka", "union"),
        ("group", "kafka"),
        ("monitoring", "kafka"),
        ("dynamic_kafka+apt", "kafka+apt"),
        ("dynamic_kafka", "flink"),
        ("kafka", "flink"),
        ("native", "pyreader"),
        ("native", "native-unpooled"),
        ("native", "kafka"),
        ("pyreader", "kafka"),
    ]:
        if ours in results and peer in results:
            a, b = results[ours], results[peer]
            ratios.append(f"{ours}/{peer} p50 {a.p50 / b.p50:.2f}x p99 {a.p99 / b.p99:.2f}x")
    if "dynamic_kafka" in results and "python" in results:
        a, b = results["dynamic_kafka"], results["python"]
        ratios.append(f"dynamic_kafka/python addBatch {a.add_batch / b.add_batch:.2f}x")
    if "native" in results and "pyreader" in results:
        a, b = results["native"], results["pyreader"]
        ratios.append(f"native/pyreader addBatch {a.add_batch / b.add_batch:.2f}x")
    if "native" in results and "native-unpooled" in results:
        a, b = results["native"], results["native-unpooled"]
        ratios.append(f"native/native-unpooled addBatch {a.add_batch / b.add_batch:.2f}x")
    for side in ("dynamic_kafka", "kafka"):
        if side in results and f"{side}+apt" in results:
            a, b = results[f"{side}+apt"], results[side]
            ratios.append(f"{side} async progress on/off p50 {a.p50 / b.p50:.2f}x")
    return "\n".join([*lines, *(f"    {r}" for r in ratios)])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="measured seconds per side")
    parser.add_argument("--warmup", type=float, default=8.0, help="seconds before measuring")
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--no-flink", action="store_true", help="leave Flink's side out")
    args = parser.parse_args()
    # bench_clock builds on the floor's module
    workdir, jars = bench_setup(clock_module, floor_module)
    count = max(CASES[c][3] for c in args.cases)
    results: dict[str, dict[str, Result]] = {}
    with ExitStack() as stack:
        started = stack.enter_context(
            start_clusters([f"lat{i}" for i in range(count)], broker="kafka")
        )
        for cluster in started.values():
            cluster.create_topic(TOPIC, partitions=PARTITIONS)
        clusters = [Cluster(n, c.bootstrap_servers) for n, c in started.items()]
        spark = local_spark_session(
            "dynamic-kafka-latency",
            **{
                "spark.ui.showConsoleProgress": "false",
                "spark.jars": ",".join(map(str, jars)),
                "spark.sql.streaming.numRecentProgressUpdates": "1000",
            },
        )
        spark.sparkContext.setLogLevel("ERROR")
        spark.dataSource.register(clock_module.ClockSource)
        flink = None
        if not args.no_flink and any("flink" in CASES[c][2] for c in args.cases):
            flink = stack.enter_context(FlinkPeer(find_java(), workdir / "flink-latency.log"))
        # warm the JVMs and the Python workers up (the first queries of a session are slow)
        _case(spark, "1k-default", clusters, workdir, 3.0, 4.0, flink)
        for name in args.cases:
            load = load_average()
            results[name] = _case(spark, name, clusters, workdir, args.warmup, args.seconds, flink)
            print(_report(name, results[name], load), flush=True)
        spark.stop()
    out = workdir / "latency.json"
    out.write_text(
        json.dumps(
            {c: {s: asdict(r) for s, r in rs.items()} for c, rs in results.items()}, indent=1
        )
    )
    print(f"results: {out}, load average now {load_average():.1f}")


if __name__ == "__main__":
    main()
