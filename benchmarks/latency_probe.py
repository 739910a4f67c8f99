"""Where a small micro-batch's time goes: the reader's calls timed, beside Spark's own spans.

The ``1k-default`` setting of :mod:`benchmarks.latency` (1,000 records/s into 4 partitions of one
Apache Kafka topic, default trigger, ``foreachBatch`` sink) on one warm ``local[2]`` session.
Every side reads through a probe subclass of its stream reader that appends the duration of each
call to a trace file: ``latestOffset``, ``reportLatestOffset``, ``partitions``, ``commit`` (the
planner process) and ``read`` (the Python workers: to its first batch and to its end, the time
Spark takes to ship each batch included). Spark's event log gives each job's span and each
task's launch and finish, so a task splits into *launch -> read()* (Spark: the task reaching the
Python worker, the read function and partition unpickled), *read()* (the source) and *read() end
-> finish* (Spark: the batch to the JVM, the task's end). Printed per side and round: latency
p50/p99, the medians of every ``durationMs`` span of the progress reports that read rows, of the
probe's calls and of the jobs and tasks in the same window.

Sides: ``dynamic_kafka`` (as planned by default); ``dynamic_kafka-2-tasks`` (``minPartitions=2``:
every micro-batch cut into two tasks, what the default was before small micro-batches became one
task); ``python`` and ``python-1-task``: the trivial Python source of :mod:`benchmarks.clock`
with 2 tasks (its default) and with 1.

Run with ``python -m benchmarks.latency_probe [--seconds S] [--rounds N] [--sides ...]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import os
import statistics
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from benchmarks import clock as clock_module
from benchmarks import floor as floor_module
from benchmarks.latency import PARTITIONS, TOPIC, _Producing
from benchmarks.measure import load_average
from benchmarks.spark_sides import Cluster, write_metadata
from pyspark import cloudpickle

from pyspark_dynamic_kafka.datasource import DynamicKafkaDataSource
from pyspark_dynamic_kafka.source.stream import DynamicKafkaStreamReader
from pyspark_dynamic_kafka.testing import local_spark_session, start_clusters

_TRACE = "DYNAMIC_KAFKA_PROBE_TRACE"
_CALLS = ("latestOffset", "reportLatestOffset", "partitions", "commit")
SIDES = ["dynamic_kafka", "dynamic_kafka-2-tasks", "python", "python-1-task"]


def _note(side: str, call: str, started: float) -> None:
    ms = (time.perf_counter() - started) * 1000
    with open(os.environ[_TRACE], "a") as out:
        out.write(f"{side} {call} {time.time()} {ms:.3f}\n")


def _timed(side: str, cls: type) -> type:
    """A subclass of the stream reader ``cls`` whose driver calls and reads are timed."""

    def wrap(name: str) -> Any:
        inner = getattr(cls, name)

        @functools.wraps(inner)  # Spark reads latestOffset's signature
        def call(self: Any, *args: Any) -> Any:
            started = time.perf_counter()
            try:
                return inner(self, *args)
            finally:
                _note(side, name, started)

        return call

    def read(self: Any, partition: Any) -> Iterator[Any]:
        started, first = time.perf_counter(), True
        for batch in cls.read(self, partition):
            if first:
                _note(side, "read-first-batch", started)
                first = False
            yield batch
        _note(side, "read", started)

    return type(f"Timed{cls.__name__}", (cls,), {**{n: wrap(n) for n in _CALLS}, "read": read})


class ProbeDynamicKafka(DynamicKafkaDataSource):
    """``dynamic_kafka`` with a timed reader."""

    @classmethod
    def name(cls) -> str:
        return "dk_probe"

    def streamReader(self, schema: Any) -> Any:
        reader = super().streamReader(schema)
        reader.__class__ = _timed("dynamic_kafka", DynamicKafkaStreamReader)
        return reader


class ProbeClock(clock_module.ClockSource):
    """The trivial Python source with a timed reader."""

    reader = _timed("python", clock_module.ClockStreamReader)

    @classmethod
    def name(cls) -> str:
        return "clock_probe"


def _spans(query: Any, since: float) -> dict[str, float]:
    """Medians of the progress spans of the micro-batches that read rows since ``since``."""
    spans: dict[str, list[float]] = defaultdict(list)
    for p in query.recentProgress:
        stamp = dt.datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp()
        if stamp >= since and p["numInputRows"]:
            d = p["durationMs"]
            for k, v in d.items():
                spans[k].append(v)
            spans["trigger - addBatch"].append(d["triggerExecution"] - d.get("addBatch", 0))
            spans["batches"].append(1)
    return {k: sum(v) if k == "batches" else statistics.median(v) for k, v in spans.items()}


def _trace(trace: Path, label: str, since: float, until: float) -> dict[str, list[float]]:
    """Per call of ``label``'s reader ending in the window: [duration ms, end epoch s, ...]."""
    calls: dict[str, list[float]] = defaultdict(list)
    for line in trace.read_text().splitlines() if trace.exists() else []:
        side, call, at, ms = line.split()
        if side == label and since <= float(at) <= until:
            calls[call] += [float(ms), float(at)]
    return calls


