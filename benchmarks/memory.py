"""A task's memory against the records it reads, for both readers: does RSS grow with them?

One Apache Kafka cluster, one topic of ``--partitions`` partitions holding ``--per-partition``
records of 100 bytes each. Each measurement is a fresh Python process (as a Spark task's Python
worker is) that imports what a worker imports, then reads one task through the executor path
(:func:`~pyspark_dynamic_kafka.source.executor.read.read_task`) with the ``python`` reader
(confluent-kafka) or the ``native`` one (the compiled core), dropping each Arrow batch once
counted, as a worker hands it to the JVM. The task reads ``n`` records spread over the
partitions, for each ``n`` of ``--counts`` (0.5M to 4M by default); the process reports its RSS
before the read and its peak RSS (``ru_maxrss``). Printed: both per reader and count, and each
reader's ratio of its largest count's peak to its smallest's (1.00x: the task's memory does not
grow with the records it reads). ``--set key=value`` overrides a client property (e.g. the
prefetch queue's ``queued.min.messages``) and ``--readers`` picks the readers. Run:
``python -m benchmarks.memory``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

TOPIC = "memory"
READERS = ("python", "native")


def _records(partitions: int, each: int) -> Iterator[dict[str, Any]]:
    for partition in range(partitions):
        for offset in range(each):
            value = f"{partition}/{offset}".ljust(100, ".")
            yield {"key": None, "value": value, "partition": partition}


def _rss_kib() -> int:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * resource.getpagesize() // 1024


def _child(
    bootstrap: str, reader: str, partitions: int, count: int, overrides: dict[str, str]
) -> None:
    """Read ``count`` records as one task with ``reader``; print RSS figures as JSON."""
    import pyspark_dynamic_kafka.datasource  # noqa: F401  (what a worker has imported)
    from pyspark_dynamic_kafka.engines.choice import read_engine
    from pyspark_dynamic_kafka.frozen import FrozenMapping
    from pyspark_dynamic_kafka.kafka.config import FrozenProperties
    from pyspark_dynamic_kafka.source.executor.read import read_task
    from pyspark_dynamic_kafka.source.executor.task import OffsetRange, ReadSettings, ReadTask

    properties = FrozenProperties({"bootstrap.servers": bootstrap, **overrides})
    engines = FrozenMapping({"c": read_engine(reader, "c", properties).name})
    settings = ReadSettings(120_000, 60_000, frozenset({"c"}), engines=engines)
    each, extra = divmod(count, partitions)
    ranges = tuple(
        OffsetRange("c", TOPIC, p, 0, each + (1 if p < extra else 0)) for p in range(partitions)
    )
    task = ReadTask(ranges, {"c": properties}, settings)
    before = _rss_kib()
    rows = 0
    for batch in read_task(task):
        rows += batch.num_rows
        del batch
    if rows != count:
        raise SystemExit(f"read {rows} rows, expected {count}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(json.dumps({"before_kib": before, "peak_kib": peak, "rows": rows}))


def _measure(
    bootstrap: str, reader: str, partitions: int, count: int, sets: list[str]
) -> dict[str, int]:
    command = [sys.executable, "-m", "benchmarks.memory", "--child", bootstrap, reader]
    command += ["--partitions", str(partitions), "--counts", str(count)]
    command += [f"--set={item}" for item in sets]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{reader} {count:,}: exit {done.returncode}\n{done.stderr[-3000:]}")
    result: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--counts", default="500000,1000000,2000000,4000000")
    parser.add_argument("--child", nargs=2, metavar=("BOOTSTRAP", "READER"))
    parser.add_argument("--set", action="append", default=[], help="client property key=value")
    parser.add_argument("--readers", nargs="+", default=list(READERS), choices=READERS)
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    overrides = dict(item.split("=", 1) for item in args.set)
    if args.child:
        _child(args.child[0], args.child[1], args.partitions, counts[0], overrides)
        return
    from pyspark_dynamic_kafka.engines.core import core
    from pyspark_dynamic_kafka.testing import start_clusters

    readers = tuple(args.readers) if core() is not None else ("python",)
    if overrides:
        print(f"client properties: {overrides}")
    each = -(-max(counts) // args.partitions)
    with start_clusters(["c"], broker="kafka") as clusters:
        cluster = clusters["c"]
        cluster.create_topic(TOPIC, partitions=args.partitions)
        cluster.produce_bulk(TOPIC, _records(args.partitions, each))
        print(f"{each * args.partitions:,} records of 100 B in {args.partitions} partitions")
        peaks: dict[str, dict[int, int]] = {r: {} for r in readers}
        for count in counts:
            for reader in readers:
                got = _measure(cluster.bootstrap_servers, reader, args.partitions, count, args.set)
                peaks[reader][count] = got["peak_kib"]
                print(
                    f"  {reader:>6} {count:>9,} records: RSS before {got['before_kib'] / 1024:6.0f}"
                    f" MiB, peak {got['peak_kib'] / 1024:6.0f} MiB",
                    flush=True,
                )
    low, high = min(counts), max(counts)
    print(f"\npeak RSS at {high:,} records / at {low:,} ({high / low:.0f}x the records):")
    for reader, by_count in peaks.items():
        print(f"  {reader:>6}: {by_count[high] / by_count[low]:.2f}x")
    if set(readers) == set(READERS):
        ratio = peaks["native"][high] / peaks["python"][high]
        print(f"  native / python peak at {high:,}: {ratio:.2f}x")


if __name__ == "__main__":
    main()
