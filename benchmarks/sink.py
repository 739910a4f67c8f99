"""The write side: ``dynamic_kafka``'s sink beside Spark's ``format("kafka")`` sink, in one run.

One Apache Kafka cluster; the same rows for every side (default 2,000,000: ``key`` the id as a
string, ``value`` ``--size`` bytes), prepared once as Parquet in 2 files (2 tasks on the
``local[2]`` session) and read by every side; each write goes to a fresh topic of 8 partitions
that is deleted afterwards. Sides, all on one warm SparkSession, each side with its own producer
defaults:

* ``kafka``: ``writeStream.format("kafka")`` (Spark's sink, at-least-once);
* ``dynamic_kafka``: ``writeStream.format("dynamic_kafka")``, ``deliveryGuarantee=atLeastOnce``,
  ``writer=python`` (confluent-kafka, a Python call per record);
* ``native``: the same with ``writer=native`` (the compiled core over its direct produce path:
  its own Produce requests, and its own transactions at exactlyOnce);
* ``native_librdkafka``: ``native`` with ``kafka.partitioner=murmur2`` (keyed rows placed alike),
  which the direct path does not take: the core's librdkafka producer, for the comparison;
* ``exactly_once``, ``exactly_once_native`` and ``exactly_once_librdkafka``: ``dynamic_kafka``,
  ``native`` and ``native_librdkafka`` with ``deliveryGuarantee=exactlyOnce`` (one transaction
  per task);
* ``kafka_batch``, ``dynamic_kafka_batch`` (``writer=python``) and ``native_batch``
  (``writer=native``): ``df.write`` of the same Parquet to each sink.

A streaming side is one micro-batch (a new query on the Parquet directory) priced as in
:func:`benchmarks.spark_sides.measure`: its ``addBatch`` span (reads the Parquet and writes every
row, each task waiting for its acknowledgements) and the CPU of the Spark JVM and its Python
workers. A batch side is the wall-clock span of ``save()`` and the same CPU. After every write
the topic's end offsets are checked: exactly the rows for the at-least-once sides; for
``exactly_once`` the rows plus at most one transaction marker per task and partition. A warm-up
round, then ``--rounds`` rounds interleaved, order reversed every other round; ratios per round and
their medians. ``python -m benchmarks.sink``; ``--records N --size B --rounds R``.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks import report
from benchmarks.measure import CpuSampler, load_average, spark_jvm
from benchmarks.spark_sides import Cluster, Run, bench_setup, measure, write_metadata
from confluent_kafka import Consumer, Message, TopicPartition

from pyspark_dynamic_kafka.testing import local_spark_session, start_clusters

PARTITIONS = 8
TASKS = 2
PAIRS = [
    ("native", "kafka"),
    ("native_batch", "kafka_batch"),
    ("dynamic_kafka", "kafka"),
    ("dynamic_kafka_batch", "kafka_batch"),
    ("native", "dynamic_kafka"),
    ("native_librdkafka", "kafka"),
    ("native", "native_librdkafka"),
    ("exactly_once_native", "kafka"),
    ("exactly_once", "kafka"),
    ("exactly_once_native", "native"),
    ("exactly_once_librdkafka", "kafka"),
    ("exactly_once_native", "exactly_once_librdkafka"),
]
#: Issue 23's target for atLeastOnce (the default writer=auto writes natively where the core is
#: installed): rows/s >= 1.0x, CPU <= 1.0x of Spark's sink.
TARGETS: dict[str, report.Target] = {
    "native/kafka": (1.0, 1.0),
    "native_batch/kafka_batch": (1.0, 1.0),
}
#: The ``writer`` option of each dynamic_kafka side.
WRITERS = {
    "dynamic_kafka": "python",
    "exactly_once": "python",
    "dynamic_kafka_batch": "python",
    "native": "native",
    "native_librdkafka": "native",
    "exactly_once_native": "native",
    "exactly_once_librdkafka": "native",
    "native_batch": "native",
}


def committed_messages(cluster: Any, topic: str, deadline_s: float = 300.0) -> Iterator[Message]:
    """Every committed record of ``topic`` (``read_committed``) up to its end offsets when called,
    read by a consumer of its own; a read that has not reached them in ``deadline_s`` stops the
    run."""
    ends = {p: high for p, (_, high) in cluster.watermarks(topic).items()}
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "sink-bench-check",
            "isolation.level": "read_committed",
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in ends])
        done = {p for p, high in ends.items() if not high}
        deadline = time.monotonic() + deadline_s
        while len(done) < len(ends):
            if time.monotonic() > deadline:
                raise SystemExit(f"could not read {topic} back to its end offsets")
            for message in consumer.consume(10_000, 2):
                if message.error() is not None:
                    raise SystemExit(f"reading {topic} back: {message.error()}")
                yield message
            for tp in consumer.position([TopicPartition(topic, p) for p in ends]):
                if tp.offset >= ends[tp.partition]:
                    done.add(tp.partition)
    finally:
        consumer.close()


def side_options(sink: str, listener: Cluster, topic: str, metadata: Path) -> dict[str, str]:
    """The write options of side ``sink`` to ``topic`` through ``listener``: Spark's sink
    (``kafka``, ``kafka_batch``) or ours, by ``metadata`` (stream ``bench``), with the side's
    writer (:data:`WRITERS`) and guarantee (``exactly_once*``: exactlyOnce)."""
    if sink in ("kafka", "kafka_batch"):
        servers = {"kafka.bootstrap.servers": listener.bootstrap, "topic": topic}
        return servers | listener.java_options()
    options = {
        "metadataService": "file",
        "metadataService.path": str(metadata),
        "streamId": "bench",
        "writer": WRITERS[sink],
    }
    if sink.startswith("exactly_once"):
        options |= {"deliveryGuarantee": "exactlyOnce", "sinkId": f"s{topic}"}
    if sink.endswith("librdkafka"):
        # murmur2 puts keyed rows where the sink's murmur2_random does, and the direct
        # produce path does not take it: the core's librdkafka producer writes instead
        options["kafka.partitioner"] = "murmur2"
    return options


class Writes:
    """Every side's write of the prepared rows to a fresh topic of one cluster."""

    def __init__(
        self,
        spark: Any,
        cluster: Any,
        rows: Path,
        total: int,
        workdir: Path,
        listener: Cluster | None = None,
    ) -> None:
        self.spark, self.cluster, self.rows, self.total = spark, cluster, rows, total
        self.workdir = workdir
        #: The listener every side writes through (PLAINTEXT unless given: ``--secure``).
        self.listener = listener or Cluster("w", cluster.bootstrap_servers)
        self.schema = spark.read.parquet(str(rows)).schema
        self.jvm = spark_jvm()

    def _topic(self) -> tuple[str, Path]:
        """A fresh topic and a metadata file that maps stream ``bench`` to it."""
        topic = f"w{uuid.uuid4().hex[:12]}"
        self.cluster.create_topic(topic, partitions=PARTITIONS)
        metadata = self.workdir / f"{topic}.yaml"
        write_metadata(metadata, [self.listener], topic)
        return topic, metadata

    def _options(self, sink: str, topic: str, metadata: Path) -> dict[str, str]:
        return side_options(sink, self.listener, topic, metadata)

    def _check(self, name: str, topic: str) -> None:
        """The topic holds the rows (exactlyOnce: plus its transactions' commit markers)."""
        ends = sum(high for _, high in self.cluster.watermarks(topic).values())
        markers = TASKS * PARTITIONS if name.startswith("exactly_once") else 0
        if not self.total <= ends <= self.total + markers:
            raise SystemExit(f"{name} left {ends} offsets in {topic}, expected {self.total}")
        self.cluster.delete_topic(topic)

    def stream(self, name: str) -> Run:
        topic, metadata = self._topic()
        options = self._options(name, topic, metadata)
        checkpoint = str(self.workdir / f"{topic}.checkpoint")
        fmt = "kafka" if name == "kafka" else "dynamic_kafka"

        def sink(frame: Any) -> Any:
            writer = frame.writeStream.format(fmt).option("checkpointLocation", checkpoint)
            return writer.options(**options).trigger(availableNow=True)

        frame = self.spark.readStream.schema(self.schema).parquet
        run = measure(self.jvm, lambda: frame(str(self.rows)), self.total, sink=sink)
        self._check(name, topic)
        return run

    def batch(self, name: str) -> Run:
        topic, metadata = self._topic()
        fmt = "kafka" if name == "kafka_batch" else "dynamic_kafka"
        frame = self.spark.read.parquet(str(self.rows)).write.format(fmt)
        with CpuSampler({"spark": self.jvm}) as sampler:
            start = time.time()
            frame.options(**self._options(name, topic, metadata)).mode("append").save()
            end = time.time()
        self._check(name, topic)
        return Run(self.total, end - start, sampler.between("spark", start, end))

    def sides(self) -> dict[str, Callable[[], Run]]:
        streams = [
            "kafka",
            "dynamic_kafka",
            "native",
            "native_librdkafka",
            "exactly_once",
            "exactly_once_native",
            "exactly_once_librdkafka",
        ]
        batches = ["kafka_batch", "dynamic_kafka_batch", "native_batch"]
        sides: dict[str, Callable[[], Run]] = {}
        for name in streams:
            sides[name] = functools.partial(self.stream, name)
        for name in batches:
            sides[name] = functools.partial(self.batch, name)
        return sides


