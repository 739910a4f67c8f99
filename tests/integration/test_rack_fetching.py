"""Follower fetching (KIP-392): with ``kafka.client.rack`` the executor's consumers fetch from
the replicas in their own rack, measured with librdkafka's statistics, on both readers.

An Apache Kafka stretch cluster has brokers 0, 1, 2 in racks dc1, dc2, dc2 and the rack-aware
replica selector; every partition of ``orders`` has a replica on each broker, and half of the
partitions (half of the bytes) have their leader in dc1, half in dc2. The same records are read
three times through the product's read path, once per reader (the ``reader`` fixture: the
Python reader, then the compiled core): the first micro-batch of a streaming reader with
``assignment=group`` (alone in a group of its own, so it owns every partition), its tasks
pickled as Spark ships them and read by
:func:`~pyspark_dynamic_kafka.source.executor.read.read_task`
with the pooled consumer, in this process: as the app of dc1 (``kafka.client.rack=dc1``), as the
app of dc2 (``kafka.client.rack=dc2``), and without the option. With it, each app receives
nearly all its bytes from its own rack; without it, the bytes follow the leaders (half from each
rack). librdkafka counts the bytes it received from each broker; without the option the
compiled core reads through its direct fetch path (``native/src/fetch.rs``: Fetch requests to
each partition's leader), which counts them itself (``Consumer.direct_bytes()``). The test puts
the measured consumer into the pool itself, built from the task's own properties
(:func:`~pyspark_dynamic_kafka.kafka.pool.consumer_config`) plus ``statistics.interval.ms``, and
checks that every task used it: for the Python reader a confluent-kafka consumer with a
statistics callback (a Python callable, which a ``kafka.*`` option cannot carry), for the
native reader a consumer of the compiled core, whose ``statistics()`` is librdkafka's latest
document (the pool's key for it is the native reader's factory, as the task asks for).
"""

from __future__ import annotations

import json
import pickle
import signal
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic
from tests.integration.helpers import EstateFactory, wait_until

from pyspark_dynamic_kafka.datasource import DynamicKafkaDataSource
from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.engines.read_core import native_factory
from pyspark_dynamic_kafka.kafka.pool import (
    ConsumerFactory,
    confluent_consumer,
    consumer_config,
    consumer_pool,
)
from pyspark_dynamic_kafka.source.executor.task import ReadTask
from pyspark_dynamic_kafka.source.schema import spark_schema

RACKS = ["dc1", "dc2", "dc2"]
#: Replicas of each partition, leader first: two leaders in dc1 (broker 0), two in dc2 (1, 2).
REPLICAS = [[0, 1, 2], [1, 0, 2], [2, 0, 1], [0, 2, 1]]
RACK_NODES = {"dc1": {0}, "dc2": {1, 2}}
RECORDS_PER_PARTITION = 1000
VALUE_BYTES = 1000
STATISTICS_INTERVAL_MS = 200


class Statistics:
    """The librdkafka statistics documents one consumer emitted, newest last: each one its
    callback got (Python reader), or each new one its ``statistics()`` returned (native)."""

    def __init__(self) -> None:
        self.documents: list[dict[str, Any]] = []

    def __call__(self, text: str | None) -> None:
        document = None if text is None else json.loads(text)
        if document is not None and (not self.documents or document != self.documents[-1]):
            self.documents.append(document)

    def bytes_by_broker(self) -> dict[int, int]:
        """Bytes received from each broker node (-1: bootstrap and logical brokers), so far."""
        found: dict[int, int] = {}
        for broker in self.documents[-1]["brokers"].values():
            found[broker["nodeid"]] = found.get(broker["nodeid"], 0) + broker["rxbytes"]
        return found

    def fetched_from(self, topic: str) -> dict[int, tuple[int, int]]:
        """Partition -> (leader, broker it was last fetched from), as librdkafka reports them."""
        partitions = self.documents[-1]["topics"][topic]["partitions"].values()
        return {
            p["partition"]: (p["leader"], p["broker"]) for p in partitions if p["partition"] >= 0
        }


