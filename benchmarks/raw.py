"""Raw confluent-kafka: the most a Python reader with the same client gets (today's limit).

Two consumer processes (as many as Spark's ``local[2]`` cores), each reading half of every
cluster's partitions with one consumer per cluster and the source's fetch settings, touching key,
value, offset and timestamp of every record. They are released together once their consumers
exist (interpreter start-up is not timed); rows/s = records / wall time until both are done, CPU =
both processes' CPU (librdkafka threads included) over their reads.
"""

from __future__ import annotations

import multiprocessing as mp
import resource
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.spark_sides import Run
from confluent_kafka import Consumer, TopicPartition

from pyspark_dynamic_kafka.kafka.pool import CONSUMER_DEFAULTS

# (bootstrap, topic, {partition: end offset}) per consumer
Share = tuple[str, str, dict[int, int]]


def _config(bootstrap: str) -> dict[str, Any]:
    config: dict[str, Any] = dict(CONSUMER_DEFAULTS)
    config.update(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-raw",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    return config


def _consume(shares: list[Share], start: Any, out: Any) -> None:
    """Read [0, end) of the partitions of every share; report (records, CPU s, done time)."""
    consumers = [(Consumer(_config(b)), topic, ends) for b, topic, ends in shares]
    start.wait()
    before = resource.getrusage(resource.RUSAGE_SELF)
    for consumer, topic, ends in consumers:
        consumer.assign([TopicPartition(topic, p, 0) for p in ends])
    remaining = [{p for p, end in ends.items() if end > 0} for _, _, ends in consumers]
    count = touched = 0
    while any(remaining):
        for (consumer, _, ends), left in zip(consumers, remaining, strict=True):
            if not left:
                continue
            for m in consumer.consume(num_messages=10000, timeout=0.05):
                if m.error() is not None:
                    continue
                key, value, offset, (_, ts) = m.key(), m.value(), m.offset(), m.timestamp()
                touched += len(value) + (len(key) if key else 0) + (ts & 1)
                count += 1
                if offset + 1 >= ends[m.partition()]:
                    left.discard(m.partition())
    done = time.time()
    after = resource.getrusage(resource.RUSAGE_SELF)
    for consumer, _, _ in consumers:
        consumer.close()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out.put((count, cpu, done))


def split_shares(shares: Sequence[Share], processes: int = 2) -> list[list[Share]]:
    """Every cluster's partitions dealt round-robin to ``processes`` groups."""
    groups: list[list[Share]] = [[] for _ in range(processes)]
    for bootstrap, topic, ends in shares:
        ordered = sorted(ends)
        for i, group in enumerate(groups):
            mine = {p: ends[p] for p in ordered[i::processes]}
            if mine:
                group.append((bootstrap, topic, mine))
    return [g for g in groups if g]


def raw(shares: Sequence[Share]) -> Run:
    """Read every share with two processes released together."""
    groups = split_shares(shares)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    start = ctx.Barrier(len(groups) + 1)
    procs = [ctx.Process(target=_consume, args=(g, start, out)) for g in groups]
    for p in procs:
        p.start()
    start.wait()
    started = time.time()
    results = [out.get() for _ in procs]
    for p in procs:
        p.join()
    rows = sum(r[0] for r in results)
    return Run(rows, max(r[2] for r in results) - started, {"Python": sum(r[1] for r in results)})
