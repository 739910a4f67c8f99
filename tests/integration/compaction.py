"""A compacted topic whose offsets have gaps, on Apache Kafka (Tansu does not compact): the
Spark reads of test_kafka_semantics.py, and the compacted part of transactional_log.py."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from tests.integration.helpers import EstateFactory, wait_until

from pyspark_dynamic_kafka.testing import BaseKafkaCluster

COMPACTED = {
    "cleanup.policy": "compact",
    "segment.ms": "100",  # a segment rolls at the first append 100 ms after it began
    "min.cleanable.dirty.ratio": "0.01",
    "min.compaction.lag.ms": "0",
}


def log_offsets(cluster: BaseKafkaCluster, topic: str, partition: int = 0) -> dict[int, str]:
    """What a plain consumer reads from ``partition``: offset -> value."""
    consumer = Consumer(
        cluster.client_properties(**{"group.id": "compaction-check", "enable.partition.eof": True})
    )
    try:
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        read: dict[int, str] = {}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            message = consumer.poll(1)
            if message is None:
                continue
            if message.error() is not None:
                return read  # partition EOF
            read[message.offset()] = message.value().decode()
        raise AssertionError(f"no end of {topic}/{partition} within 60 s; read {read}")
    finally:
        consumer.close()


def compacted_topic(estate: EstateFactory) -> tuple[Any, dict[int, str]]:
    """Topic ``orders`` compacted: 4 rounds of keys k0..k3 plus a key of their own u<round>, then
    a tail record in a segment of its own. Survivors: u0@4, u1@9, u2@14, k0..k3 of round 3 at
    15..18, u3@19, tail@20. Waits until a plain consumer sees exactly them."""
    setup = estate("east", config=COMPACTED)
    east = setup["east"]
    for r in range(4):
        records = [(f"k{k}", f"k{k}-r{r}") for k in range(4)] + [(f"u{r}", f"u{r}")]
        east.produce("orders", records, partition=0)
    time.sleep(0.5)  # older than segment.ms: the tail rolls a new segment, the rest is cleanable
    east.produce("orders", [("tail", "tail")], partition=0)
    survivors = {4: "u0", 9: "u1", 14: "u2", 19: "u3", 20: "tail"}
    survivors |= {15 + k: f"k{k}-r3" for k in range(4)}
    log: dict[int, str] = {}

    def cleaned() -> bool:
        log.clear()
        log.update(log_offsets(east, "orders"))
        return log == survivors

    try:
        wait_until(cleaned, what="the log cleaner to leave exactly the survivors")
    except AssertionError as exc:
        raise AssertionError(f"{exc}: the log holds {log}") from None
    return setup, survivors
