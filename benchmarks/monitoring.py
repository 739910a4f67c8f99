"""What monitoring costs a running query: rows/s and CPU with the listener on and off.

Same harness as ``benchmarks/run.py`` (``spark_sides.measure``): one embedded broker, 1M records
of 100 bytes in 4 partitions, a ``dynamic_kafka`` query (noop sink) on a warm local[2] session,
timed over the micro-batch that reads the rows, CPU of the whole Spark process tree. Three
variants run side by side, round after round (order rotated), and the median of each is compared:

* off: no listener;
* listener: ``monitoring.attach(spark, prometheus_port=0, path=...)`` with a scrape of the
  exposition every second (Prometheus' default is every 15 s);
* listener + event time: the same, and the query observes its largest record timestamp
  (``monitoring.observe_event_time``) for ``currentEmitEventTimeLag``.

Target: the listener costs at most 2% rows/s. Run with ``make bench`` (``python -m
benchmarks.monitoring``); ``--records N``, ``--rounds R``.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import threading
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks import report
from benchmarks.measure import spark_jvm
from benchmarks.run import _records
from benchmarks.spark_sides import Cluster, Run, dynamic_kafka, measure, write_metadata

from pyspark_dynamic_kafka.monitoring import attach, observe_event_time
from pyspark_dynamic_kafka.testing import local_spark_session, start_clusters

TOPIC = "bench"
PARTITIONS = 4
VARIANTS = ["off", "listener", "listener + event time"]


class _Scraper(threading.Thread):
    """Scrapes the exposition every second (15 times Prometheus' default rate)."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.port, self.scrapes, self._halt = port, 0, threading.Event()

    def run(self) -> None:
        while not self._halt.wait(1.0):
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10):
                self.scrapes += 1

    def stop(self) -> None:
        self._halt.set()
        self.join()


def _variant(spark: Any, jvm: int, name: str, workdir: Path, total: int) -> tuple[Run, int]:
    """Read everything once with variant ``name``; the run and how many scrapes it saw."""
    metadata = workdir / "streams.yaml"

    def frame() -> Any:
        df = dynamic_kafka(spark, metadata)
        return observe_event_time(df) if name == "listener + event time" else df

    if name == "off":
        return measure(jvm, frame, total), 0
    handle = attach(spark, prometheus_port=0, path=workdir / f"{name}.jsonl")
    if handle.port is None:
        raise SystemExit("monitoring.attach served no Prometheus port")
    scraper = _Scraper(handle.port)
    scraper.start()
    try:
        return measure(jvm, frame, total), scraper.scrapes
    finally:
        scraper.stop()
        handle.detach()


def main() -> None:
    parser = report.parser(__doc__, 1_000_000)
    parser.set_defaults(rounds=9)
    args = parser.parse_args()
    results: dict[str, list[tuple[Run, int]]] = {v: [] for v in VARIANTS}
    workdir = Path(tempfile.mkdtemp(prefix="dynamic-kafka-bench-monitoring-"))
    with start_clusters(["bench"], "tansu") as clusters:
        cluster = clusters["bench"]
        cluster.create_topic(TOPIC, partitions=PARTITIONS)
        cluster.produce_bulk(TOPIC, _records(args.records, args.size))
        write_metadata(
            workdir / "streams.yaml", [Cluster("bench", cluster.bootstrap_servers)], TOPIC
        )
        spark = local_spark_session(
            "dynamic-kafka-bench-monitoring", **{"spark.ui.showConsoleProgress": "false"}
        )
        spark.sparkContext.setLogLevel("ERROR")
        jvm = spark_jvm()
        for name in VARIANTS:  # JIT warm-up of every variant's plan, not measured
            _variant(spark, jvm, name, workdir, args.records)
        for i in range(args.rounds):
            for name in VARIANTS[i % 3 :] + VARIANTS[: i % 3]:
                results[name].append(_variant(spark, jvm, name, workdir, args.records))
        spark.stop()
    print(f"machine: {os.cpu_count()} cores; {args.records} records per run; {args.rounds} rounds")
    base_rps = statistics.median(r.rps for r, _ in results["off"])
    base_cpu = statistics.median(r.us_per_record for r, _ in results["off"])
    for name in VARIANTS:
        runs = results[name]
        rps = statistics.median(r.rps for r, _ in runs)
        cpu = statistics.median(r.us_per_record for r, _ in runs)
        each = ", ".join(f"{r.rps:,.0f}" for r, _ in runs)
        scrapes = sum(n for _, n in runs)
        print(
            f"{name:22s} rows/s median {rps:,.0f} ({each}) {rps / base_rps - 1:+.1%} | "
            f"CPU {cpu:.2f} us/record {cpu / base_cpu - 1:+.1%} ({runs[-1][0].split()})"
            + (f" | {scrapes} scrapes" if scrapes else "")
        )
    print("target: the listener costs at most 2% rows/s (median against off)")


if __name__ == "__main__":
    main()
