"""Soak: a ``dynamic_kafka`` stream over 3 clusters, its mapping changing every 20 s, 20 minutes.

``make soak`` (``python -m benchmarks.soak``; ``--minutes 4`` for a short run, ``--broker tansu``
for the embedded broker). Three Apache Kafka clusters; records are produced to six (cluster,
topic) pairs all the time; the stream's metadata file is rewritten every ``--step`` seconds
through the schedule of :mod:`benchmarks.soak_plan` (clusters and topics removed and re-added,
``orders`` migrating from ``alpha`` to ``beta`` and back); the query (local[2], a short
processing-time trigger, parquet sink) follows it with ``removedClusterRetentionMs`` longer than
any absence. At the end every pair is mapped, production stops, the query drains, and:

* the records read must be exactly the records produced: none lost, none read twice
  (:func:`benchmarks.soak_plan.compare`; why this set is exact: the module docstring there);
* the driver JVM's, the source planner's and the Python workers' RSS, threads and open file
  descriptors must be flat after warm-up (:func:`benchmarks.soak_plan.assess_flatness`).

Samples are printed as a table every minute and written, with the verdict, to a JSON file
(``--json``). The exit status is 1 when either check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.resources import Sample, Sampler, spark_jvm, thread_names
from benchmarks.soak_plan import (
    CYCLE,
    STREAM,
    UNIVERSE,
    Pair,
    RecordKey,
    assess_flatness,
    check_retention,
    compare,
    cycle_peaks,
    longest_absence,
    metadata_document,
    schedule,
)
from confluent_kafka import Producer

from pyspark_dynamic_kafka.testing import BaseKafkaCluster, local_spark_session, start_clusters
from pyspark_dynamic_kafka.testing.producing import close_producer, send_each

#: Process groups whose resources must stay flat (``driver-python`` is this script: it keeps
#: every produced record for the verdict, so it grows by design and is only reported).
ASSERTED = ("jvm", "planner", "workers", "helpers")
GROUPS = (*ASSERTED, "driver-python")
#: (relative, absolute) tolerance of each resource: see :class:`~benchmarks.soak_plan.Flatness`.
TOLERANCE = {"rss_mb": (0.10, 16.0), "threads": (0.10, 2.0), "fds": (0.10, 4.0)}
PARTITIONS = 3
#: Roles (:func:`benchmarks.resources.role_of`) summed into one group.
GROUP_OF = {
    "worker-daemon": "workers",
    "worker": "workers",
    "helper-daemon": "helpers",
    "helper": "helpers",
}


class Production(threading.Thread):
    """Produces ``rate`` records per second to every pair, recording each record's offset."""

    def __init__(self, clusters: Mapping[str, BaseKafkaCluster], rate: int, size: int) -> None:
        super().__init__(daemon=True, name="production")
        self.clusters, self.rate, self.size = clusters, rate, size
        self.produced: dict[RecordKey, bytes] = {}
        self.error: BaseException | None = None
        self._halt = threading.Event()

    def run(self) -> None:
        producers = {
            name: Producer(c.client_properties(**c.produce_defaults))
            for name, c in self.clusters.items()
        }
        seq = 0
        try:
            while not self._halt.wait(1.0):
                for cluster, topic in sorted(UNIVERSE):
                    values = [
                        f"{cluster}/{topic}/{seq + i:09d}/".ljust(self.size, "x").encode()
                        for i in range(self.rate)
                    ]
                    records = [(v[:24], v) for v in values]
                    deadline = time.monotonic() + 120
                    sent = send_each(producers[cluster], topic, records, None, deadline, cluster)
                    for (partition, offset), value in zip(sent, values, strict=True):
                        self.produced[(cluster, topic, partition, offset)] = value
                seq += self.rate
        except BaseException as exc:  # reported by the main loop, which fails the soak
            self.error = exc
        finally:
            for producer in producers.values():
                close_producer(producer)

    def stop(self) -> None:
        self._halt.set()
        self.join()