def prepare(spark: Any, path: Path, records: int, size: int) -> None:
    """``records`` rows (``key`` the id, ``value`` ``size`` bytes) as Parquet in TASKS files."""
    filler = "x" * max(size - 12, 0)
    value = f"CAST(concat(lpad(CAST(id AS STRING), 12, '0'), '{filler}') AS BINARY) AS value"
    frame = spark.range(records, numPartitions=TASKS).selectExpr("CAST(id AS STRING) AS key", value)
    frame.write.mode("overwrite").parquet(str(path))


def main() -> None:
    parser = report.parser(__doc__, 2_000_000)
    args = parser.parse_args()
    bench, jars = bench_setup()
    workdir = bench / "sink"
    workdir.mkdir(exist_ok=True)
    with start_clusters(["w"], broker="kafka") as started:
        spark = local_spark_session(
            "dynamic-kafka-sink-bench",
            **{"spark.ui.showConsoleProgress": "false", "spark.jars": ",".join(map(str, jars))},
        )
        spark.sparkContext.setLogLevel("ERROR")
        rows = workdir / "rows.parquet"
        prepare(spark, rows, args.records, args.size)
        sides = Writes(spark, started["w"], rows, args.records, workdir).sides()
        results: list[dict[str, Run]] = []
        for rnd in range(args.rounds + 1):
            names = list(sides) if rnd % 2 else list(reversed(sides))
            load = load_average()
            runs = {name: sides[name]() for name in names}
            runs = {name: runs[name] for name in sides}
            if rnd:
                results.append(runs)
            report.print_round("write", rnd, load, runs, PAIRS)
        spark.stop()
    print(f"\nwrite, {len(results)} rounds, load average now {load_average():.1f}:")
    print("\n".join(report.pair_summary(results, PAIRS, TARGETS)))


if __name__ == "__main__":
    main()
