"""A task whose ranges are longer than librdkafka's prefetch queue, read with and without the
source's ``fetch.queue.backoff.ms``.

librdkafka stops fetching a partition whose prefetch queue is over ``queued.min.messages`` or
``queued.max.messages.kbytes`` and looks again only after ``fetch.queue.backoff.ms`` (1000 ms by
default). A task whose ranges are longer than the queue then drains the queue and waits for the
rest of that second, once per queue's worth of records: large micro-batches (a backfill, a first
batch from ``earliest``) ran at a fraction of the speed of small ones. The source sets 10 ms.

One Apache Kafka cluster, one topic of ``--partitions`` partitions with ``--per-partition``
records of 100 bytes each; each round reads all of it as one task through the executor path
Spark runs (``read_task``, pooled consumer, Arrow batches), in this process, once with the
source's defaults (``ours``) and once with librdkafka's backoff (``backoff=1000ms``, set as a
cluster property), in alternating order. Prints rows/s and CPU per record of each and the
ratio; medians over ``--rounds``. Run: ``python -m benchmarks.prefetch``.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Iterator
from typing import Any

from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.source.executor.read import read_task
from pyspark_dynamic_kafka.source.executor.task import OffsetRange, ReadSettings, ReadTask
from pyspark_dynamic_kafka.testing import start_clusters

TOPIC = "prefetch"
SIDES = {"ours": {}, "backoff=1000ms": {"fetch.queue.backoff.ms": "1000"}}


def _records(partitions: int, each: int) -> Iterator[dict[str, Any]]:
    for partition in range(partitions):
        for offset in range(each):
            yield {
                "key": None,
                "value": f"{partition}/{offset}".ljust(100, "."),
                "partition": partition,
            }


def _read(bootstrap: str, extra: dict[str, str], partitions: int, each: int) -> tuple[float, float]:
    """(seconds, CPU seconds) to read every record as one task."""
    properties = FrozenProperties(
        {"bootstrap.servers": bootstrap, "group.id": f"prefetch-{uuid.uuid4().hex}", **extra}
    )
    settings = ReadSettings(
        poll_timeout_ms=120_000, cache_timeout_ms=60_000, live_clusters=frozenset({"c"})
    )
    ranges = tuple(OffsetRange("c", TOPIC, p, 0, each) for p in range(partitions))
    task = ReadTask(ranges, {"c": properties}, settings)
    began, cpu = time.monotonic(), time.process_time()
    rows = sum(batch.num_rows for batch in read_task(task))
    seconds, cpu = time.monotonic() - began, time.process_time() - cpu
    if rows != partitions * each:
        raise SystemExit(f"read {rows} rows, expected {partitions * each}")
    return seconds, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--per-partition", type=int, default=250_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows = args.partitions * args.per_partition
    with start_clusters(["c"], broker="kafka") as clusters:
        cluster = clusters["c"]
        cluster.create_topic(TOPIC, partitions=args.partitions)
        cluster.produce_bulk(TOPIC, _records(args.partitions, args.per_partition))
        print(f"{rows:,} records in {args.partitions} partitions; one task reads them all")
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in SIDES}
        for rnd in range(args.rounds):
            names = list(SIDES) if rnd % 2 == 0 else list(reversed(SIDES))
            for name in names:
                seconds, cpu = _read(
                    cluster.bootstrap_servers, SIDES[name], args.partitions, args.per_partition
                )
                results[name].append((seconds, cpu))
                print(
                    f"  round {rnd + 1} {name:>15}: {rows / seconds:>10,.0f} rows/s, "
                    f"{cpu / rows * 1e6:.2f} us/record",
                    flush=True,
                )
    print(f"\n{args.rounds} rounds, medians:")
    rps = {n: statistics.median(rows / s for s, _ in r) for n, r in results.items()}
    for name, runs in results.items():
        cpu = statistics.median(c / rows * 1e6 for _, c in runs)
        print(f"  {name:>15} {rps[name]:>10,.0f} rows/s {cpu:.2f} us/record")
    print(f"  ours / backoff=1000ms: {rps['ours'] / rps['backoff=1000ms']:.2f}x rows/s")


if __name__ == "__main__":
    main()
