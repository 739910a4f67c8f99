"""The whole query as a user times it: ``start()`` to the end of an ``AvailableNow`` drain, and a
batch read from ``load()`` to the written result, side by side in one warm Spark session.

``make bench``'s other figures are the read window (the first micro-batch's ``addBatch``); a user
who runs an incremental job every few minutes pays the query's start and stop too. Sides, on the
data of :mod:`.run`'s cases (same brokers, same 2,000,000 records):

* ``native``: ``dynamic_kafka`` (``reader`` left to ``auto``: the compiled core where installed);
* ``kafka`` (1x8) or ``union`` (3x4): Spark's own ``format("kafka")``, one per cluster unioned;
* ``floor``: ``benchmarks/floor.py``, a trivial Python stream source of as many rows (what any
  Python source pays to start, plan and stop, with nothing to list or read).

Each side is a new query with a noop sink. Wall time is from just before ``start()`` (or
``load()``) to just after ``awaitTermination()`` (or ``save()``) returns; CPU is the Spark process
tree's (the JVM and every Python process it started) over that span. From the query's progress,
the time inside triggers (``triggerExecution``, its ``addBatch`` and the rest) is told apart from
the time outside every trigger (query start, the source's first offsets, termination). Rounds run
the sides interleaved, order reversed every other round, after a warm-up round; ratios ours / peer
per round and their medians are printed. Run: ``python -m benchmarks.whole_query``.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

import pyspark
from benchmarks import floor as floor_module
from benchmarks import report
from benchmarks.measure import CpuSampler, load_average, spark_jvm
from benchmarks.peers.maven import spark_kafka_jars
from benchmarks.run import CASES, _tasks, load
from benchmarks.spark_sides import Cluster, dynamic_kafka, floor, kafka, union_of_kafka
from benchmarks.spark_sides import write_metadata as write_bench_metadata
from pyspark import cloudpickle

from pyspark_dynamic_kafka.testing import local_spark_session, set_scram_password, start_clusters
from pyspark_dynamic_kafka.testing.kafka_config import SERVING_JVM_OPTIONS


@dataclass(frozen=True)
class Query:
    """One whole query: rows, wall seconds, CPU seconds, and seconds inside / outside triggers."""

    rows: int
    seconds: float
    cpu: float
    inside: float
    add_batch: float


def _progress_times(progress: list[dict[str, Any]]) -> tuple[int, float, float]:
    rows = sum(int(p["numInputRows"]) for p in progress)
    inside = sum(p["durationMs"].get("triggerExecution", 0) for p in progress) / 1e3
    add_batch = sum(p["durationMs"].get("addBatch", 0) for p in progress) / 1e3
    return rows, inside, add_batch


def drain(jvm: int, frame: Callable[[], Any], total: int, timeout: float = 900.0) -> Query:
    """Start an ``AvailableNow`` query on ``frame()`` into the noop sink; wait for it to end."""
    with CpuSampler({"spark": jvm}) as sampler:
        started = time.time()
        query = frame().writeStream.format("noop").trigger(availableNow=True).start()
        ended = query.awaitTermination(timeout)
        done = time.time()
    if not ended or query.exception() is not None:
        query.stop()
        raise SystemExit(f"the query did not end cleanly: {query.exception()}")
    rows, inside, add_batch = _progress_times(list(query.recentProgress))
    if rows != total:
        raise SystemExit(f"query read {rows} rows, expected {total}")
    cpu = sum(sampler.between("spark", started, done).values())
    return Query(rows, done - started, cpu, inside, add_batch)


def batch(jvm: int, frame: Callable[[], Any], total: int) -> Query:
    """A batch read, ``load()`` to the noop sink's ``save()``."""
    with CpuSampler({"spark": jvm}) as sampler:
        started = time.time()
        frame().write.format("noop").mode("overwrite").save()
        done = time.time()
    cpu = sum(sampler.between("spark", started, done).values())
    return Query(total, done - started, cpu, done - started, done - started)


def _sides(
    case: str, data: dict[str, Any], spark: Any, workdir: Path
) -> dict[str, Callable[[], Query]]:
    clusters: list[Cluster] = data["clusters"]
    topic, total = data["topic"], data["total"]
    jvm = spark_jvm()
    metadata = workdir / f"whole-{case}.yaml"
    write_bench_metadata(metadata, clusters, topic)

    def ours() -> Any:
        return dynamic_kafka(spark, metadata, None)

    def peer() -> Any:
        if len(clusters) == 1:
            return kafka(spark, clusters[0], topic)
        return union_of_kafka(spark, clusters, topic)

    def ours_batch() -> Any:
        options = {"metadataService": "file", "metadataService.path": str(metadata)}
        options |= {"streamIds": "bench", "startingOffsets": "earliest"}
        return spark.read.format("dynamic_kafka").options(**options).load()

    def peer_batch() -> Any:
        frames = [
            spark.read.format("kafka")
            .option("kafka.bootstrap.servers", c.bootstrap)
            .options(**c.java_options())
            .option("subscribe", topic)
            .load()
            for c in clusters
        ]
        out = frames[0]
        for other in frames[1:]:
            out = out.union(other)
        return out

    name = "kafka" if len(clusters) == 1 else "union"
    tasks = _tasks(data["shares"])
    return {
        "native": lambda: drain(jvm, ours, total),
        name: lambda: drain(jvm, peer, total),
        "floor": lambda: drain(jvm, lambda: floor(spark, total, tasks), total),
        "native batch": lambda: batch(jvm, ours_batch, total),
        f"{name} batch": lambda: batch(jvm, peer_batch, total),
    }


