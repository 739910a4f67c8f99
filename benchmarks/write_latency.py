"""Small micro-batches on the write side: what each batch costs and how long a record takes to
reach Kafka, ours (atLeastOnce and exactlyOnce) beside Spark's ``format("kafka")`` sink.

Spark's ``rate`` source makes ``--rate`` rows per second (default 1,000) in 2 partitions; each
row is a string key and a 100-byte value that starts with the row's ``timestamp`` in
microseconds. Every side is a streaming query on one warm ``local[2]`` session with a
``--trigger`` second trigger (default 1: about 1,000 rows a micro-batch), writing a fresh
8-partition topic with ``message.timestamp.type=LogAppendTime`` on one Apache Kafka cluster
(``SERVING_JVM_OPTIONS``). A record's **latency** is the broker's append time less the row's
``timestamp`` (the rate source's time for the row), read back with ``read_committed`` after
the query stops. It holds the wait for the next trigger, which differs between queries by up to a
trigger (the rate source counts whole seconds from its query's start, the trigger fires on the
clock's), so the sides are compared on the **time in the batch**: the append time less the start
of the micro-batch that wrote the record (the latest progress report's start before it). After
``--warmup`` seconds, everything of the next ``--seconds`` counts: the records whose row time
falls in the window, the progress reports of its micro-batches (``addBatch``,
``triggerExecution``: medians and p99) and the Spark process tree's CPU over the window, per
micro-batch.

Sides: ``kafka`` (Spark's sink, at-least-once), ``native`` and ``exactly_once_native`` (ours,
``writer=native``), ``exactly_once`` (``writer=python``) and ``floor`` (the write floor: rows
handed to a Python sink that drops them; no latency). The rows of ``exactly_once*`` less those of
``native`` are exactlyOnce's own per-batch overhead (a transaction per task, its begin, offsets
and commit, and the progress marker). A warm-up side each, then ``--rounds`` rounds of every side,
order reversed every other round; medians over rounds. Every window's records are checked: each
row time in it once (exactlyOnce: exactly once; atLeastOnce: at least once).
``python -m benchmarks.write_latency [--rounds R] [--seconds S] [--rate N] [--sides ...]
[--secure]`` (``--secure``: every side through the SASL_SSL listener with SCRAM-SHA-512).
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import datetime as dt
import os
import statistics
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from benchmarks import floor as floor_module
from benchmarks.floor import WriteFloorSink
from benchmarks.measure import ThreadSampler, load_average, spark_jvm
from benchmarks.sink import committed_messages, side_options
from benchmarks.spark_sides import Cluster, bench_setup, write_metadata
from benchmarks.write_floor import secure_listener

from pyspark_dynamic_kafka.testing import local_spark_session, start_clusters
from pyspark_dynamic_kafka.testing.kafka_config import SERVING_JVM_OPTIONS

SIDES = ["kafka", "native", "exactly_once_native", "exactly_once", "floor"]
PARTITIONS = 8
#: Each row: the key, and the value whose first field is the row's time in microseconds.
ROWS = [
    "CAST(value AS STRING) AS key",
    "CAST(rpad(concat(CAST(unix_micros(timestamp) AS STRING), ':'), 100, 'x') AS BINARY) AS value",
]


@dataclass(frozen=True)
class Window:
    """One side's measured window."""

    batches: int
    add_batch_ms: tuple[float, float]
    trigger_ms: tuple[float, float]
    cpu_ms_per_batch: float
    #: CPU ms per micro-batch: the JVM, the driver's Python planners, the Python workers.
    split: tuple[float, float, float]
    records: int
    latency_ms: tuple[float, float]
    #: The append time less the start of the micro-batch that wrote the record.
    in_batch_ms: tuple[float, float]


def percentiles(values: list[float]) -> tuple[float, float]:
    """p50 and p99 (nearest rank) of ``values``; NaNs when there are none."""
    if not values:
        return float("nan"), float("nan")
    ordered = sorted(values)
    return ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def read_back(cluster: Any, topic: str, since_us: int, until_us: int) -> list[tuple[int, int, int]]:
    """Every committed record of ``topic`` whose row time is in ``[since_us, until_us)``: (row
    time µs, append time ms, the rate source's value, the key)."""
    got = []
    for message in committed_messages(cluster, topic):
        row_us = int((message.value() or b"0:").split(b":", 1)[0])
        if since_us <= row_us < until_us:
            got.append((row_us, message.timestamp()[1], int(message.key() or b"-1")))
    return got


