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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from benchmarks import floor as floor_module
from benchmarks import phases, report
from benchmarks.measure import CpuSampler, load_average, spark_jvm
from benchmarks.run import CASES, SCRAM_PASSWORD, SCRAM_USER, _tasks, load
from benchmarks.spark_sides import Cluster, bench_setup, dynamic_kafka, floor, kafka, union_of_kafka
from benchmarks.spark_sides import write_metadata as write_bench_metadata

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
    #: The query's phases (:func:`.phases.split`), when its source was traced.
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def outside(self) -> float:
        """Seconds outside every trigger."""
        return self.seconds - self.inside


def _progress_times(progress: list[dict[str, Any]]) -> tuple[int, float, float]:
    rows = sum(int(p["numInputRows"]) for p in progress)
    inside = sum(p["durationMs"].get("triggerExecution", 0) for p in progress) / 1e3
    add_batch = sum(p["durationMs"].get("addBatch", 0) for p in progress) / 1e3
    return rows, inside, add_batch


def available_now(
    jvm: int, frame: Callable[[], Any], timeout: float
) -> tuple[CpuSampler, float, float, list[dict[str, Any]]]:
    """Run an ``AvailableNow`` query of ``frame()`` into the noop sink to its end: the Spark
    tree's CPU sampled over it, its start and end (wall clock), and its progress."""
    with CpuSampler({"spark": jvm}) as sampler:
        started = time.time()
        query = frame().writeStream.format("noop").trigger(availableNow=True).start()
        ended = query.awaitTermination(timeout)
        done = time.time()
    if not ended or query.exception() is not None:
        query.stop()
        raise SystemExit(f"the query did not end cleanly: {query.exception()}")
    return sampler, started, done, list(query.recentProgress)


def drain(
    jvm: int, frame: Callable[[], Any], total: int, traced: str = "", timeout: float = 900.0
) -> Query:
    """Start an ``AvailableNow`` query on ``frame()`` into the noop sink; wait for it to end.

    ``traced``: the side whose traced source ``frame()`` reads (:mod:`.phases`), to split.
    """
    phases.reset()
    sampler, started, done, progress = available_now(jvm, frame, timeout)
    rows, inside, add_batch = _progress_times(progress)
    if rows != total:
        raise SystemExit(f"query read {rows} rows, expected {total}")
    cpu = sum(sampler.between("spark", started, done).values())
    split = phases.split(traced, started, done, progress) if traced else {}
    return Query(rows, done - started, cpu, inside, add_batch, split)


def batch(jvm: int, frame: Callable[[], Any], total: int) -> Query:
    """A batch read, ``load()`` to the noop sink's ``save()``."""
    with CpuSampler({"spark": jvm}) as sampler:
        started = time.time()
        frame().write.format("noop").mode("overwrite").save()
        done = time.time()
    cpu = sum(sampler.between("spark", started, done).values())
    return Query(total, done - started, cpu, done - started, done - started)