def plan_group_read(options: dict[str, str]) -> tuple[Any, list[ReadTask]]:
    """A streaming reader with ``assignment=group``, alone in its group, and the tasks of its
    first micro-batch: every record, from the earliest offsets (the group has none)."""
    reader = DynamicKafkaDataSource(options).streamReader(spark_schema(False))
    start = reader.initialOffset()
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    tasks = [pickle.loads(pickle.dumps(t)) for t in reader.partitions(start, end)]
    return reader, [t for t in tasks if isinstance(t, ReadTask)]


def measured_consumer(
    engine: str, properties: dict[str, str], statistics: Statistics
) -> tuple[Any, ConsumerFactory]:
    """A consumer for the planned ``engine`` (``python``, ``librdkafka`` or ``direct``) built as
    the pool's factory builds it, plus librdkafka statistics into ``statistics``; and the
    factory it pools under."""
    config: dict[str, Any] = consumer_config(properties)
    if engine == "python":
        config.update({"statistics.interval.ms": STATISTICS_INTERVAL_MS, "stats_cb": statistics})
        return Consumer(config), confluent_consumer
    module = core()
    assert module is not None
    config["statistics.interval.ms"] = str(STATISTICS_INTERVAL_MS)
    direct = engine == "direct"
    return module.Consumer(sorted(config.items()), direct=direct), native_factory(engine)


def serve(reader: str, consumer: Any, statistics: Statistics) -> None:
    """Let an idle measured consumer deliver the statistics librdkafka emitted meanwhile."""
    if reader == "python":
        consumer.poll(0.1)  # serves the callback
    else:
        statistics(consumer.statistics())


def read_with_statistics(
    stream: Any, tasks: list[ReadTask], rack: str | None, reader: str
) -> tuple[set[tuple[int, int, str]], Statistics, dict[int, int]]:
    """Read ``tasks`` through ``stream.read`` (``read_task``) with one pooled consumer of
    ``reader`` that reports statistics; the records (partition, offset, value), the
    statistics, taken after the last fetch, and the bytes the compiled core's direct fetch path
    received per broker (none for the Python reader). The tasks' client properties must carry
    ``client.rack=rack``."""
    assert tasks
    (cluster_id,) = {r.cluster for t in tasks for r in t.ranges}
    properties = tasks[0].properties[cluster_id]
    generation = tasks[0].settings.generation
    assert all(t.properties[cluster_id] == properties for t in tasks)
    assert properties.get("client.rack") == rack  # kafka.client.rack reached the executors
    # the driver planned the cluster for this reader (reader=native fails at start otherwise):
    # the core's direct fetch path, or librdkafka's consumer with client.rack
    planned = {"python": "python", "native": "direct" if rack is None else "librdkafka"}[reader]
    assert all(t.settings.engines == {cluster_id: planned} for t in tasks)
    statistics = Statistics()
    consumer, factory = measured_consumer(planned, properties, statistics)
    pool = consumer_pool()
    pool.release(cluster_id, properties, consumer, True, 600_000, generation, factory)
    rows: set[tuple[int, int, str]] = set()
    for task in tasks:
        for batch in stream.read(task):
            columns = batch.to_pydict()
            values = map(bytes.decode, columns["value"])
            rows.update(zip(columns["partition"], columns["offset"], values, strict=True))
        pooled = pool.acquire(cluster_id, properties, generation, factory)
        assert pooled is consumer, "the task did not read with the consumer under measure"
        pool.release(cluster_id, properties, pooled, True, 600_000, generation, factory)
    consumer = pool.acquire(cluster_id, properties, generation, factory)
    try:
        # A document emitted after the read ended counts every byte of it.
        serve(reader, consumer, statistics)
        emitted = len(statistics.documents)

        def emitted_two_more() -> bool:
            serve(reader, consumer, statistics)
            return len(statistics.documents) >= emitted + 2

        wait_until(emitted_two_more, timeout=300, what="librdkafka statistics after the read")
        direct = consumer.direct_bytes() if reader == "native" else {}
    finally:
        consumer.close()
    return rows, statistics, direct