class Writes:
    """Each side's query on one warm session and cluster."""

    def __init__(
        self, spark: Any, cluster: Any, workdir: Path, rate: int, trigger: float, secure: bool
    ) -> None:
        self.spark, self.cluster, self.workdir = spark, cluster, workdir
        self.rate, self.trigger = rate, trigger
        plain = Cluster("w", cluster.bootstrap_servers)
        #: The listener every side writes through (``--secure``: SASL_SSL, SCRAM-SHA-512).
        self.listener = secure_listener(cluster) if secure else plain
        self.jvm = spark_jvm()

    def _sink(self, name: str) -> tuple[str, dict[str, str], str | None]:
        """(format, options, topic) of side ``name``."""
        if name == "floor":
            return "bench_write_floor", {"counts": str(self.workdir / f"{uuid.uuid4()}")}, None
        topic = f"l{uuid.uuid4().hex[:12]}"
        config = {"message.timestamp.type": "LogAppendTime"}
        self.cluster.create_topic(topic, partitions=PARTITIONS, config=config)
        metadata = self.workdir / f"{topic}.yaml"
        write_metadata(metadata, [self.listener], topic)
        fmt = "kafka" if name == "kafka" else "dynamic_kafka"
        return fmt, side_options(name, self.listener, topic, metadata), topic

    def run(self, name: str, warmup: float, seconds: float, checked: bool = True) -> Window:
        fmt, options, topic = self._sink(name)
        frame = self.spark.readStream.format("rate").options(
            rowsPerSecond=str(self.rate), numPartitions="2"
        )
        writer = frame.load().selectExpr(*ROWS).writeStream.format(fmt).options(**options)
        writer = writer.option("checkpointLocation", str(self.workdir / f"{uuid.uuid4()}.cp"))
        query = writer.trigger(processingTime=f"{self.trigger} seconds").start()
        try:
            start = time.time() + warmup
            while time.time() < start:
                self._alive(query, name)
                time.sleep(0.2)
            with ThreadSampler({"spark": self.jvm}, interval=0.2) as sampler:
                end = start + seconds
                while time.time() < end:
                    self._alive(query, name)
                    time.sleep(0.2)
            # the rows of the window reach Kafka: wait for a micro-batch that began after it
            deadline = time.time() + 120
            while not any(_began(p) > end for p in query.recentProgress):
                if time.time() > deadline:
                    raise SystemExit(f"{name}: no micro-batch ended within 120 s of the window")
                self._alive(query, name)
                time.sleep(0.2)
        finally:
            query.stop()
        reports = list(query.recentProgress)
        spans = progress(reports, start, end)
        cpu = sampler.between("spark", start, end)
        cpu_s = sum(cpu.values())
        planners = cpu.get("Python planner", 0.0)
        workers = sum(v for k, v in cpu.items() if k.startswith("Python")) - planners
        per_batch = 1000 / max(len(spans), 1)
        jvm = cpu_s - planners - workers
        split = (jvm * per_batch, planners * per_batch, workers * per_batch)
        latency: list[float] = []
        in_batch: list[float] = []
        records = 0
        if topic is not None:
            rows = read_back(self.cluster, topic, int(start * 1e6), int(end * 1e6))
            if checked:
                check(name, [key for _, _, key in rows])
            latency = [append_ms - row_us / 1000 for row_us, append_ms, _ in rows]
            in_batch = in_batches([append_ms for _, append_ms, _ in rows], reports)
            records = len(rows)
            self.cluster.delete_topic(topic)
        return Window(
            len(spans),
            percentiles([s[0] for s in spans]),
            percentiles([s[1] for s in spans]),
            cpu_s * per_batch,
            split,
            records,
            percentiles(latency),
            percentiles(in_batch),
        )

    @staticmethod
    def _alive(query: Any, name: str) -> None:
        if query.exception() is not None:
            raise SystemExit(f"{name}'s query failed: {query.exception()}")


def progress(reports: list[dict[str, Any]], start: float, end: float) -> list[tuple[float, float]]:
    """(addBatch, triggerExecution) ms of the window's micro-batches that had rows."""
    spans = []
    for p in reports:
        if start <= _began(p) < end and p["numInputRows"]:
            d = p["durationMs"]
            spans.append((float(d.get("addBatch", 0)), float(d.get("triggerExecution", 0))))
    return spans


def in_batches(appended_ms: list[int], reports: list[dict[str, Any]]) -> list[float]:
    """Each append time less the start of the latest micro-batch that began before it (ms);
    appends before the first report's start are left out."""
    starts = sorted(_began(p) * 1000 for p in reports)
    out = []
    for ms in appended_ms:
        at = bisect.bisect_right(starts, ms)
        if at:
            out.append(ms - starts[at - 1])
    return out


def _began(report: dict[str, Any]) -> float:
    """When the micro-batch of a progress report began (epoch seconds)."""
    return dt.datetime.fromisoformat(report["timestamp"].replace("Z", "+00:00")).timestamp()


