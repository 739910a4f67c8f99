"""What monitoring costs a running query: rows/s and CPU with the listener on and off.

Same setup as ``benchmarks/run.py`` (whose helpers it imports): one embedded broker, 1M records
of 100 bytes in 4 partitions, a running ``dynamic_kafka`` query (noop sink) on local[2] that
drains a warm-up topic before the benchmark topic is added to its stream. Three variants run
side by side, round after round (order rotated), and the median of each is compared:

* off: no listener;
* listener: ``monitoring.attach(spark, prometheus_port=0, path=...)`` with a scrape of the
  exposition every second (Prometheus' default is every 15 s);
* listener + event time: the same, and the query observes its largest record timestamp
  (``monitoring.observe_event_time``) for ``currentEmitEventTimeLag``.

Target: the listener costs at most 2% rows/s. Run with ``make bench``; ``--records N``,
``--rounds R``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import run  # benchmarks/run.py, beside this file

from pyspark_dynamic_kafka.monitoring import attach, observe_event_time
from pyspark_dynamic_kafka.testing import local_spark_session, start_clusters


def _observed_query(spark: Any, metadata: Path) -> Any:
    """run._start_query's query, observing the largest record timestamp of each batch."""
    df = (
        spark.readStream.format("dynamic_kafka")
        .option("metadataService", "file")
        .option("metadataService.path", str(metadata))
        .option("streamIds", run.TOPIC)
        .option("startingOffsets", "earliest")
        .option("metadataDiscoveryIntervalMs", "0")
        .load()
    )
    return observe_event_time(df).writeStream.format("noop").start()


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


def _variant(spark: Any, name: str, workdir: Path, measure: Callable[[], Any]) -> Any:
    if name == "off":
        return measure()
    handle = attach(spark, prometheus_port=0, path=workdir / f"{name}.jsonl")
    assert handle.port is not None
    scraper = _Scraper(handle.port)
    scraper.start()
    original = run._start_query
    if name == "listener + event time":
        run._start_query = _observed_query
    try:
        result = measure()
    finally:
        run._start_query = original
        scraper.stop()
        handle.detach()
    result["scrapes"] = scraper.scrapes
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    variants = ["off", "listener", "listener + event time"]
    results: dict[str, list[Any]] = {v: [] for v in variants}
    workdir = Path(tempfile.mkdtemp(prefix="dynamic-kafka-bench-monitoring-"))
    with start_clusters(["bench"]) as clusters:
        cluster = clusters["bench"]
        bootstrap, broker = cluster.bootstrap_servers, cluster.pid or -1
        cluster.create_topic(run.TOPIC, partitions=run.PARTITIONS)
        cluster.create_topic(run.WARMUP, partitions=run.PARTITIONS)
        cluster.produce_bulk(run.TOPIC, run._records(args.records, args.size))
        cluster.produce_bulk(run.WARMUP, run._records(run.WARMUP_RECORDS, args.size))
        total = sum(run._watermarks(bootstrap).values())
        metadata = workdir / "streams.yaml"
        spark = local_spark_session(
            "dynamic-kafka-bench-monitoring", **{"spark.ui.showConsoleProgress": "false"}
        )
        spark.sparkContext.setLogLevel("ERROR")

        def measure() -> Any:
            return run.spark_warm(spark, metadata, bootstrap, total, broker)

        for name in variants:  # JIT warm-up of every variant's plan, not measured
            _variant(spark, name, workdir, measure)
        for i in range(args.rounds):
            for name in variants[i % 3 :] + variants[: i % 3]:
                results[name].append(_variant(spark, name, workdir, measure))
        spark.stop()
    print(f"machine: {os.cpu_count()} cores; {total} records per run; {args.rounds} rounds")
    base_rps = statistics.median(r["rps"] for r in results["off"])
    base_cpu = statistics.median(r["cpu"] for r in results["off"])
    for name in variants:
        runs = results[name]
        if any(r["rows"] != total for r in runs):
            raise SystemExit(f"{name}: read {[r['rows'] for r in runs]} rows, expected {total}")
        rps = statistics.median(r["rps"] for r in runs)
        cpu = statistics.median(r["cpu"] for r in runs)
        each = ", ".join(f"{r['rps']:,.0f}" for r in runs)
        scrapes = sum(r.get("scrapes", 0) for r in runs)
        kinds = ", ".join(
            f"{k} {statistics.median(r['by_kind'][k] for r in runs):.2f}"
            for k in runs[0]["by_kind"]
        )
        print(
            f"{name:22s} rows/s median {rps:,.0f} ({each}) {rps / base_rps - 1:+.1%} | "
            f"CPU {cpu:.2f} us/record {cpu / base_cpu - 1:+.1%} ({kinds})"
            + (f" | {scrapes} scrapes" if scrapes else "")
        )
    print("target: the listener costs at most 2% rows/s (median against off)")


if __name__ == "__main__":
    main()