def _jobs(events: Path, since: float, until: float, reads: list[float]) -> dict[str, float]:
    """Medians over the jobs and tasks of the event log in the window; ``reads`` (duration ms,
    end) pairs place each ``read()`` inside its task."""
    jobs: dict[int, list[float]] = {}
    tasks: list[tuple[float, float]] = []
    for path in events.rglob("local-*"):
        for line in path.read_text().splitlines():
            e = json.loads(line)
            kind = e["Event"]
            if kind == "SparkListenerJobStart":
                jobs[e["Job ID"]] = [e["Submission Time"] / 1000]
            elif kind == "SparkListenerJobEnd" and e["Job ID"] in jobs:
                jobs[e["Job ID"]].append(e["Completion Time"] / 1000)
            elif kind == "SparkListenerTaskEnd":
                info = e["Task Info"]
                tasks.append((info["Launch Time"] / 1000, info["Finish Time"] / 1000))
    spans = [(j[1] - j[0]) * 1000 for j in jobs.values() if since <= j[0] <= until and len(j) > 1]
    inside = [t for t in tasks if since <= t[0] <= until]
    before, after = [], []
    for ms, end in zip(reads[::2], reads[1::2], strict=True):
        start = end - ms / 1000
        for launch, finish in inside:
            if launch <= start and end <= finish + 0.002:
                before.append((start - launch) * 1000)
                after.append((finish - end) * 1000)
                break

    def med(values: list[float]) -> float:
        return round(statistics.median(values), 1) if values else float("nan")

    return {
        "jobs": len(spans),
        "job": med(spans),
        "tasks": len(inside),
        "task": med([(f - s) * 1000 for s, f in inside]),
        "launch -> read()": med(before),
        "read() end -> finish": med(after),
    }


def _side(
    spark: Any, fmt: str, options: dict[str, str], warmup: float, seconds: float
) -> tuple[float, float, dict[str, float], float, float]:
    """Run one query; latency p50, p99, progress spans and the measured window."""
    import numpy as np

    frame = spark.readStream.format(fmt).options(**options).load()
    frame = frame.selectExpr("CAST(timestamp AS DOUBLE) AS t")
    start = time.time() + warmup
    end = start + seconds
    seen: list[Any] = []

    def collect(df: Any, batch_id: int) -> None:
        stamps = df.toArrow().column("t").to_numpy()
        now = time.time()
        if start <= now <= end:
            seen.append(now - stamps)

    query = frame.writeStream.foreachBatch(collect).start()
    try:
        while time.time() < end:
            if query.exception() is not None:
                raise SystemExit(f"query failed: {str(query.exception())[:3000]}")
            time.sleep(0.5)
        spans = _spans(query, start)
    finally:
        query.stop()
    lat = np.concatenate(seen) * 1000 if seen else np.array([float("nan")])
    return float(np.percentile(lat, 50)), float(np.percentile(lat, 99)), spans, start, end


