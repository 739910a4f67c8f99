"""Each writer's producer (confluent-kafka's, the compiled core's) counts its deliveries per
topic (records and key+value bytes) and keeps the first failure with its topic, whatever the
user's ``delivery.report.only.error`` says; the core's counts leave out records still queued."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from tests.engine_roles import AT_LEAST_ONCE_PRODUCERS, PRODUCERS, skip_without_core

from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.engines.implementations import batch_producer

#: The user's ``delivery.report.only.error``: unset (librdkafka's default), on, off.
REPORT_SETTINGS = [None, "true", "false"]


@pytest.fixture(params=AT_LEAST_ONCE_PRODUCERS)
def writer(request: pytest.FixtureRequest) -> str:
    skip_without_core(request.param)
    return str(request.param)


def _config(cluster: Any, only_error: str | None, **extra: str) -> dict[str, str]:
    config = {
        "bootstrap.servers": cluster.bootstrap_servers,
        "enable.idempotence": "true",
        "partitioner": "murmur2_random",  # the sink's: the direct path takes no other
    }
    if only_error is not None:
        config["delivery.report.only.error"] = only_error
    return config | extra


@pytest.fixture
def east(kafka_clusters: Any) -> Any:
    return kafka_clusters("east")["east"]


@pytest.fixture(params=REPORT_SETTINGS)
def producer(request: pytest.FixtureRequest, writer: str, east: Any) -> Iterator[Any]:
    """The writer's :class:`~pyspark_dynamic_kafka.engines.roles.BatchProducer` to ``east``,
    with each of the user's :data:`REPORT_SETTINGS`; closed after the test."""
    producer = batch_producer(PRODUCERS[writer], _config(east, request.param), None)
    yield producer
    producer.close()


def _batch(topics: list[str | None], partitions: list[int | None] | None = None) -> pa.RecordBatch:
    n = len(topics)
    columns = {
        "key": pa.array([f"k{i}".encode() if i % 5 else None for i in range(n)], pa.binary()),
        "value": pa.array([f"value-{i}".encode() * (1 + i % 3) for i in range(n)], pa.binary()),
        "topic": pa.array(topics, pa.string()),
    }
    if partitions is not None:
        columns["partition"] = pa.array(partitions, pa.int32())
    return pa.record_batch(columns)


def _sizes(batch: pa.RecordBatch, topic: str | None = None) -> tuple[int, int]:
    """The rows of ``batch`` whose ``topic`` is ``topic`` (``None``: all), and their key+value
    bytes."""
    rows = [
        (k, v)
        for k, v, t in zip(
            batch.column("key").to_pylist(),
            batch.column("value").to_pylist(),
            batch.column("topic").to_pylist(),
            strict=True,
        )
        if topic is None or t == topic
    ]
    return len(rows), sum(len(k or b"") + len(v) for k, v in rows)


def test_deliveries_are_counted_per_topic(east: Any, producer: Any) -> None:
    east.create_topic("orders", partitions=3)
    east.create_topic("audit", partitions=1)
    batch = _batch(["orders" if i % 4 else "audit" for i in range(2_000)])
    producer.send(batch, None, [("orders", "orders"), ("audit", "audit")])
    producer.send(batch.slice(0, 10), "audit")
    assert producer.flush(30_000) == 0
    rows, sizes, error = producer.deliveries()
    orders, audit = _sizes(batch, "orders"), _sizes(batch, "audit")
    extra = _sizes(batch.slice(0, 10))
    assert error is None
    assert rows == {"orders": orders[0], "audit": audit[0] + extra[0]}
    assert sizes == {"orders": orders[1], "audit": audit[1] + extra[1]}


def test_a_failed_record_is_the_first_failure_and_not_counted(east: Any, producer: Any) -> None:
    east.create_topic("orders", partitions=2)
    # the broker refuses audit's records (their batch is larger than the topic takes)
    east.create_topic("audit", partitions=1, config={"max.message.bytes": "64"})
    batch = _batch(["orders"] * 50 + ["audit"] * 20)
    producer.send(batch, None, [("orders", "orders"), ("audit", "audit")])
    assert producer.flush(30_000) == 0
    assert producer.failed()
    rows, sizes, error = producer.deliveries()
    assert rows == {"orders": 50}
    assert sizes == {"orders": _sizes(batch, "orders")[1]}
    assert error is not None
    assert error[0] == "audit"
    assert "MSG_SIZE_TOO_LARGE" in error[1]


def test_records_still_queued_are_not_counted(kafka_clusters: Any) -> None:
    """The core's producer, which flushes without a margin (the writers' add 10 s)."""
    skip_without_core("native")
    cluster = kafka_clusters("east")["east"]
    cluster.create_topic("orders", partitions=3)
    batch = _batch(["orders"] * 50_000)
    compiled = core()
    assert compiled is not None
    config = _config(cluster, None, **{"linger.ms": "200"})
    producer = compiled.Producer(sorted(config.items()), None)
    try:
        producer.send(batch, "orders")
        left = producer.flush(0)
        rows, _, error = producer.deliveries()
        assert error is None
        # acknowledged, still queued or reported: each record once (left also counts events)
        assert 50_000 - left <= rows.get("orders", 0) < 50_000
        assert producer.flush(30_000) == 0
        rows, sizes, error = producer.deliveries()
    finally:
        producer.close()
    assert (rows, error) == ({"orders": 50_000}, None)
    assert sizes == {"orders": _sizes(batch, "orders")[1]}
