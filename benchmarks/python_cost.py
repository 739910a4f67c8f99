"""Where a ``dynamic_kafka`` task's Python CPU goes, read in one process without Spark.

On one Apache Kafka cluster (default 2,000,000 records of 100 bytes in 8 partitions), each
pass reads every record once with a fresh consumer and the source's fetch settings, with the
cyclic GC paused as a task does; CPU is split per thread (``/proc/self/task``): the main thread
(Python: ``consume()`` building one ``Message`` per record, then our routing and Arrow building)
and librdkafka's threads (fetching, parsing record batches in C):

* ``consume``: ``consume()`` only, the messages dropped: the client's floor in Python.
* ``read_task``: the source's own executor path (``source/executor/read.py``) into Arrow batches.
* ``arrow``: ``BatchBuilder`` alone over messages already consumed (the Arrow share).

What a reader that fills Arrow columns in C (no Python object per record) would still pay is the
librdkafka threads' share plus copying bytes into column buffers; the main thread's share is what
it would save. Run: ``python -m benchmarks.python_cost [--records N] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import statistics
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from pyspark_dynamic_kafka.engines.read_python_batches import BatchBuilder
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.kafka.pool import consumer_config
from pyspark_dynamic_kafka.source.executor.read import read_task
from pyspark_dynamic_kafka.source.executor.task import OffsetRange, ReadSettings, ReadTask
from pyspark_dynamic_kafka.testing import start_clusters

TOPIC = "cost"
_TICKS = os.sysconf("SC_CLK_TCK")


def _threads_cpu() -> tuple[float, float]:
    """CPU seconds of (this thread, every other thread of the process)."""
    me = threading.get_native_id()
    main = other = 0.0
    for task in Path("/proc/self/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        cpu = (int(fields[11]) + int(fields[12])) / _TICKS
        if int(task.name) == me:
            main += cpu
        else:
            other += cpu
    return main, other


def _priced(run: Callable[[], int]) -> tuple[float, float]:
    """(main thread, librdkafka threads) CPU µs per record of ``run()`` (returns records).

    Threads that end inside ``run`` (a consumer closed there) take their CPU with them, so every
    pass closes its consumers only after the second reading.
    """
    gc.disable()
    try:
        main0, other0 = _threads_cpu()
        count = run()
        main1, other1 = _threads_cpu()
    finally:
        gc.enable()
    return (main1 - main0) / count * 1e6, (other1 - other0) / count * 1e6


def _consumer(bootstrap: str) -> Any:
    return Consumer(consumer_config(FrozenProperties({"bootstrap.servers": bootstrap})))


def consume_only(bootstrap: str, ends: dict[int, int], keep: list[Any] | None = None) -> int:
    consumer = _consumer(bootstrap)
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in ends])
    left, count = {p for p, e in ends.items() if e}, 0
    while left:
        for m in consumer.consume(num_messages=10000, timeout=0.2):
            if m.error() is not None:
                continue
            count += 1
            if keep is not None and len(keep) < _KEEP:
                keep.append(m)
            if m.offset() + 1 >= ends[m.partition()]:
                left.discard(m.partition())
    _closing.append(consumer)
    return count


def through_read_task(bootstrap: str, ends: dict[int, int]) -> int:
    ranges = tuple(OffsetRange("c", TOPIC, p, 0, e) for p, e in ends.items())
    props = {"c": FrozenProperties({"bootstrap.servers": bootstrap})}
    task = ReadTask(ranges, props, ReadSettings(120_000, 600_000, frozenset({"c"})))
    return sum(batch.num_rows for batch in read_task(task))


def arrow_only(messages: list[Any]) -> int:
    builder = BatchBuilder("c")
    step = 10000
    for i in range(0, len(messages), step):
        chunk = messages[i : i + step]
        builder.add_run(TOPIC, chunk[0].partition(), chunk)
        if builder.due:
            builder.flush()
    if len(builder):
        builder.flush()
    return len(messages)


@contextlib.contextmanager
def loaded_topic(name: str, topic: str, records: int) -> Iterator[tuple[str, dict[int, int]]]:
    """One Apache Kafka cluster with ``records`` records of 100 bytes in 8 partitions of
    ``topic``: its bootstrap servers and each partition's end offset."""
    with start_clusters([name], broker="kafka") as clusters:
        cluster = clusters[name]
        cluster.create_topic(topic, partitions=8)
        payload = bytes(range(100))
        cluster.produce_bulk(topic, ((None, payload) for _ in range(records)))
        yield cluster.bootstrap_servers, {p: hw for p, (_, hw) in cluster.watermarks(topic).items()}


_closing: list[Any] = []
_KEEP = 500_000


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with loaded_topic("cost", TOPIC, args.records) as (bootstrap, ends):
        passes: dict[str, list[tuple[float, float]]] = {"consume": [], "read_task": []}
        arrow: list[float] = []
        for _ in range(args.rounds + 1):  # the first round warms up, not counted
            kept: list[Any] = []
            c = _priced(lambda: consume_only(bootstrap, ends))
            r = _priced(lambda: through_read_task(bootstrap, ends))
            consume_only(bootstrap, ends, kept)
            a = _priced(lambda kept=kept: arrow_only(kept))  # type: ignore[misc]
            for consumer in _closing:
                consumer.close()
            _closing.clear()
            passes["consume"].append(c)
            passes["read_task"].append(r)
            arrow.append(a[0])
        for name, values in passes.items():
            main_us = statistics.median(v[0] for v in values[1:])
            rd_us = statistics.median(v[1] for v in values[1:])
            rounds = " ".join(f"{v[0]:.2f}+{v[1]:.2f}" for v in values[1:])
            print(
                f"{name:10} main thread {main_us:.2f} us/rec, librdkafka threads {rd_us:.2f} "
                f"us/rec (rounds, main+librdkafka: {rounds})"
            )
        print(f"arrow      main thread {statistics.median(arrow[1:]):.2f} us/rec (BatchBuilder)")


if __name__ == "__main__":
    main()