def _sides(
    case: str, data: dict[str, Any], spark: Any, workdir: Path, traced: bool = False
) -> dict[str, Callable[[], Query]]:
    clusters: list[Cluster] = data["clusters"]
    topic, total = data["topic"], data["total"]
    jvm = spark_jvm()
    metadata = workdir / f"whole-{case}.yaml"
    write_bench_metadata(metadata, clusters, topic)
    tasks = _tasks(data["shares"])

    def ours() -> Any:
        if not traced:
            return dynamic_kafka(spark, metadata, None)
        options = {"metadataService": "file", "metadataService.path": str(metadata)}
        options |= {"streamIds": "bench", "startingOffsets": "earliest"}
        return spark.readStream.format("bench_traced_dk").options(**options).load()

    def floor_frame() -> Any:
        if not traced:
            return floor(spark, total, tasks)
        return (
            spark.readStream.format("bench_traced_floor")
            .options(rows=str(total), tasks=str(tasks))
            .load()
        )

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
    return {
        "native": lambda: drain(jvm, ours, total, "native" if traced else ""),
        name: lambda: drain(jvm, peer, total),
        "floor": lambda: drain(jvm, floor_frame, total, "floor" if traced else ""),
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


@dataclass(frozen=True)
class Ratio:
    """Ours / peer in one round: rows/s, CPU per record, and both sides' seconds outside."""

    rps: float
    cpu: float
    ours_outside: float
    peer_outside: float

    def text(self) -> str:
        return (
            f"{self.rps:.2f}x rows/s {self.cpu:.2f}x CPU, outside "
            f"{self.ours_outside:.2f} s vs {self.peer_outside:.2f} s"
        )


def _ratios(runs: dict[str, Query]) -> dict[str, Ratio]:
    """``{"ours/peer": Ratio}`` of every pair that ran."""
    out = {}
    for ours, peer in [("native", "kafka"), ("native", "union"), ("native", "floor")]:
        for suffix in ("", " batch"):
            a, b = runs.get(ours + suffix), runs.get(peer + suffix)
            if a is None or b is None:
                continue
            rps = (a.rows / a.seconds) / (b.rows / b.seconds)
            cpu = (a.cpu / a.rows) / (b.cpu / b.rows)
            out[f"{ours}{suffix}/{peer}{suffix}"] = Ratio(rps, cpu, a.outside, b.outside)
    return out


def _print_round(label: str, runs: dict[str, Query]) -> None:
    print(f"{label}:", flush=True)
    for name, q in runs.items():
        print(f"    {_line(name, q)}")
    for name, q in runs.items():
        if q.phases:
            split = ", ".join(f"{k.strip()} {v:.2f}" for k, v in q.phases.items())
            print(f"    {name} phases (s): {split}")
    for pair, ratio in _ratios(runs).items():
        print(f"    {pair} {ratio.text()}", flush=True)


def summary(case: str, rounds: list[dict[str, Query]]) -> list[str]:
    """The medians of each side, of its phases and of each ratio over ``rounds``, then each
    ratio's rounds."""
    lines = [f"{case}, {len(rounds)} rounds, medians:"]
    if not rounds:
        return lines
    for name in rounds[0]:
        med = Query(
            rounds[0][name].rows,
            statistics.median(r[name].seconds for r in rounds),
            statistics.median(r[name].cpu for r in rounds),
            statistics.median(r[name].inside for r in rounds),
            statistics.median(r[name].add_batch for r in rounds),
        )
        lines.append(f"  {_line(name, med)}")
        for phase in rounds[0][name].phases:
            values = [r[name].phases[phase] for r in rounds if phase in r[name].phases]
            lines.append(f"      {phase:32} {statistics.median(values):6.3f} s")
    per_round = [_ratios(r) for r in rounds]
    for pair in per_round[0]:
        ratios = [r[pair] for r in per_round if pair in r]
        med = Ratio(
            statistics.median(x.rps for x in ratios),
            statistics.median(x.cpu for x in ratios),
            statistics.median(x.ours_outside for x in ratios),
            statistics.median(x.peer_outside for x in ratios),
        )
        rounds_text = ", ".join(f"{x.rps:.2f}x/{x.cpu:.2f}x" for x in ratios)
        lines.append(f"  {pair}: median {med.text()} (rounds: rows/s/CPU {rounds_text})")
    return lines


def main() -> None:
    parser = report.parser(__doc__, 2_000_000)
    parser.add_argument(
        "--cases", nargs="+", default=["kafka-1x8", "kafka-3x4"], choices=list(CASES)
    )
    parser.add_argument(
        "--phases",
        action="store_true",
        help="read ours and the floor through traced twins and split each query into phases",
    )
    parser.add_argument("--no-batch", action="store_true", help="leave the batch reads out")
    args = parser.parse_args()
    workdir, jars = bench_setup(floor_module, phases)
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
            set_scram_password(cluster, SCRAM_USER, SCRAM_PASSWORD)
        data = {case: load(started, case, args.records, args.size) for case in args.cases}
        spark = local_spark_session(
            "dynamic-kafka-whole-query",
            **{"spark.ui.showConsoleProgress": "false", "spark.jars": ",".join(map(str, jars))},
        )
        spark.sparkContext.setLogLevel("ERROR")
        for source in (floor_module.FloorSource, phases.TracedDynamicKafka, phases.TracedFloor):
            spark.dataSource.register(source)
        sides = {c: _sides(c, data[c], spark, workdir, args.phases) for c in args.cases}
        for case in sides.values() if args.no_batch else ():
            for name in [n for n in case if n.endswith(" batch")]:
                del case[name]
        for rnd in range(args.rounds + 1):
            for case in args.cases if rnd % 2 else reversed(args.cases):
                order = list(sides[case]) if rnd % 2 else list(reversed(sides[case]))
                load_now = load_average()
                runs = {name: sides[case][name]() for name in order}
                if rnd:
                    results[case].append(runs)
                label = f"{case} round {rnd}" + (" (warm-up, not counted)" if not rnd else "")
                _print_round(f"{label}, load {load_now:.1f}", runs)
        spark.stop()
    for case in args.cases:
        print("\n".join(summary(case, results[case])), flush=True)


if __name__ == "__main__":
    main()