class Progress:
    """Follows the query's progress: batches, rows, and the pairs its offsets read or retain."""

    def __init__(self) -> None:
        self.batches, self.rows, self.last_batch = 0, 0, -1
        self.removals, self.resumes = 0, 0
        self.state: dict[Pair, str] = {}
        self.end: dict[str, Any] = {}

    def update(self, query: Any) -> None:
        for progress in query.recentProgress:
            if progress["batchId"] <= self.last_batch:
                continue
            self.last_batch = progress["batchId"]
            source = progress["sources"][0]
            self.rows += int(source["numInputRows"])
            self.batches += 1
            end = source["endOffset"]
            if end is not None:
                self.end = json.loads(end) if isinstance(end, str) else dict(end)
                self._observe(self.end)

    def _observe(self, end: Mapping[str, Any]) -> None:
        now: dict[Pair, str] = {}
        for key, state in (("retained", "retained"), ("clusters", "read")):
            for cluster, topics in end.get(key, {}).items():
                now.update({(cluster, topic): state for topic in topics})
        for pair, state in now.items():
            before = self.state.get(pair)
            self.removals += before == "read" and state == "retained"
            self.resumes += before == "retained" and state == "read"
        self.state = now

    def offsets(self) -> dict[tuple[str, str, int], int]:
        return {
            (c, t, int(p)): int(o)
            for c, topics in self.end.get("clusters", {}).items()
            for t, parts in topics.items()
            for p, o in parts.items()
        }


def group_series(samples: list[Sample]) -> dict[str, list[dict[str, float]]]:
    """Per group and sampling round: processes, summed RSS, threads and fds; the JVM's threads
    without those of Spark's capped pools (:data:`~benchmarks.resources.BOUNDED_POOLS`, in
    ``pooled``): a leak is growth without bound, and those pools cannot grow past their cap."""
    rounds: dict[str, dict[float, dict[str, float]]] = defaultdict(dict)
    for s in samples:
        group = GROUP_OF.get(s.role, s.role)
        empty = {"t": s.t, "n": 0, "rss_mb": 0, "threads": 0, "fds": 0, "pooled": 0}
        row = rounds[group].setdefault(s.t, empty)
        row["n"] += 1
        row["rss_mb"] += s.rss_mb
        row["threads"] += s.threads - s.pooled  # Spark's capped pools: apart (resources.py)
        row["fds"] += s.fds
        row["pooled"] += s.pooled
    return {g: [rows[t] for t in sorted(rows)] for g, rows in rounds.items()}


def print_table(
    series: Mapping[str, list[dict[str, float]]], progress: Progress, header: bool
) -> None:
    cols = [g for g in GROUPS if g in series]
    if header:
        print(
            f"{'min':>5} {'batches':>7} {'rows':>8} | "
            + " | ".join(f"{g + ' MiB/thr/fd':>24}" for g in cols),
            flush=True,
        )
    t = max(rows[-1]["t"] for rows in series.values())
    cells = []
    for g in cols:
        r = series[g][-1]
        n = f"{int(r['n'])}x " if g == "workers" else ""
        pool = f"+{int(r['pooled'])}" if g == "jvm" else ""
        cells.append(f"{n}{r['rss_mb']:.0f}/{int(r['threads'])}{pool}/{int(r['fds'])}".rjust(24))
    print(
        f"{t / 60:5.1f} {progress.batches:7d} {progress.rows:8d} | " + " | ".join(cells), flush=True
    )


def flatness(
    series: Mapping[str, list[dict[str, float]]], cycle_s: float
) -> dict[str, dict[str, Any]]:
    """The flatness verdict of every asserted group and resource, over the peaks of the
    schedule's cycles (:func:`~benchmarks.soak_plan.cycle_peaks`; 6 cycles at least)."""
    result: dict[str, dict[str, Any]] = {}
    for group in ASSERTED:
        rows = series.get(group, [])
        for metric, (rel, slack) in TOLERANCE.items():
            peaks = cycle_peaks([r["t"] for r in rows], [r[metric] for r in rows], cycle_s)
            try:
                found = assess_flatness(peaks, rel, slack, counts=metric != "rss_mb")
                verdict: dict[str, Any] = {**found.__dict__, "judged": True, "peaks": peaks}
            except ValueError as exc:  # too few cycles: not judged
                verdict = {"ok": False, "judged": False, "error": str(exc), "peaks": peaks}
            result.setdefault(group, {})[metric] = verdict
    return result


