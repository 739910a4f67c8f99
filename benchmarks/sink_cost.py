"""Where a sink task's time goes: the product's produce loop against bare confluent-kafka loops.

No Spark: one process produces the same Arrow batches (default 1,000,000 rows, ``key`` the id as
a string, ``value`` 100 bytes, batches of 10,000 rows as Spark hands them) to a fresh topic of 8
partitions on one Apache Kafka broker, five ways:

* ``product``: :func:`pyspark_dynamic_kafka.sink.executor.produce.produce_batches` (atLeastOnce);
* ``rows``: only its row loop (confluent-kafka's producer's ``_rows``: columns to Python, one
  keyword dict a row), nothing sent;
* ``bare``: ``to_pylist`` of the columns and one ``Producer.produce(topic, value, key)`` a row,
  same producer properties, no delivery callback, then ``flush``;
* ``counted``: ``bare`` with a delivery callback that only counts;
* ``deliveries``: ``bare`` with the product's delivery callback
  (:class:`~pyspark_dynamic_kafka.engines.write_python.Deliveries`);
* ``keywords``: ``deliveries`` with ``value`` and ``key`` passed as a keyword dict, as the product;
* ``native``: ``product`` with the task planned on ``librdkafka`` (the compiled core's producer,
  ``writer=native``), when the core is installed.

The window is the loop plus the flush; CPU is this process's ``getrusage`` (librdkafka's threads
included). Rounds interleaved, order reversed every other round, after a warm-up round; ratios of
``product`` against each and their medians. ``python -m benchmarks.sink_cost``.
"""

from __future__ import annotations

import resource
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pyarrow as pa
from benchmarks import report
from benchmarks.measure import load_average
from benchmarks.spark_sides import Run
from confluent_kafka import Producer

from pyspark_dynamic_kafka.engines import write_python
from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.sink.executor import produce
from pyspark_dynamic_kafka.sink.executor.task import WriteTask
from pyspark_dynamic_kafka.sink.route import WriteRoute
from pyspark_dynamic_kafka.testing import start_clusters

PAIRS = [
    ("native", "product"),
    ("native", "bare"),
    ("product", "bare"),
    ("product", "counted"),
    ("product", "deliveries"),
    ("product", "keywords"),
]
BATCH = 10_000


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _batches(records: int, size: int) -> list[pa.RecordBatch]:
    keys = pa.array([str(i) for i in range(records)])
    filler = "x" * max(size - 12, 0)
    values = pa.array([f"{i:012d}{filler}".encode() for i in range(records)], pa.binary())
    return [
        pa.RecordBatch.from_arrays(
            [keys.slice(at, BATCH), values.slice(at, BATCH)], ["key", "value"]
        )
        for at in range(0, records, BATCH)
    ]


def _bare(
    task: WriteTask, batches: list[pa.RecordBatch], callback: Any, keywords: bool = False
) -> None:
    producer = Producer(task.producer_properties())
    topic = next(iter(task.route.topics))
    extra = {} if callback is None else {"on_delivery": callback}
    for batch in batches:
        keys, values = batch.column(0).to_pylist(), batch.column(1).to_pylist()
        for key, value in zip(keys, values, strict=True):
            while True:
                try:
                    if keywords:  # as the product calls it: a keyword dict a row
                        row = {"value": value, "key": key}
                        producer.produce(topic, **extra, **row)
                    else:
                        producer.produce(topic, value, key, **extra)
                    break
                except BufferError:
                    producer.poll(0.1)
        producer.poll(0)
    if producer.flush(120):
        raise SystemExit("records left unacknowledged")


def _rows(task: WriteTask, batches: list[pa.RecordBatch]) -> None:
    producer = write_python.PythonProducer(task.producer_properties(), None)
    topic = next(iter(task.route.topics))
    try:
        for batch in batches:
            for _ in producer._rows(batch, topic, ()):
                pass
    finally:
        producer.close()


def _counter() -> Callable[[Any, Any], None]:
    count = [0]

    def delivered(error: Any, message: Any) -> None:
        count[0] += 1

    return delivered


WAYS: dict[str, Callable[[WriteTask, list[pa.RecordBatch]], object]] = {
    "product": produce.produce_batches,
    "rows": _rows,
    "bare": lambda task, batches: _bare(task, batches, None),
    "counted": lambda task, batches: _bare(task, batches, _counter()),
    "deliveries": lambda task, batches: _bare(task, batches, write_python.Deliveries()),
    "keywords": lambda task, batches: _bare(
        task, batches, write_python.Deliveries(), keywords=True
    ),
}
if core() is not None:
    WAYS["native"] = lambda task, batches: produce.produce_batches(
        replace(task, engine="librdkafka"), batches
    )
else:  # no compiled core: its pairs are left out
    PAIRS = [pair for pair in PAIRS if "native" not in pair]


def main() -> None:
    parser = report.parser(__doc__, 1_000_000)
    args = parser.parse_args()
    batches = _batches(args.records, args.size)
    results: list[dict[str, Run]] = []
    with start_clusters(["cost"], broker="kafka") as started:
        cluster = started["cost"]
        properties = FrozenProperties({"bootstrap.servers": cluster.bootstrap_servers})
        for rnd in range(args.rounds + 1):
            names = list(WAYS) if rnd % 2 else list(reversed(WAYS))
            load, runs = load_average(), {}
            for name in names:
                topic = f"c{uuid.uuid4().hex[:12]}"
                cluster.create_topic(topic, partitions=8)
                task = WriteTask(WriteRoute("bench", "cost", frozenset([topic]), properties))
                start, cpu = time.perf_counter(), _cpu()
                WAYS[name](task, batches)
                seconds, spent = time.perf_counter() - start, _cpu() - cpu
                runs[name] = Run(args.records, seconds, {"Python": spent})
                cluster.delete_topic(topic)
            runs = {name: runs[name] for name in WAYS}
            if rnd:
                results.append(runs)
            report.print_round("sink cost", rnd, load, runs, PAIRS)
    print(f"\nsink cost, {len(results)} rounds, load average now {load_average():.1f}:")
    print("\n".join(report.pair_summary(results, PAIRS)))


if __name__ == "__main__":
    main()
