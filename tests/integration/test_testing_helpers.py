"""The testing package's helpers on the suite's broker kind: exact offsets, visibility, no leaks.

A smoke test: ``make test`` runs it on Apache Kafka and again on the embedded Tansu default.
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
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from tests.integration.helpers import wait_until

from pyspark_dynamic_kafka.testing import KafkaTestingError, ProduceError, count_client_connections


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
