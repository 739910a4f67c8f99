"""Planning time of one micro-batch at scale: ``latestOffset`` + ``partitions`` on the driver.

``python -m benchmarks.scale`` starts ``--clusters`` clusters (10) with ``--topics`` topics (100)
of ``--partitions`` partitions (10) each, one record in every partition, and calls the source's
driver side directly on a :class:`~pyspark_dynamic_kafka.source.stream.DynamicKafkaStreamReader`,
as Spark's planner process does for one micro-batch: ``latestOffset(start, limit)`` then
``partitions(start, end)``, from the initial offset (every partition at 0) to the latest (every
partition at 1), so every partition is listed and planned. No Spark JVM is involved.

* **cold**: a new reader each round (a restart from a checkpoint: first metadata read, admin
  clients created and connected);
* **warm**: the same reader round after round (a running query's steady state; the metadata file
  is checked every micro-batch, ``metadataDiscoveryIntervalMs=0``).

The stream is mapped to the first 10, 30 and all topics of every cluster (``--sizes``), which
gives the growth with the partition count (1k, 3k, 10k by default). Each figure is the median of
``--rounds`` rounds. ``--before`` also measures the source as it was before this benchmark
(clusters listed one after the other, the garbage collector running during the calls), rounds
alternating with the current ones; ``--profile``
prints a cProfile of one warm round at the largest size; ``--json`` writes the figures.
``--broker tansu`` (default: ten brokers are cheap processes) or ``kafka`` (ten Apache Kafka JVMs).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import pickle
import pstats
import statistics
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from pyspark_dynamic_kafka.source.config.options import parse_options
from pyspark_dynamic_kafka.source.driver.pipeline import Tuning
from pyspark_dynamic_kafka.source.driver.reconcile import MAX_PARALLEL_CLUSTERS
from pyspark_dynamic_kafka.source.executor.task import ReadTask
from pyspark_dynamic_kafka.source.stream import DynamicKafkaStreamReader
from pyspark_dynamic_kafka.testing import BaseKafkaCluster, start_clusters
from pyspark_dynamic_kafka.testing.producing import close_producer, send_each

STREAM = "scale"


@dataclass(frozen=True)
class Round:
    """One planned micro-batch: seconds of each call, tasks and ranges planned, pickled bytes."""

    latest_s: float
    partitions_s: float
    gc_s: float
    tasks: int
    ranges: int
    pickled: int

    @property
    def total_s(self) -> float:
        return self.latest_s + self.partitions_s


def topic_name(index: int) -> str:
    return f"t{index:03d}"


def prepare(cluster: BaseKafkaCluster, topics: int, partitions: int) -> None:
    """Create the topics in one request, wait until all are led, put one record in each
    partition."""
    admin = AdminClient(cluster.client_properties())
    replicas = cluster.default_replication_factor
    new = [NewTopic(topic_name(i), partitions, replicas) for i in range(topics)]
    for future in admin.create_topics(new, operation_timeout=120).values():
        future.result(timeout=300)
    deadline = time.monotonic() + 300
    while True:
        listed = admin.list_topics(timeout=30).topics
        led = sum(
            1
            for i in range(topics)
            for p in getattr(listed.get(topic_name(i)), "partitions", {}).values()
            if p.leader >= 0
        )
        if led == topics * partitions:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"{cluster.name}: {led} of {topics * partitions} partitions led")
        time.sleep(0.5)
    producer = Producer(cluster.client_properties(**cluster.produce_defaults))
    try:
        for i in range(topics):
            records = [{"key": "k", "value": "v", "partition": p} for p in range(partitions)]
            send_each(producer, topic_name(i), records, None, time.monotonic() + 120, cluster.name)
    finally:
        close_producer(producer)


def write_metadata(path: Path, servers: Mapping[str, str], topics: int) -> None:
    names = [topic_name(i) for i in range(topics)]
    document = {
        "clusters": {c: {"bootstrap.servers": s} for c, s in sorted(servers.items())},
        "streams": {STREAM: [{"cluster": c, "topics": names} for c in sorted(servers)]},
    }
    path.write_text(json.dumps(document))


def new_reader(metadata: Path, variant: str = "after") -> DynamicKafkaStreamReader:
    options = {
        "metadataservice": "file",
        "metadataservice.path": str(metadata),
        "streamids": STREAM,
        "startingoffsets": "earliest",
        "metadatadiscoveryintervalms": "0",
    }
    return DynamicKafkaStreamReader(parse_options(options, mode="stream"), _tuning(variant))


class _GcClock:
    """Seconds spent in the garbage collector (all generations) since created."""

    def __init__(self) -> None:
        self.seconds, self._began = 0.0, 0.0

    def __call__(self, phase: str, info: Mapping[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._began


GC = _GcClock()
gc.callbacks.append(GC)


def plan_once(reader: DynamicKafkaStreamReader, start: dict[str, Any], expected: int) -> Round:
    """One micro-batch's planning, checked: every partition goes from 0 to 1."""
    gc_before = GC.seconds
    t0 = time.perf_counter()
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    t1 = time.perf_counter()
    tasks = reader.partitions(start, end)
    t2 = time.perf_counter()
    ranges = sum(len(task.ranges) for task in tasks if isinstance(task, ReadTask))
    if ranges != expected:
        raise SystemExit(f"planned {ranges} ranges, expected {expected}: {end}")
    gc_s = GC.seconds - gc_before
    return Round(t1 - t0, t2 - t1, gc_s, len(tasks), ranges, len(pickle.dumps(list(tasks))))