def write_mapping(path: Path, pairs: frozenset[Pair], servers: Mapping[str, str]) -> None:
    """Replace the metadata file atomically (temp file + rename)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(metadata_document(pairs, servers), indent=1))
    os.replace(tmp, path)


def _wait(deadline: float, query: Any, production: Production, tick: Any) -> None:
    while time.monotonic() < deadline:
        if query.exception() is not None:
            raise SystemExit(f"the query failed: {query.exception()}")
        if production.error is not None:
            raise SystemExit(f"production failed: {production.error!r}")
        tick()
        time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--step", type=float, default=20.0, help="seconds between mapping changes")
    parser.add_argument("--trigger", type=float, default=1.0, help="processing-time trigger, s")
    parser.add_argument("--broker", choices=["kafka", "tansu"], default="kafka")
    parser.add_argument("--rate", type=int, default=10, help="records per second per pair")
    parser.add_argument("--size", type=int, default=100, help="bytes per record value")
    parser.add_argument("--sample", type=float, default=5.0, help="seconds between samples")
    parser.add_argument("--json", type=Path, default=Path("build/soak/samples.json"))
    args = parser.parse_args()

    total_s = args.minutes * 60
    steps = schedule(total_s, args.step)
    retention_ms = int(max(600_000, (total_s + 600) * 1000))
    check_retention(steps, retention_ms)
    workdir = Path(tempfile.mkdtemp(prefix="dynamic-kafka-soak-"))
    metadata, out = workdir / "streams.json", workdir / "out"
    print(
        f"soak: {args.minutes:g} min on {args.broker}, {len(steps) - 1} mapping changes every "
        f"{args.step:g} s (longest absence of a pair {longest_absence(steps):.0f} s, "
        f"removedClusterRetentionMs={retention_ms}), {args.rate} records/s to each of "
        f"{len(UNIVERSE)} pairs, trigger {args.trigger:g} s",
        flush=True,
    )
    names = sorted({c for c, _ in UNIVERSE})
    with start_clusters(names, broker=args.broker) as clusters:
        for cluster, topic in sorted(UNIVERSE):
            clusters[cluster].create_topic(topic, partitions=PARTITIONS)
        servers = {n: clusters[n].bootstrap_servers for n in names}
        write_mapping(metadata, steps[0].pairs, servers)
        production = Production(clusters, args.rate, args.size)
        production.start()
        spark = local_spark_session(
            "dynamic-kafka-soak", 2, **{"spark.ui.showConsoleProgress": "false"}
        )
        spark.sparkContext.setLogLevel("ERROR")
        origin = time.monotonic()
        sampler = Sampler(spark_jvm(), args.sample, origin)
        sampler.start()
        query = (
            spark.readStream.format("dynamic_kafka")
            .option("metadataService", "file")
            .option("metadataService.path", str(metadata))
            .option("streamIds", STREAM)
            .option("startingOffsets", "earliest")
            .option("metadataDiscoveryIntervalMs", "0")
            .option("removedClusterRetentionMs", str(retention_ms))
            .load()
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(workdir / "checkpoint"))
            .trigger(processingTime=f"{args.trigger:g} seconds")
            .start()
        )
        progress = Progress()
        minutes = [0]
        jvm_threads: dict[int, dict[str, int]] = {}

        def tick() -> None:
            progress.update(query)
            if time.monotonic() - origin >= 60 * (minutes[0] + 1):
                minutes[0] += 1
                jvm_threads[minutes[0]] = thread_names(sampler.jvm)
                print_table(group_series(sampler.snapshot()), progress, header=minutes[0] == 1)

        for step in steps[1:]:
            _wait(origin + step.at_s, query, production, tick)
            write_mapping(metadata, step.pairs, servers)
        sampler.stop()
        production.stop()
        if production.error is not None:
            raise SystemExit(f"production failed: {production.error!r}")
        ends = {
            (c, t, p): high
            for c, t in sorted(UNIVERSE)
            for p, (_, high) in clusters[c].watermarks(t).items()
        }
        drain_start = time.monotonic()
        while progress.offsets() != ends:
            if time.monotonic() - drain_start > 900:
                raise SystemExit(f"not drained in 900 s: {progress.offsets()} vs {ends}")
            _wait(time.monotonic() + 1, query, production, lambda: progress.update(query))
        drained_s = time.monotonic() - drain_start
        query.stop()
        rows = spark.read.parquet(str(out)).select(
            "cluster", "topic", "partition", "offset", "value"
        )
        read = [((r[0], r[1], r[2], r[3]), bytes(r[4])) for r in rows.toLocalIterator()]
        spark.stop()
    verdict = compare(production.produced, read)
    series = group_series(sampler.snapshot())
    flat = flatness(series, len(CYCLE) * args.step)
    report = {
        "config": {**vars(args), "json": str(args.json), "retention_ms": retention_ms},
        "verdict": {**verdict.__dict__, "exact": verdict.exact},
        "batches": progress.batches,
        "removals_seen": progress.removals,
        "resumes_from_retained": progress.resumes,
        "drained_s": round(drained_s, 1),
        "flatness": flat,
        "jvm_pooled_peak": max((r["pooled"] for r in series.get("jvm", [])), default=0),
        "jvm_threads_by_minute": jvm_threads,
        "series": series,
        "samples": sampler.as_json(),
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1, default=str))
    shutil.rmtree(workdir, ignore_errors=True)
    _summary(report, flat)
    _thread_growth(jvm_threads)
    judged = [v for g in flat.values() for v in g.values() if v["judged"]]
    if not judged:
        print("flatness not judged: fewer than 6 complete cycles of the schedule (--minutes 13+)")
    ok = verdict.exact and all(v["ok"] for v in judged)
    sys.exit(0 if ok else 1)


def _summary(report: Mapping[str, Any], flat: Mapping[str, Mapping[str, Any]]) -> None:
    v = report["verdict"]
    print(
        f"\nrecords: produced {v['produced']}, read {v['read']}, lost {v['lost']}, duplicated "
        f"{v['duplicated']}, unexpected {v['unexpected']} -> {'EXACT' if v['exact'] else 'WRONG'}"
        f"{'' if v['exact'] else ' ' + str(v['examples'])}"
    )
    print(
        f"micro-batches {report['batches']}; pairs retained by a removal {report['removals_seen']} "
        f"times, resumed from retained offsets {report['resumes_from_retained']} times; drained "
        f"in {report['drained_s']} s"
    )
    print(
        "flatness of the peaks of each schedule cycle after warm-up (second third median -> last "
        "third median, limit); JVM threads without Spark's capped block-manager pools (peak "
        f"{report['jvm_pooled_peak']}, cap 200):"
    )
    for group, metrics in flat.items():
        cells = [
            f"{m} {f['second_median']:.1f} -> {f['last_median']:.1f} (<= {f['limit']:.1f})"
            f"{'' if f['ok'] else ' NOT FLAT'}"
            if "error" not in f
            else f"{m}: {f['error']}"
            for m, f in metrics.items()
        ]
        print(f"  {group:8s} " + "; ".join(cells))
    print(f"samples: {report['config']['json']}")


def _thread_growth(by_minute: Mapping[int, Mapping[str, int]]) -> None:
    """Print the JVM's thread names whose count changed between the end of warm-up (a third of
    the run) and the end."""
    if len(by_minute) < 3:
        return
    minutes = sorted(by_minute)
    first, last = by_minute[minutes[len(minutes) // 3]], by_minute[minutes[-1]]
    changed = {
        n: (first.get(n, 0), last.get(n, 0))
        for n in sorted({*first, *last})
        if first.get(n, 0) != last.get(n, 0)
    }
    print(f"JVM threads by name, minute {minutes[len(minutes) // 3]} -> {minutes[-1]}: {changed}")


if __name__ == "__main__":
    main()
