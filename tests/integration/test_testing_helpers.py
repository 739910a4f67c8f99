"""The testing package's helpers on the suite's broker kind: exact offsets, visibility, no leaks.

A smoke test: ``make test`` runs it on Apache Kafka and again on the embedded Tansu broker. Also
the kit's default cluster (what ``start_clusters`` starts when no kind is named) under a
producer of a user's own.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from tests.integration.helpers import wait_until

from pyspark_dynamic_kafka.testing import (
    DEFAULT_BROKER,
    KafkaTestingError,
    ProduceError,
    cluster_class,
    count_client_connections,
    start_clusters,
)
from pyspark_dynamic_kafka.testing.kafka_jars import tooling_problem


def _read(cluster: Any, topic: str, partition: int, count: int) -> list[Any]:
    consumer = Consumer(
        cluster.client_properties(**{"group.id": f"t-{uuid.uuid4()}", "enable.auto.commit": False})
    )
    try:
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        messages: list[Any] = []
        while len(messages) < count:
            batch = consumer.consume(num_messages=count - len(messages), timeout=60.0)
            assert batch, f"no record after {len(messages)} of {count}"
            messages += [m for m in batch if m.error() is None]
        return messages
    finally:
        consumer.close()


@pytest.mark.smoke
def test_produce_create_and_delete_with_exact_offsets(kafka_clusters: Any) -> None:
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=2, config={"cleanup.policy": "delete"})
    assert east.topics() == {"orders": 2}
    with pytest.raises(KafkaTestingError, match="could not create topic 'orders'"):
        east.create_topic("orders")
    with pytest.raises(ProduceError, match="topic 'missing' does not exist"):
        east.produce("missing", [("k", "v")])

    records = [
        {"key": "a", "value": "v0", "partition": 1, "timestamp": 1_700_000_000_000},
        {"key": None, "value": b"v1", "partition": 1, "headers": [("h", b"1"), ("h", b"2")]},
        ("k2", "v2"),
    ]
    sent = east.produce("orders", records, partition=0)
    assert sent == [(1, 0), (1, 1), (0, 0)]
    assert east.watermarks("orders") == {0: (0, 1), 1: (0, 2)}
    first, second = _read(east, "orders", 1, 2)
    assert (first.key(), first.value(), first.timestamp()[1]) == (b"a", b"v0", 1_700_000_000_000)
    assert (second.key(), second.value(), second.headers()) == (
        None,
        b"v1",
        [("h", b"1"), ("h", b"2")],
    )
    assert east.offset_for_timestamp("orders", 1, 1_700_000_000_000) == 0

    # Many records in large batches: every one visible below the high watermark at once.
    counts = east.produce_bulk("orders", ((f"k{i}", f"v{i}") for i in range(20_000)))
    assert sum(counts.values()) == 20_000
    assert east.watermarks("orders") == {0: (0, 1 + counts[0]), 1: (0, 2 + counts[1])}

    east.delete_topic("orders")
    assert east.topics() == {}
    # No helper leaves a client connection behind.
    assert count_client_connections(east.port) == 0


def _produce_batched(cluster: Any, topic: str, records: list[tuple[bytes, bytes]]) -> None:
    """Write ``records`` as a user's own producer does: confluent-kafka batching them for 50 ms
    (the kit's ``produce`` helpers, which work around Tansu, are not used)."""
    failures: list[str] = []

    def delivered(error: Any, message: Any) -> None:
        if error is not None:
            failures.append(f"{message.key()!r}: {error}")

    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 50})
    for key, value in records:
        producer.produce(topic, value=value, key=key, on_delivery=delivered)
    assert producer.flush(60.0) == 0, "records still queued after 60 s"
    assert failures == []


def test_the_default_cluster_shows_every_record_of_a_users_batching_producer() -> None:
    """100 records a producer of the user's own batched (``linger.ms=50``) into a topic of the
    cluster ``start_clusters`` starts when no kind is named: all of them are below the high
    watermark and read back. (On Tansu the high watermark was 1 and a read returned 1 of 100.)"""
    problem = tooling_problem()
    if problem is not None:
        pytest.skip(f"the default broker kind is Apache Kafka: {problem}")
    records = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(100)]
    with start_clusters(["mine"]) as clusters:
        cluster = clusters["mine"]
        assert type(cluster) is cluster_class(DEFAULT_BROKER)
        cluster.create_topic("events", partitions=1)
        _produce_batched(cluster, "events", records)
        assert cluster.watermarks("events") == {0: (0, 100)}
        read = _read(cluster, "events", 0, 100)
        assert sorted((m.key(), m.value()) for m in read) == sorted(records)
        assert [m.offset() for m in read] == list(range(100))


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with contextlib.suppress(OSError):  # a zombie (not reaped yet) has exited too
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].startswith("Z")
    return False


def test_a_tansu_broker_dies_with_the_process_that_started_it() -> None:
    """A demo or test run ended by SIGTERM (no ``finally``, no ``atexit``) leaves no broker."""
    program = (
        "import signal\n"
        "from pyspark_dynamic_kafka.testing import start_clusters\n"
        "with start_clusters(['solo'], 'tansu') as clusters:\n"
        "    print(clusters['solo'].pid, flush=True)\n"
        "    signal.pause()\n"
    )
    child = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
    broker = 0
    try:
        assert child.stdout is not None
        line = child.stdout.readline()  # the broker is ready: start_clusters waited for it
        assert line.strip().isdigit(), f"no broker pid from the child (exit {child.poll()})"
        broker = int(line)
        assert not _gone(broker)
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=60) == -signal.SIGTERM
        wait_until(lambda: _gone(broker), 60.0, f"Tansu broker {broker} still running")
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if broker and not _gone(broker):  # the leak this test is about: clean it up
            os.kill(broker, signal.SIGKILL)