def median_round(rounds: list[Round]) -> dict[str, float]:
    return {
        "latest_s": statistics.median(r.latest_s for r in rounds),
        "partitions_s": statistics.median(r.partitions_s for r in rounds),
        "total_s": statistics.median(r.total_s for r in rounds),
        "gc_s": statistics.median(r.gc_s for r in rounds),
        "tasks": rounds[0].tasks,
        "pickled_kb": rounds[0].pickled / 1024,
    }


def measure(
    metadata: Path, expected: int, rounds: int, variants: list[str]
) -> dict[str, dict[str, dict[str, float]]]:
    """Cold and warm medians, per variant, for the stream the metadata file maps now; the
    variants' rounds alternate, so load from elsewhere falls on each alike."""
    start = new_reader(metadata).initialOffset()
    cold: dict[str, list[Round]] = {v: [] for v in variants}
    warm: dict[str, list[Round]] = {v: [] for v in variants}
    for _ in range(rounds):
        for variant in variants:
            reader = new_reader(metadata, variant)
            cold[variant].append(plan_once(reader, start, expected))
            del reader
            gc.collect()  # its admin clients go now, not during the next round
    readers = {v: new_reader(metadata, v) for v in variants}
    for reader in readers.values():
        plan_once(reader, start, expected)  # first call: connects, not counted
    for _ in range(rounds):
        for variant, reader in readers.items():
            warm[variant].append(plan_once(reader, start, expected))
    return {v: {"cold": median_round(cold[v]), "warm": median_round(warm[v])} for v in variants}


def _tuning(variant: str) -> Tuning:
    """``after``: the source as it is; ``before``: clusters listed one after the other and the
    garbage collector free to run during the calls (the source before this benchmark);
    ``parallel``: in between (clusters in parallel, the collector running)."""
    parallel = 1 if variant == "before" else MAX_PARALLEL_CLUSTERS
    return Tuning(parallel_clusters=parallel, pause_gc=variant == "after")


def profile(metadata: Path, expected: int) -> None:
    """cProfile of one warm round (the reader is gone when this returns)."""
    reader = new_reader(metadata)
    start = reader.initialOffset()
    plan_once(reader, start, expected)
    profiler = cProfile.Profile()
    profiler.enable()
    plan_once(reader, start, expected)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--broker", choices=["tansu", "kafka"], default="tansu")
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--topics", type=int, default=100, help="topics per cluster")
    parser.add_argument("--partitions", type=int, default=10, help="partitions per topic")
    parser.add_argument("--sizes", default="10,30,100", help="topics per cluster mapped, each")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--before", action="store_true", help="also measure the source as it was (see _tuning)"
    )
    parser.add_argument("--json", type=Path, help="write the figures there")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if int(s) <= args.topics]
    names = [f"c{i:02d}" for i in range(args.clusters)]
    workdir = Path(tempfile.mkdtemp(prefix="dynamic-kafka-scale-"))
    began = time.perf_counter()
    with start_clusters(names, broker=args.broker) as clusters:
        started = time.perf_counter()
        for name in names:
            prepare(clusters[name], args.topics, args.partitions)
        prepared = time.perf_counter()
        print(
            f"{args.clusters} {args.broker} clusters started in {started - began:.1f} s, "
            f"{args.topics} topics x {args.partitions} partitions each created and filled in "
            f"{prepared - started:.1f} s; median of {args.rounds} rounds",
            flush=True,
        )
        print(
            f"{'partitions':>10} {'variant':>8} | {'cold latestOffset':>17} {'partitions':>10} "
            f"{'total':>7} | {'warm latestOffset':>17} {'partitions':>10} {'total':>7} "
            f"{'gc':>6} | tasks  pickled"
        )
        servers = {n: clusters[n].bootstrap_servers for n in names}
        metadata = workdir / "streams.json"
        variants = ["after", "parallel", "before"] if args.before else ["after"]
        results: dict[int, Any] = {}
        for size in sizes:
            write_metadata(metadata, servers, size)
            count = args.clusters * size * args.partitions
            results[count] = measure(metadata, count, args.rounds, variants)
            for variant, result in results[count].items():
                cold, warm = result["cold"], result["warm"]
                print(
                    f"{count:>10,} {variant:>8} | {cold['latest_s']:>16.3f}s "
                    f"{cold['partitions_s']:>9.3f}s {cold['total_s']:>6.3f}s | "
                    f"{warm['latest_s']:>16.3f}s {warm['partitions_s']:>9.3f}s "
                    f"{warm['total_s']:>6.3f}s {warm['gc_s']:>5.3f}s | {int(warm['tasks']):>5}  "
                    f"{warm['pickled_kb']:,.0f} KiB",
                    flush=True,
                )
        if args.json is not None:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps({"args": vars(args), "results": results}, default=str))
        if args.profile:
            profile(metadata, args.clusters * sizes[-1] * args.partitions)
    print(f"target: < 1 s for {args.clusters * args.topics * args.partitions:,} partitions")


if __name__ == "__main__":
    main()