def check(name: str, keys: list[int]) -> None:
    """The window's rows are all there (the rate source's values are consecutive) and, with
    exactlyOnce, each once."""
    counts = Counter(keys)
    if not counts:
        raise SystemExit(f"{name} wrote nothing in the window")
    missing = max(counts) - min(counts) + 1 - len(counts)
    twice = sum(1 for c in counts.values() if c > 1)
    if missing or (name.startswith("exactly_once") and twice):
        raise SystemExit(f"{name}: {missing} rows of the window missing, {twice} written twice")


@contextlib.contextmanager
def writes(rate: int, trigger: float, secure: bool) -> Iterator[Writes]:
    """:class:`Writes` in a warm session on one Apache Kafka cluster."""
    bench, jars = bench_setup(floor_module)
    workdir = bench / "write_latency"
    workdir.mkdir(exist_ok=True)
    kafka = start_clusters(
        ["w"], broker="kafka", tls=secure, scram=secure, jvm_options=SERVING_JVM_OPTIONS
    )
    with kafka as started:
        conf = {"spark.ui.showConsoleProgress": "false", "spark.jars": ",".join(map(str, jars))}
        spark = local_spark_session("dynamic-kafka-write-latency", 2, 1, **conf)
        spark.sparkContext.setLogLevel("ERROR")
        spark.dataSource.register(WriteFloorSink)
        try:
            yield Writes(spark, started["w"], workdir, rate, trigger, secure)
        finally:
            spark.stop()


def line(name: str, w: Window) -> str:
    """One side's row of the table (:data:`HEAD`)."""

    def pair(values: tuple[float, float]) -> str:
        return f"{values[0]:.0f} / {values[1]:.0f}"

    split = " / ".join(f"{v:.0f}" for v in w.split)
    cells = [name, str(w.batches), pair(w.add_batch_ms), pair(w.trigger_ms)]
    cells += [f"{w.cpu_ms_per_batch:.0f}", split, str(w.records), pair(w.latency_ms)]
    cells.append(pair(w.in_batch_ms))
    return "| " + " | ".join(cells) + " |"


HEAD = [
    "| side | batches | addBatch ms p50 / p99 | trigger ms p50 / p99 | CPU ms/batch | JVM / "
    "planners / workers | records | latency ms p50 / p99 | in batch ms p50 / p99 |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
]


def medians(windows: list[Window]) -> Window:
    """Each figure's median over rounds."""

    def med(values: list[float]) -> float:
        return statistics.median(values)

    return Window(
        int(med([w.batches for w in windows])),
        (med([w.add_batch_ms[0] for w in windows]), med([w.add_batch_ms[1] for w in windows])),
        (med([w.trigger_ms[0] for w in windows]), med([w.trigger_ms[1] for w in windows])),
        med([w.cpu_ms_per_batch for w in windows]),
        tuple(med([w.split[i] for w in windows]) for i in range(3)),  # type: ignore[arg-type]
        int(med([w.records for w in windows])),
        (med([w.latency_ms[0] for w in windows]), med([w.latency_ms[1] for w in windows])),
        (med([w.in_batch_ms[0] for w in windows]), med([w.in_batch_ms[1] for w in windows])),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=15.0)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--trigger", type=float, default=1.0)
    parser.add_argument("--sides", nargs="+", default=SIDES, choices=SIDES)
    parser.add_argument("--secure", action="store_true", help="SASL_SSL with SCRAM-SHA-512")
    args = parser.parse_args()
    results: dict[str, list[Window]] = {name: [] for name in args.sides}
    with writes(args.rate, args.trigger, args.secure) as sides:
        for name in args.sides:  # warm-up: each side once, briefly, unmeasured
            sides.run(name, 3.0, 5.0, checked=False)
        for rnd in range(1, args.rounds + 1):
            names = args.sides if rnd % 2 else list(reversed(args.sides))
            print(f"\nround {rnd}, load {load_average():.1f}", flush=True)
            print("\n".join(HEAD))
            for name in names:
                results[name].append(sides.run(name, args.warmup, args.seconds))
                print(line(name, results[name][-1]), flush=True)
    print(
        f"\n{args.rounds} rounds of {args.seconds:.0f} s at {args.rate} rows/s, trigger "
        f"{args.trigger} s, load now {load_average():.1f}; medians:"
    )
    print("\n".join(HEAD))
    table = {name: medians(windows) for name, windows in results.items()}
    for name, window in table.items():
        print(line(name, window))
    for ours in ("exactly_once_native", "exactly_once"):
        if ours in table and "native" in table:
            a, b = table[ours], table["native"]
            add = a.add_batch_ms[0] - b.add_batch_ms[0]
            cpu = a.cpu_ms_per_batch - b.cpu_ms_per_batch
            print(f"{ours} less native: addBatch p50 {add:+.0f} ms, CPU {cpu:+.0f} ms/batch")


if __name__ == "__main__":
    main()
