"""Hybrid read at scale (issue 13): the archive phase against the Kafka phase of the same query.

Two Apache Kafka clusters (``east``, ``west``), topic ``orders`` with 8 partitions each:

1. ``--records`` (1M) records of 100 bytes (value ``cluster/partition/offset`` padded) are
   produced, then archived by the one-line archiving job (a ``dynamic_kafka`` batch read written
   as Parquet partitioned by cluster and topic, in ``--files`` tasks);
2. Kafka loses the oldest half of every partition (DeleteRecords, as retention would);
3. ``--live`` (1M) live records are produced.

Then ``--rounds`` measured rounds (after a warm-up round), each on one warm ``local[2]`` session,
noop sink, sides in rotated order (every side is a new query on a checkpoint of its own):

* ``hybrid``: the query with ``archive.path`` (the archive in one micro-batch, then Kafka). Its
  **archive phase** (the micro-batches ending in the archive phase) and its **Kafka phase** (the
  micro-batches after the switch) are priced alike: rows over the ``addBatch`` span of the
  phase's micro-batches with rows (the Spark job that reads and writes them; query start-up,
  offset listing and planning are outside it, as in :mod:`benchmarks.spark_sides`), and the CPU
  of the Spark process tree (JVM and every Python worker) over that span;
* ``kafka``: ``dynamic_kafka`` without an archive reading the same live records (from the switch
  offsets), priced the same way: the Kafka phase measured on its own;
* ``floor``: Spark's cost of a Python source's rows (:mod:`benchmarks.floor`) for as many rows in
  as many tasks as the archive phase: no source can carry rows into Spark faster.

Each round prints every side and the ratios archive / Kafka phase, archive / ``kafka`` and
archive / floor; the summary gives their medians against the target (archive >= 3x Kafka).
Last, unless ``--no-check``, the hybrid query runs into Parquet while production continues and
the output is checked to hold every record exactly once.

Run with ``make bench`` or ``python -m benchmarks.hybrid``; needs java (the Apache Kafka
jars are fetched once). ``python -m benchmarks.archive_cost ARCHIVE`` splits the archive phase's
Python time in one process without Spark.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

import yaml
from benchmarks import floor as floor_module
from benchmarks.measure import CpuSampler, load_average, spark_jvm
from benchmarks.spark_sides import Run, _window, floor
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient
from pyspark import cloudpickle

from pyspark_dynamic_kafka.testing import local_spark_session, start_clusters

TOPIC = "orders"
PARTITIONS = 8
CLUSTERS = ("east", "west")
SIZE = 100
TARGET = 3.0


def _records(cluster: str, first: dict[int, int], per_partition: int) -> Iterator[dict[str, Any]]:
    for partition in range(PARTITIONS):
        start = first.get(partition, 0)
        for offset in range(start, start + per_partition):
            value = f"{cluster}/{partition}/{offset}".ljust(SIZE, ".")
            yield {"key": None, "value": value, "partition": partition}
        first[partition] = start + per_partition


def _delete_oldest_half(cluster: Any, produced: dict[int, int]) -> None:
    admin = AdminClient(cluster.client_properties())
    request = [TopicPartition(TOPIC, p, n // 2) for p, n in produced.items()]
    for future in admin.delete_records(request, operation_timeout=60).values():
        future.result(timeout=120)


def _options(metadata: Path, **extra: str) -> dict[str, str]:
    return {
        "metadataService": "file",
        "metadataService.path": str(metadata),
        "streamIds": "orders",
        "startingOffsets": "earliest",
        **extra,
    }


def _phase(progress: dict[str, Any]) -> str:
    end = progress["sources"][0]["endOffset"]
    end = json.loads(end) if isinstance(end, str) else end
    return "archive" if end.get("phase") == "archive" else "kafka phase"


def _query(spark: Any, options: dict[str, str], total: int) -> list[dict[str, Any]]:
    """Run a noop-sink query on a checkpoint of its own until it read ``total`` rows; its
    progress."""
    query = (spark.readStream.format("dynamic_kafka").options(**options).load().writeStream).format(
        "noop"
    )
    started = query.start()
    try:
        deadline = time.monotonic() + 900
        while (read := sum(int(p["numInputRows"]) for p in started.recentProgress)) < total:
            if time.monotonic() > deadline or started.exception() is not None:
                raise SystemExit(f"query read {read} of {total} rows: {started.exception()}")
            started.processAllAvailable()
        return list(started.recentProgress)
    finally:
        started.stop()


def _priced(sampler: CpuSampler, progress: list[dict[str, Any]]) -> Run:
    rows, start, end = _window(progress)
    return Run(rows, end - start, sampler.between("spark", start, end))


def _hybrid(spark: Any, jvm: int, options: dict[str, str], total: int) -> dict[str, Run]:
    """The hybrid query, its archive and Kafka phases priced alike."""
    with CpuSampler({"spark": jvm}) as sampler:
        progress = [p for p in _query(spark, options, total) if p["numInputRows"]]
    phases = {
        name: [p for p in progress if _phase(p) == name] for name in ("archive", "kafka phase")
    }
    return {name: _priced(sampler, runs) for name, runs in phases.items()}


def _single(run: Callable[[], list[dict[str, Any]]], jvm: int) -> Run:
    with CpuSampler({"spark": jvm}) as sampler:
        progress = run()
    return _priced(sampler, progress)


def _line(name: str, run: Run) -> str:
    return (
        f"{name:>12} {run.rows:>9,} rows in {run.seconds:5.2f} s = {run.rps:>10,.0f} rows/s, "
        f"{run.us_per_record:.2f} us/record ({run.split()})"
    )


def _ratios(runs: dict[str, Run]) -> dict[str, float]:
    archive = runs["archive"].rps
    return {f"archive/{n}": archive / r.rps for n, r in runs.items() if n != "archive"}


def _produce(clusters: dict[str, Any], produced: dict[str, dict[int, int]], each: int) -> None:
    for name, cluster in clusters.items():
        cluster.produce_bulk(TOPIC, _records(name, produced[name], each))


def _archive(spark: Any, metadata: Path, archive: Path, files: int) -> int:
    (
        spark.read.format("dynamic_kafka")
        .options(**_options(metadata, minPartitions=str(files)))
        .load()
        .sortWithinPartitions("cluster", "topic", "partition", "offset")
        .write.partitionBy("cluster", "topic")
        .parquet(str(archive))
    )
    return len(list(archive.rglob("*.parquet")))


def _into_parquet(out: Any, work: Path) -> None:
    """One ``Trigger.AvailableNow`` run of the hybrid query into Parquet (on its checkpoint)."""
    query = (
        out.writeStream.format("parquet")
        .trigger(availableNow=True)
        .option("path", str(work / "out"))
        .option("checkpointLocation", str(work / "ckpt-check"))
        .start()
    )
    query.awaitTermination()


def _verify(spark: Any, work: Path, produced: dict[str, dict[int, int]]) -> None:
    """Does the output hold every record exactly once?"""
    spark.read.parquet(str(work / "out")).createOrReplaceTempView("hybrid_out")
    row = spark.sql(
        "select count(*) n, count(distinct cluster, partition, offset) d, "
        "sum(case when ok then 0 else 1 end) bad from hybrid_out"
    ).collect()[0]
    expected = {(c, p): n for c in CLUSTERS for p, n in produced[c].items()}
    spans = {
        (r.cluster, r.partition): (r.lo, r.hi, r.n)
        for r in spark.sql(
            "select cluster, partition, min(offset) lo, max(offset) hi, count(*) n "
            "from hybrid_out group by cluster, partition"
        ).collect()
    }
    exact = (
        row.n == row.d == sum(expected.values())
        and row.bad == 0
        and all(spans.get(k) == (0, n - 1, n) for k, n in expected.items())
    )
    verdict = "EXACT (every record once)" if exact else "NOT EXACT"
    print(
        f"exactness: read {row.n:,} rows ({row.d:,} distinct, {row.bad} with a wrong value) of "
        f"{sum(expected.values()):,} produced: {verdict}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="archived records")
    parser.add_argument("--live", type=int, default=1_000_000, help="live records")
    parser.add_argument("--files", type=int, default=24, help="archiving job's tasks")
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds (median)")
    parser.add_argument("--no-check", action="store_true", help="skip the exactness run")
    args = parser.parse_args()
    per_partition = args.records // (len(CLUSTERS) * PARTITIONS)
    live_per_partition = args.live // (len(CLUSTERS) * PARTITIONS)
    work = Path(tempfile.mkdtemp(prefix="hybrid-bench-"))
    cloudpickle.register_pickle_by_value(floor_module)
    with start_clusters(list(CLUSTERS), broker="kafka") as clusters:
        produced: dict[str, dict[int, int]] = {name: {} for name in CLUSTERS}
        for cluster in clusters.values():
            cluster.create_topic(TOPIC, partitions=PARTITIONS)
        began = time.monotonic()
        _produce(clusters, produced, per_partition)
        print(f"produced {args.records:,} records in {time.monotonic() - began:.1f} s", flush=True)
        metadata = work / "streams.yaml"
        metadata.write_text(
            yaml.safe_dump(
                {
                    "clusters": {
                        n: {"bootstrap.servers": c.bootstrap_servers} for n, c in clusters.items()
                    },
                    "streams": {"orders": [{"cluster": n, "topics": [TOPIC]} for n in CLUSTERS]},
                }
            )
        )
        spark = local_spark_session(
            "dynamic-kafka-hybrid-bench", **{"spark.ui.showConsoleProgress": "false"}
        )
        spark.sparkContext.setLogLevel("ERROR")
        spark.dataSource.register(floor_module.FloorSource)
        jvm = spark_jvm()
        archive = work / "archive"
        began = time.monotonic()
        files = _archive(spark, metadata, archive, args.files)
        print(f"archived into {files} Parquet files in {time.monotonic() - began:.1f} s")
        for name, cluster in clusters.items():
            _delete_oldest_half(cluster, dict(produced[name]))
        print("Kafka lost the oldest half of every partition (DeleteRecords)")
        switch = {c: {TOPIC: {str(p): n for p, n in produced[c].items()}} for c in CLUSTERS}
        _produce(clusters, produced, live_per_partition)
        live = live_per_partition * PARTITIONS * len(CLUSTERS)
        archived = per_partition * PARTITIONS * len(CLUSTERS)
        print(f"produced {live:,} live records; {archived:,} archived", flush=True)

        hybrid = _options(
            metadata, **{"archive.path": str(archive), "archive.maxFilesPerTrigger": str(files)}
        )
        kafka_only = _options(metadata, startingOffsets=json.dumps(switch))
        sides: dict[str, Callable[[], dict[str, Run]]] = {
            "hybrid": lambda: _hybrid(spark, jvm, hybrid, archived + live),
            "kafka": lambda: {"kafka": _single(lambda: _query(spark, kafka_only, live), jvm)},
            "floor": lambda: {"floor": _single_floor(spark, jvm, archived)},
        }
        rounds: list[dict[str, Run]] = []
        for rnd in range(args.rounds + 1):
            names = list(sides) if rnd % 2 else list(reversed(sides))
            names = names[rnd % len(names) :] + names[: rnd % len(names)]
            load = load_average()
            runs: dict[str, Run] = {}
            for name in names:
                runs.update(_retried(sides[name]))
            runs = {n: runs[n] for n in ("archive", "kafka phase", "kafka", "floor")}
            label = f"round {rnd}" + (" (warm-up, not counted)" if not rnd else "")
            print(f"{label}, load {load:.1f}:")
            for name, run in runs.items():
                print("  " + _line(name, run))
            print("  " + ", ".join(f"{k} {v:.2f}x" for k, v in _ratios(runs).items()), flush=True)
            if rnd:
                rounds.append(runs)
        _summary(rounds)
        if not args.no_check:
            _check_with_production(spark, clusters, hybrid, work, produced)
        spark.stop()


def _retried(side: Callable[[], dict[str, Run]]) -> dict[str, Run]:
    """A side, run again once when its query failed (on a loaded machine a Python worker may
    not connect back in time)."""
    try:
        return side()
    except Exception as exc:  # a failed query: its side is measured again
        print(f"  (a query failed, run again: {str(exc).splitlines()[0][:200]})", flush=True)
        return side()


def _single_floor(spark: Any, jvm: int, rows: int) -> Run:
    def run() -> list[dict[str, Any]]:
        query = floor(spark, rows, 2).writeStream.format("noop").start()
        try:
            query.processAllAvailable()
            return [p for p in query.recentProgress if p["numInputRows"]]
        finally:
            query.stop()

    return _single(run, jvm)


def _summary(rounds: list[dict[str, Run]]) -> None:
    print(f"\n{len(rounds)} rounds, medians:")
    for name in rounds[0]:
        rps = statistics.median(r[name].rps for r in rounds)
        cpu = statistics.median(r[name].us_per_record for r in rounds)
        print(f"  {name:>12} {rps:>10,.0f} rows/s {cpu:.2f} us/record")
    ratios = [_ratios(r) for r in rounds]
    for key in ratios[0]:
        values = [r[key] for r in ratios]
        each = " ".join(f"{v:.2f}" for v in values)
        median = statistics.median(values)
        target = ""
        if key == "archive/kafka phase":
            target = f" (target >= {TARGET:.0f}x: {'met' if median >= TARGET else 'NOT met'})"
        print(f"  {key:<20} {each} median {median:.2f}x{target}")


def _check_with_production(
    spark: Any,
    clusters: dict[str, Any],
    options: dict[str, str],
    work: Path,
    produced: dict[str, dict[int, int]],
) -> None:
    """The exactness run, with production continuing while it reads."""
    out = (
        spark.readStream.format("dynamic_kafka")
        .options(**options)
        .load()
        .selectExpr(
            "cluster",
            "partition",
            "offset",
            "substring_index(cast(value as string), '.', 1) = "
            "concat(cluster, '/', partition, '/', offset) as ok",
        )
    )
    producer = threading.Thread(target=lambda: _produce(clusters, produced, 5_000))
    producer.start()
    try:
        _into_parquet(out, work)
    finally:
        producer.join()
    _into_parquet(out, work)  # AvailableNow stops at the offsets of its start: the rest
    _verify(spark, work, produced)


if __name__ == "__main__":
    main()