def _sides(metadata: Path) -> dict[str, tuple[str, dict[str, str]]]:
    source = {
        "metadataService": "file",
        "metadataService.path": str(metadata),
        "streamIds": "bench",
        "startingOffsets": "latest",
    }
    return {
        "dynamic_kafka": ("dk_probe", source),
        "dynamic_kafka-2-tasks": ("dk_probe", {**source, "minPartitions": "2"}),
        "python": ("clock_probe", {"rate": "1000"}),
        "python-1-task": ("clock_probe", {"rate": "1000", "tasks": "1"}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="measured seconds per side")
    parser.add_argument("--warmup", type=float, default=6.0, help="seconds before measuring")
    parser.add_argument("--rounds", type=int, default=2, help="rounds over the sides")
    parser.add_argument("--sides", nargs="+", default=SIDES, choices=SIDES)
    args = parser.parse_args()
    workdir = Path(os.environ.get("BENCH_DIR", "/tmp/dynamic-kafka-bench"))
    workdir.mkdir(parents=True, exist_ok=True)
    trace = workdir / f"probe-{time.time_ns()}.txt"
    events = workdir / f"probe-events-{time.time_ns()}"
    events.mkdir()
    os.environ[_TRACE] = str(trace)  # before the session: its Python processes inherit it
    for module in (clock_module, floor_module):
        cloudpickle.register_pickle_by_value(module)
    with ExitStack() as stack:
        kafka = stack.enter_context(start_clusters(["probe0"], broker="kafka"))["probe0"]
        kafka.create_topic(TOPIC, partitions=PARTITIONS)
        metadata = workdir / "probe.yaml"
        write_metadata(metadata, [Cluster("probe0", kafka.bootstrap_servers)], TOPIC)
        spark = local_spark_session(
            "dynamic-kafka-probe",
            **{
                "spark.ui.showConsoleProgress": "false",
                "spark.eventLog.enabled": "true",
                "spark.eventLog.dir": str(events),
                "spark.eventLog.compress": "false",
                "spark.eventLog.rolling.enabled": "false",
            },
        )
        spark.sparkContext.setLogLevel("ERROR")
        spark.dataSource.register(ProbeDynamicKafka)
        spark.dataSource.register(ProbeClock)
        producing = _Producing([kafka.bootstrap_servers], 1000)
        try:
            sides = {k: v for k, v in _sides(metadata).items() if k in args.sides}
            for r in range(args.rounds + 1):  # round 0 warms the session up
                for side, (fmt, options) in sides.items():
                    if fmt == "clock_probe":
                        options = {**options, "t0": repr(time.time())}
                    load = load_average()
                    warmup, seconds = (args.warmup, args.seconds) if r else (3.0, 4.0)
                    p50, p99, spans, since, until = _side(spark, fmt, options, warmup, seconds)
                    if not r:
                        continue
                    label = "python" if fmt == "clock_probe" else "dynamic_kafka"
                    calls = _trace(trace, label, since, until)
                    timed = {k: round(statistics.median(v[::2]), 1) for k, v in calls.items()}
                    jobs = _jobs(events, since, until, calls.get("read", []))
                    print(f"round {r} {side}: load {load:.1f}, p50 {p50:.0f} ms, p99 {p99:.0f} ms")
                    print(
                        "    progress spans (median ms):", {k: round(v) for k, v in spans.items()}
                    )
                    print("    reader calls (median ms):", timed)
                    print("    jobs and tasks (median ms):", jobs, flush=True)
        finally:
            producing.close()
        spark.stop()


if __name__ == "__main__":
    main()