def _line(name: str, q: Query) -> str:
    return (
        f"{name:14} {q.rows / q.seconds:>11,.0f} rows/s  {q.seconds:6.2f} s "
        f"(triggers {q.inside:5.2f}, addBatch {q.add_batch:5.2f}, "
        f"outside {q.seconds - q.inside:5.2f})  "
        f"{q.cpu / max(q.rows, 1) * 1e6:5.2f} us/record"
    )


def _ratios(runs: dict[str, Query]) -> list[tuple[str, str]]:
    """(ours/peer, its rows/s and CPU ratios and both sides' time outside triggers)."""
    out = []
    for ours, peer in [("native", "kafka"), ("native", "union"), ("native", "floor")]:
        for suffix in ("", " batch"):
            a, b = runs.get(ours + suffix), runs.get(peer + suffix)
            if a is None or b is None:
                continue
            rps = (a.rows / a.seconds) / (b.rows / b.seconds)
            cpu = (a.cpu / a.rows) / (b.cpu / b.rows)
            text = (
                f"{rps:.2f}x rows/s {cpu:.2f}x CPU, outside {a.outside:.2f} s vs {b.outside:.2f} s"
            )
            out.append((f"{ours}{suffix}/{peer}{suffix}", text))
    return out


def main() -> None:
    parser = report.parser(__doc__, 2_000_000)
    parser.add_argument(
        "--cases", nargs="+", default=["kafka-1x8", "kafka-3x4"], choices=list(CASES)
    )
    args = parser.parse_args()
    workdir = Path(os.environ.get("BENCH_DIR", "/tmp/dynamic-kafka-bench"))
    workdir.mkdir(parents=True, exist_ok=True)
    jars = spark_kafka_jars(Path(pyspark.__file__).parent / "jars")
    cloudpickle.register_pickle_by_value(floor_module)
    count = max(CASES[c][1] for c in args.cases)
    secured = any(CASES[c][3] for c in args.cases)
    results: dict[str, list[dict[str, Query]]] = {c: [] for c in args.cases}
    with ExitStack() as stack:
        names = [f"kafka{i}" for i in range(count)]
        clusters = start_clusters(
            names, broker="kafka", tls=secured, scram=secured, jvm_options=SERVING_JVM_OPTIONS
        )
        started = {"kafka": stack.enter_context(clusters)}
        for cluster in started["kafka"].values() if secured else ():
            set_scram_password(cluster, "bench", "bench-scram-password")
        data = {case: load(started, case, args.records, args.size) for case in args.cases}
        spark = local_spark_session(
            "dynamic-kafka-whole-query",
            **{"spark.ui.showConsoleProgress": "false", "spark.jars": ",".join(map(str, jars))},
        )
        spark.sparkContext.setLogLevel("ERROR")
        spark.dataSource.register(floor_module.FloorSource)
        sides = {case: _sides(case, data[case], spark, workdir) for case in args.cases}
        for rnd in range(args.rounds + 1):
            for case in args.cases if rnd % 2 else reversed(args.cases):
                order = list(sides[case]) if rnd % 2 else list(reversed(sides[case]))
                load_now = load_average()
                runs = {name: sides[case][name]() for name in order}
                if rnd:
                    results[case].append(runs)
                label = f"{case} round {rnd}" + (" (warm-up, not counted)" if not rnd else "")
                print(f"{label}, load {load_now:.1f}:", flush=True)
                for name, q in runs.items():
                    print(f"    {_line(name, q)}")
                for label, text in _ratios(runs):
                    print(f"    {label} {text}", flush=True)
        spark.stop()
    for case in args.cases:
        rounds = results[case]
        print(f"{case}, {len(rounds)} rounds, medians:")
        for name in rounds[0] if rounds else ():
            med = Query(
                rounds[0][name].rows,
                statistics.median(r[name].seconds for r in rounds),
                statistics.median(r[name].cpu for r in rounds),
                statistics.median(r[name].inside for r in rounds),
                statistics.median(r[name].add_batch for r in rounds),
            )
            print(f"  {_line(name, med)}")
        per_round = [_ratios(r) for r in rounds]
        for i, label in enumerate(per_round[0] if per_round else ()):
            print(
                f"  {label.split(' ')[0]}: " + "; ".join(r[i].split(" ", 1)[1] for r in per_round)
            )


if __name__ == "__main__":
    main()
