"""atLeastOnce tasks in one Python worker share a producer, as Spark's sink shares its own: a
task that wrote every record leaves it, connected and with its producer id, to the next task on
the same cluster and properties, and each task reports only its own records; a task that failed
closes it, and a stamped task (``dedupeHeaders``) has its own. The tasks run in this process,
whose pool is the one a Python worker keeps."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from tests.engine_roles import PRODUCERS, WRITERS, skip_without_core
from tests.integration.sink_records import read_topic

from pyspark_dynamic_kafka.errors import WriteError
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.kafka.pool import producer_pool
from pyspark_dynamic_kafka.sink.executor.produce import Stamp, produce_batches
from pyspark_dynamic_kafka.sink.executor.task import WriteTask
from pyspark_dynamic_kafka.sink.route import WriteRoute


@pytest.fixture(params=WRITERS)
def writer(request: pytest.FixtureRequest) -> Iterator[str]:
    skip_without_core(request.param)
    producer_pool().close_all()
    yield str(request.param)
    producer_pool().close_all()


def _task(cluster: Any, writer: str, topics: frozenset[str]) -> WriteTask:
    properties = FrozenProperties({"bootstrap.servers": cluster.bootstrap_servers})
    route = WriteRoute("orders", "east", topics, properties)
    return WriteTask(route, flush_timeout_ms=30_000, engine=PRODUCERS[writer])


def _batch(first: int, count: int, size: int = 10, topic: str | None = None) -> pa.RecordBatch:
    values = [f"{i:0{size}d}" for i in range(first, first + count)]
    columns = {"key": pa.array([v.encode() for v in values]), "value": pa.array(values)}
    if topic is not None:
        columns["topic"] = pa.array([topic] * count)
    return pa.record_batch(columns)


def test_consecutive_tasks_share_a_producer_and_report_their_own_records(
    writer: str, kafka_clusters: Any
) -> None:
    cluster = kafka_clusters("east")["east"]
    cluster.create_topic("orders", partitions=3)
    task = _task(cluster, writer, frozenset({"orders"}))
    first = produce_batches(task, [_batch(0, 30), _batch(30, 10)])
    assert producer_pool().idle_count() == 1
    second = produce_batches(task, [_batch(40, 25)])
    # reused, not a second producer beside the first (the pool keeps up to two per cluster)
    assert producer_pool().idle_count() == 1
    assert (first.rows, first.topic_bytes) == ({"orders": 40}, {"orders": 40 * 20})
    assert (second.rows, second.topic_bytes) == ({"orders": 25}, {"orders": 25 * 20})
    values = sorted(r.value for r in read_topic(cluster, "orders"))
    assert values == [f"{i:010d}" for i in range(65)]


def test_a_failed_task_closes_its_producer_and_the_next_task_writes(
    writer: str, kafka_clusters: Any
) -> None:
    cluster = kafka_clusters("east")["east"]
    cluster.create_topic("orders", partitions=1)
    # the broker refuses audit's records (their batch is larger than the topic takes)
    cluster.create_topic("audit", partitions=1, config={"max.message.bytes": "64"})
    task = _task(cluster, writer, frozenset({"orders", "audit"}))
    produce_batches(task, [_batch(0, 5, topic="orders")])
    assert producer_pool().idle_count() == 1
    with pytest.raises(WriteError, match="topic 'audit'"):
        produce_batches(task, [_batch(5, 20, size=100, topic="audit")])
    assert producer_pool().idle_count() == 0
    after = produce_batches(task, [_batch(25, 7, topic="orders")])
    assert after.rows == {"orders": 7}
    values = sorted(r.value for r in read_topic(cluster, "orders"))
    assert values == [f"{i:010d}" for i in [*range(5), *range(25, 32)]]


def test_a_stamped_task_has_a_producer_of_its_own(writer: str, kafka_clusters: Any) -> None:
    cluster = kafka_clusters("east")["east"]
    cluster.create_topic("orders", partitions=1)
    task = _task(cluster, writer, frozenset({"orders"}))
    report = produce_batches(task, [_batch(0, 12)], Stamp("sink", "0", 1))
    assert report.rows == {"orders": 12}
    assert producer_pool().idle_count() == 0
    stamps = {r.headers[-1] for r in read_topic(cluster, "orders")}
    assert len(stamps) == 12
