"""Real Apache Kafka KRaft test clusters: one and three brokers, racks, replication, faults."""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ConfigResource,
    ResourceType,
)
from tests.integration.helpers import local_kafka_problem

from pyspark_dynamic_kafka.testing import ClusterStartError, KafkaTestingError
from pyspark_dynamic_kafka.testing.apache_kafka import ApacheKafkaCluster
from pyspark_dynamic_kafka.testing.kafka_config import RACK_AWARE_SELECTOR
from pyspark_dynamic_kafka.testing.kafka_jars import tooling_problem

_PROBLEM = local_kafka_problem() or tooling_problem()
pytestmark = pytest.mark.skipif(
    _PROBLEM is not None, reason=f"tests the Apache Kafka test clusters: {_PROBLEM}"
)

_log = logging.getLogger(__name__)

Row = tuple[int, int, bytes | None, bytes | None]  # partition, offset, key, value
RACKS = ["dc1", "dc2", "dc2"]


@pytest.fixture
def start_cluster(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Start an Apache Kafka cluster; stopped after the test, its log tails shown on failure."""
    started: list[ApacheKafkaCluster] = []
    failed_before = request.session.testsfailed

    def start(brokers: int, racks: list[str] | None = None) -> ApacheKafkaCluster:
        cluster = ApacheKafkaCluster(f"kafka{len(started)}", brokers=brokers, racks=racks)
        began = time.monotonic()
        cluster.start()
        _log.warning("%d-broker cluster ready in %.2fs", brokers, time.monotonic() - began)
        started.append(cluster)
        return cluster

    yield start
    for cluster in started:
        if request.session.testsfailed > failed_before:
            for i in range(cluster.broker_count):
                _log.error("broker %d log tail:\n%s", i, cluster.log_tail(i))
        cluster.stop()


def _consume_all(cluster: ApacheKafkaCluster, topic: str, count: int) -> list[Row]:
    """Read ``count`` records from the start of every partition of ``topic`` (sorted)."""
    consumer = Consumer(
        cluster.client_properties(**{"group.id": f"t-{uuid.uuid4()}", "enable.auto.commit": False})
    )
    try:
        partitions = cluster.topics()[topic]
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        rows: list[Row] = []
        deadline = time.monotonic() + 120
        while len(rows) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            rows.append((message.partition(), message.offset(), message.key(), message.value()))
        # Nothing beyond the expected records: poll a little longer.
        extra = consumer.consume(num_messages=100, timeout=1.0)
        rows.extend((m.partition(), m.offset(), m.key(), m.value()) for m in extra if not m.error())
        return sorted(rows)
    finally:
        consumer.close()


def _expected(produced: list[tuple[int, int]], records: list[tuple[str, str]]) -> list[Row]:
    return sorted(
        (p, o, k.encode(), v.encode()) for (p, o), (k, v) in zip(produced, records, strict=True)
    )


def _partition_replicas(cluster: ApacheKafkaCluster, topic: str) -> dict[int, tuple[Any, Any]]:
    admin = AdminClient(cluster.client_properties())
    partitions = admin.list_topics(topic, timeout=30).topics[topic].partitions
    return {p: (sorted(m.replicas), sorted(m.isrs)) for p, m in partitions.items()}


def test_one_broker_round_trip(start_cluster: Any) -> None:
    cluster = start_cluster(1)
    pids = cluster.broker_pids
    assert cluster.bootstrap_servers == f"127.0.0.1:{cluster.port}"
    cluster.create_topic("orders", partitions=3)
    records = [(f"k{i}", f"v{i}") for i in range(30)]
    produced = cluster.produce("orders", records)

    assert _consume_all(cluster, "orders", 30) == _expected(produced, records)
    assert sum(high for _, high in cluster.watermarks("orders").values()) == 30
    admin = AdminClient(cluster.client_properties())
    metadata = admin.list_topics(timeout=30)
    assert (metadata.cluster_id, sorted(metadata.brokers)) == (cluster.cluster_id, [0])
    assert [node.rack for node in admin.describe_cluster().result(30).nodes] == [None]

    cluster.stop()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_three_brokers_with_racks_survive_a_killed_and_a_stopped_broker(
    start_cluster: Any,
) -> None:
    cluster = start_cluster(3, RACKS)
    assert len(cluster.bootstrap_servers.split(",")) == 3
    admin = AdminClient(cluster.client_properties())
    nodes = admin.describe_cluster().result(30).nodes
    assert {n.id: n.rack for n in nodes} == {0: "dc1", 1: "dc2", 2: "dc2"}
    for broker, rack in enumerate(RACKS):
        resource = ConfigResource(ResourceType.BROKER, str(broker))
        configs = admin.describe_configs([resource])[resource].result(30)
        assert configs["broker.rack"].value == rack
        assert configs["replica.selector.class"].value == RACK_AWARE_SELECTOR

    cluster.create_topic("orders", partitions=3, replication_factor=3)
    assert _partition_replicas(cluster, "orders") == {p: ([0, 1, 2], [0, 1, 2]) for p in range(3)}
    records = [(f"k{i}", f"v{i}") for i in range(60)]
    produced = cluster.produce("orders", records)
    expected = _expected(produced, records)
    assert _consume_all(cluster, "orders", 60) == expected

    # Killed: every record stays readable from the other replicas, and new ones can be written.
    cluster.kill_broker(1)
    assert cluster.broker_pids[1] is None and not cluster.broker_running(1)
    more = [(f"k{i}", f"v{i}") for i in range(60, 70)]
    expected = sorted(expected + _expected(cluster.produce("orders", more), more))
    assert _consume_all(cluster, "orders", 70) == expected

    # Restarted on its ports: it catches up and is back in every ISR.
    cluster.start_broker(1)
    deadline = time.monotonic() + 120
    while _partition_replicas(cluster, "orders") != {p: ([0, 1, 2], [0, 1, 2]) for p in range(3)}:
        assert time.monotonic() < deadline, "broker 1 did not rejoin the ISRs"
        time.sleep(0.5)
    assert _consume_all(cluster, "orders", 70) == expected

    # Stopped gracefully, then started again.
    cluster.stop_broker(2)
    assert _consume_all(cluster, "orders", 70) == expected
    cluster.start_broker(2)
    assert all(pid is not None for pid in cluster.broker_pids)
    assert _consume_all(cluster, "orders", 70) == expected


def test_a_broker_that_cannot_start_reports_its_log() -> None:
    cluster = ApacheKafkaCluster("broken", jvm_options=["-Xmx1k"])
    with pytest.raises(ClusterStartError) as failure:
        cluster.start()
    message = str(failure.value)
    assert "formatting storage failed" in message
    assert "Too small maximum heap" in message
    with pytest.raises(KafkaTestingError, match="not started"):
        _ = cluster.bootstrap_servers
