"""A leader that names a preferred read replica (KIP-392) to the compiled core's direct fetch
path, which sends no rack id (issue 41): the path fetches those partitions from that replica.

Kafka's own selector (``RackAwareReplicaSelector``) names a follower only to a client that sends
a rack id, which the direct path never does (``client.rack`` goes through librdkafka). A broker
whose ``replica.selector.class`` does not look at racks names one to every Fetch v11+ request,
the direct path's included: ``java/FollowerSelector.java``, compiled here with ``javac`` against
the broker's jars and put on the brokers' classpath, names the follower of each partition. The
leader then answers with no records and the follower's id; before this issue the direct path
fetched from the leader again and again until the poll timeout failed the read ("No
progress"). The records are read with the direct path and, for reference, with librdkafka's
consumer (which follows the preferred replica itself): the same exact records; the direct
path's bytes came from the follower, and nothing was handed to librdkafka.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from tests.integration.helpers import local_kafka_problem, wait_until

from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.kafka.pool import consumer_config
from pyspark_dynamic_kafka.testing.apache_kafka import ApacheKafkaCluster
from pyspark_dynamic_kafka.testing.kafka_jars import ensure_kafka_jars, find_java, tooling_problem

pytestmark = pytest.mark.skipif(core() is None, reason="the compiled core is not installed")

_SELECTOR = Path(__file__).with_name("java") / "FollowerSelector.java"
#: Both partitions led by broker 0, followed by broker 1: every record is read from broker 1.
REPLICAS = [[0, 1], [0, 1]]
FOLLOWER = 1
RECORDS_PER_PARTITION = 300
VALUE_BYTES = 200
#: Short, so that a path that never follows fails soon (the leader answers at once).
POLL_TIMEOUT_MS = 20_000


def _compiled_selector(into: Path) -> Path:
    """``FollowerSelector.class`` compiled into ``into`` against the broker's jars."""
    javac = Path(os.path.realpath(find_java())).with_name("javac")
    if not os.access(javac, os.X_OK):
        pytest.skip(f"needs javac (a JDK) next to {find_java()} to compile a replica selector")
    command = [str(javac), "-cp", f"{ensure_kafka_jars()}/*", "-d", str(into), str(_SELECTOR)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return into


@pytest.fixture(scope="module")
def following(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheKafkaCluster]:
    """A cluster of two brokers whose leaders name the follower as the preferred read replica,
    with topic ``orders`` (:data:`REPLICAS`) and its leaders known."""
    problem = local_kafka_problem() or tooling_problem()
    if problem is not None:
        pytest.skip(f"needs Apache Kafka brokers of its own with a plugin: {problem}")
    classes = _compiled_selector(tmp_path_factory.mktemp("selector"))
    cluster = ApacheKafkaCluster(
        "east",
        brokers=2,
        broker_config={"replica.selector.class": "FollowerSelector"},
        classpath=[classes],
    )
    try:
        cluster.start()
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        topic = NewTopic("orders", len(REPLICAS), replica_assignment=REPLICAS)
        admin.create_topics([topic])["orders"].result(60)

        def in_sync() -> bool:
            listed = admin.list_topics("orders", timeout=10).topics.get("orders")
            if listed is None or listed.error is not None:
                return False
            found = {p: (m.leader, sorted(m.isrs)) for p, m in listed.partitions.items()}
            return found == {p: (r[0], sorted(r)) for p, r in enumerate(REPLICAS)}

        wait_until(in_sync, timeout=120, what="the leaders and in-sync replicas of orders")
        yield cluster
    finally:
        cluster.stop()


def _read(cluster: Any, direct: bool) -> tuple[Any, Any, list[tuple[int, int, bytes]]]:
    """Every record of ``orders`` read by a core ``Reader`` with a consumer of its own making
    (``direct``: its direct fetch path, else librdkafka's consumer); the consumer, the reader
    and the rows (partition, offset, value)."""
    module = core()
    assert module is not None
    config = consumer_config(cluster.connection_properties())
    consumer = module.Consumer(sorted(config.items()), direct=direct)
    ranges = [("orders", p, 0, RECORDS_PER_PARTITION) for p in range(len(REPLICAS))]
    reader = module.Reader("east", consumer, ranges, POLL_TIMEOUT_MS, False, True)
    rows = [(r["partition"], r["offset"], r["value"]) for b in reader for r in b.to_pylist()]
    return consumer, reader, sorted(rows)


def test_the_direct_path_fetches_from_the_replica_a_leader_names(
    following: ApacheKafkaCluster,
) -> None:
    produced: list[tuple[int, int, bytes]] = []
    for partition in range(len(REPLICAS)):
        values = [f"{partition}-{i}-".ljust(VALUE_BYTES, "x") for i in range(RECORDS_PER_PARTITION)]
        records = [{"key": None, "value": v, "partition": partition} for v in values]
        placed = following.produce("orders", records)  # acks=all: the follower has them
        produced += [(p, o, v.encode()) for (p, o), v in zip(placed, values, strict=True)]
    produced.sort()

    consumer, reader, rows = _read(following, direct=True)
    try:
        received = consumer.direct_bytes()
    finally:
        consumer.close()
    print(f"direct path: {len(rows)} records; Fetch response bytes by broker {received}")
    assert rows == produced
    assert reader.fallback() is None  # the direct path read it all
    values = len(produced) * VALUE_BYTES
    assert received.get(FOLLOWER, 0) >= values, received  # every record from the follower
    assert received.get(0, 0) < values // 10, received  # the leader only named it

    # librdkafka's consumer (KIP-392 on its own) reads the same records.
    reference, _, expected = _read(following, direct=False)
    reference.close()
    assert expected == produced