@pytest.fixture
def stretch(kafka_estate: EstateFactory, empty_consumer_pool: None) -> Iterator[Any]:
    estate = kafka_estate("east", brokers=3, racks=RACKS, partitions=0)
    east = estate["east"]
    admin = AdminClient({"bootstrap.servers": east.bootstrap_servers})
    topic = NewTopic("orders", len(REPLICAS), replica_assignment=REPLICAS)
    admin.create_topics([topic])["orders"].result(60)
    # Every broker's metadata must show the leaders: a client asks any of them (a broker that
    # has not caught up with the controller yet answers without the topic).
    for server in east.bootstrap_servers.split(","):
        probe = Consumer({"bootstrap.servers": server, "group.id": "probe"})
        try:

            def leaders_ready(probe: Any = probe) -> bool:
                listed = probe.list_topics("orders", timeout=10).topics.get("orders")
                if listed is None or listed.error is not None:
                    return False
                found = {p: m.leader for p, m in listed.partitions.items()}
                return found == {p: r[0] for p, r in enumerate(REPLICAS)}

            wait_until(leaders_ready, what=f"the leaders of orders on {server}")
        finally:
            probe.close()
    estate.route("east")
    yield estate


def test_client_rack_fetches_from_the_replicas_in_its_rack(stretch: Any, reader: str) -> None:
    east = stretch["east"]
    produced: set[tuple[int, int, str]] = set()
    for partition in range(len(REPLICAS)):
        values = [f"{partition}-{i}-".ljust(VALUE_BYTES, "x") for i in range(RECORDS_PER_PARTITION)]
        records = [{"key": None, "value": v, "partition": partition} for v in values]
        acknowledged = east.produce("orders", records)
        produced.update((p, o, v) for (p, o), v in zip(acknowledged, values, strict=True))
    total = len(REPLICAS) * RECORDS_PER_PARTITION * VALUE_BYTES
    options = stretch.options(**{"kafkaConsumer.cacheTimeoutMs": "600000"})
    leaders = {p: replicas[0] for p, replicas in enumerate(REPLICAS)}

    print(
        f"\nreader={reader}: {total:,} bytes of values in {len(REPLICAS)} partitions, "
        f"leaders {leaders}"
    )
    for rack in ("dc1", "dc2", None):
        extra = {} if rack is None else {"kafka.client.rack": rack}
        group = f"app-{reader}-{rack}"
        app = {**options, **extra, "kafka.group.id": group, "assignment": "group"}
        app["reader"] = reader
        sigterm = signal.getsignal(signal.SIGTERM)  # the group reader handles it, as in Spark
        stream, tasks = plan_group_read(app)
        try:
            rows, statistics, direct = read_with_statistics(stream, tasks, rack, reader)
        finally:
            stream.stop()
            signal.signal(signal.SIGTERM, sigterm)
        assert rows == produced  # exact records, every time
        # The compiled core reads a cluster without client.rack through its direct fetch path,
        # with client.rack through librdkafka (follower fetching): one of the two counts.
        directly = reader == "native" and rack is None
        assert bool(direct) == directly, direct
        by_broker = direct if directly else statistics.bytes_by_broker()
        received = sum(by_broker.values())
        shares = {
            name: sum(by_broker.get(n, 0) for n in nodes) / received
            for name, nodes in RACK_NODES.items()
        }
        fetched = {} if directly else statistics.fetched_from("orders")
        print(
            f"kafka.client.rack={rack}: {received:,} bytes received, by broker node (-1: "
            f"bootstrap/coordinator) {dict(sorted(by_broker.items()))}; share dc1 "
            f"{shares['dc1']:.2%}, dc2 {shares['dc2']:.2%}; partition -> fetched from broker "
            f"{ {p: b for p, (_, b) in sorted(fetched.items())} }"
        )
        if not directly:
            assert {p: leader for p, (leader, _) in fetched.items()} == leaders
        if rack is not None:  # nearly every byte from the own rack, every value from there
            assert shares[rack] >= 0.9, (rack, by_broker)
            assert sum(by_broker.get(n, 0) for n in RACK_NODES[rack]) >= total
            assert all(b in RACK_NODES[rack] for _, b in fetched.values()), fetched
        else:  # from the leaders: half of the values from each rack, no more
            assert all(b == leader for leader, b in fetched.values()), fetched
            assert received >= total
            assert all(0.4 <= share <= 0.6 for share in shares.values()), (shares, by_broker)
