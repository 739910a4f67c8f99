"""The executor read path on a real broker, without Spark: exact ranges, Arrow, pooled consumers."""

from __future__ import annotations

import gc
import pickle
import threading
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import Producer
from pyspark.sql.pandas.types import to_arrow_schema
from tests.integration.helpers import numbered, transactions

from pyspark_dynamic_kafka.errors import ReadError
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.kafka.pool import consumer_pool
from pyspark_dynamic_kafka.source.executor import read
from pyspark_dynamic_kafka.source.executor.arrow import SPARK_SCHEMA
from pyspark_dynamic_kafka.source.executor.read import read_task
from pyspark_dynamic_kafka.source.executor.task import OffsetRange, ReadSettings, ReadTask

#: The schema Spark checks the first batch of a Python data source against.
SPARK_ARROW_SCHEMA = to_arrow_schema(SPARK_SCHEMA, timezone="UTC")


pytestmark = pytest.mark.usefixtures("empty_consumer_pool")


def _task(cluster: Any, *ranges: tuple[str, int, int, int], **props: str) -> ReadTask:
    settings = ReadSettings(20_000, 60_000, frozenset({cluster.name}))
    properties = FrozenProperties({"bootstrap.servers": cluster.bootstrap_servers, **props})
    spans = tuple(OffsetRange(cluster.name, t, p, s, e) for t, p, s, e in ranges)
    return pickle.loads(pickle.dumps(ReadTask(spans, {cluster.name: properties}, settings)))


def _read(task: ReadTask) -> pa.Table:
    return pa.Table.from_batches(list(read_task(task)), schema=SPARK_ARROW_SCHEMA)


@pytest.mark.smoke
def test_reads_exact_ranges_with_spark_arrow_schema(kafka_clusters: Any) -> None:
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=2)
    east.produce("orders", [(f"k{i}", f"v{i}") for i in range(10)], partition=0)
    east.produce("orders", [(None, f"w{i}") for i in range(10)], partition=1)

    batches = list(read_task(_task(east, ("orders", 0, 2, 7), ("orders", 1, 0, 3))))
    assert batches and all(b.schema == SPARK_ARROW_SCHEMA for b in batches)
    table = pa.Table.from_batches(batches)
    got = sorted(zip(table["partition"].to_pylist(), table["offset"].to_pylist(), strict=True))
    assert got == [(0, o) for o in range(2, 7)] + [(1, o) for o in range(3)]
    rows = {(r["partition"], r["offset"]): r for r in table.to_pylist()}
    assert rows[(0, 2)]["key"] == b"k2" and rows[(0, 2)]["value"] == b"v2"
    assert rows[(1, 0)]["key"] is None and rows[(1, 0)]["value"] == b"w0"
    assert {r["cluster"] for r in rows.values()} == {"east"}
    assert {r["timestampType"] for r in rows.values()} == {0}  # CreateTime


def test_pooled_consumer_reads_consecutive_ranges_of_one_partition(kafka_clusters: Any) -> None:
    # A range that ends before the partition's end pauses the partition; the pooled consumer
    # must fetch it again for the next range (librdkafka keeps pause flags across assign()).
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=1)
    east.produce("orders", [(None, f"v{i}") for i in range(30)], partition=0)
    offsets: list[int] = []
    for start, end in [(0, 10), (10, 20), (20, 30)]:
        offsets += _read(_task(east, ("orders", 0, start, end)))["offset"].to_pylist()
    assert offsets == list(range(30))
    assert consumer_pool().idle_count() >= 1


def test_range_ending_at_a_transaction_marker_does_not_hang(kafka_clusters: Any) -> None:
    east = kafka_clusters("east")["east"]
    east.create_topic("tx", partitions=1)
    transactions(east, "tx", [(numbered("committed", 5), True), (numbered("aborted", 3), False)])
    _, high = east.watermarks("tx")[0]
    assert high == 10  # 5 records, a commit marker, 3 records, an abort marker

    # Ranges that end on a commit marker (offset 5) or an abort marker (offset 9): the marker
    # never arrives as a record, the read ends from the consumer position instead of hanging.
    committed = _read(_task(east, ("tx", 0, 0, 6), **{"isolation.level": "read_committed"}))
    assert committed["value"].to_pylist() == [f"committed{i}".encode() for i in range(5)]
    whole = _read(_task(east, ("tx", 0, 0, high)))
    assert whole["offset"].to_pylist() == [0, 1, 2, 3, 4, 6, 7, 8]
    tail = _read(_task(east, ("tx", 0, 5, 6)))
    assert tail.num_rows == 0


def test_cyclic_gc_is_paused_while_reading_and_restored_after(kafka_clusters: Any) -> None:
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=1)
    east.produce_bulk("orders", ((None, f"v{i}") for i in range(70_000)))  # > one Arrow batch
    assert gc.isenabled()

    batches = read_task(_task(east, ("orders", 0, 0, 70_000)))
    first = next(batches)
    assert first.num_rows > 0 and not gc.isenabled()  # paused between batches too
    batches.close()  # a consumer of the task stops early (e.g. a LIMIT)
    assert gc.isenabled()

    assert sum(b.num_rows for b in read_task(_task(east, ("orders", 0, 0, 70_000)))) == 70_000
    assert gc.isenabled()

    gc.disable()  # a worker that disabled the collector itself keeps it disabled
    try:
        assert sum(b.num_rows for b in read_task(_task(east, ("orders", 0, 5, 10)))) == 5
        assert not gc.isenabled()
    finally:
        gc.enable()


def _read_within(task: ReadTask, seconds: float) -> pa.Table:
    """``_read(task)`` in a daemon thread: a read still waiting after ``seconds`` fails the test."""
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(_read(task)), daemon=True)
    thread.start()
    thread.join(seconds)
    assert result, f"{task!r} was still reading after {seconds} s"
    table: pa.Table = result[0]
    return table


def test_a_range_ends_when_its_end_is_known_not_after_a_wait(
    kafka_clusters: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The wait for the next message is made longer than the test's deadline: a read that relied
    # on waiting (for a batch to fill, or for the last offsets of a range when they are
    # transaction markers) would fail here; each range must end from what the consumer reports
    # (its last record, a record past it, partition EOF).
    monkeypatch.setattr(read, "_WAIT_S", 3600.0)
    east = kafka_clusters("east")["east"]
    east.create_topic("tx", partitions=1)
    transactions(east, "tx", [(numbered("a", 5), True), (numbered("b", 3), True)])
    # a0..a4 at 0-4, a commit marker at 5, b0..b2 at 6-8, a commit marker at 9
    producer = Producer(east.client_properties(**{"transactional.id": "open", "linger.ms": 0}))
    producer.init_transactions(30)
    producer.begin_transaction()
    for value in numbered("c", 2):
        producer.produce("tx", value=value, partition=0)
    producer.flush(30)  # c0, c1 at 10, 11: an open transaction, after the last stable offset
    committed = {"isolation.level": "read_committed"}
    try:
        cases = [
            # a range ending on a commit marker that records follow
            (_task(east, ("tx", 0, 0, 6)), [f"a{i}" for i in range(5)]),
            (_task(east, ("tx", 0, 0, 6), **committed), [f"a{i}" for i in range(5)]),
            # ending on a commit marker that records of an open transaction follow
            (_task(east, ("tx", 0, 6, 10)), [f"b{i}" for i in range(3)]),
            # ending on a marker at the last stable offset, the open transaction behind it
            (_task(east, ("tx", 0, 0, 10), **committed), numbered("a", 5) + numbered("b", 3)),
            # ending inside the records, and at the end of the partition
            (_task(east, ("tx", 0, 1, 3)), ["a1", "a2"]),
            (_task(east, ("tx", 0, 10, 12)), ["c0", "c1"]),
        ]
        for task, values in cases:
            table = _read_within(task, 120.0)
            assert [v.decode() for v in table["value"].to_pylist()] == values, task
    finally:
        producer.abort_transaction(30)


def test_a_range_whose_records_never_arrive_fails_after_the_poll_timeout(
    kafka_clusters: Any,
) -> None:
    # Offsets the partition does not have yet (a driver never plans them; here they stand for
    # records that never arrive): no progress for kafkaConsumer.pollTimeoutMs fails the task,
    # naming the range and where the consumer stands.
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=1)
    east.produce("orders", [(None, v) for v in numbered("v", 4)], partition=0)
    task = _task(east, ("orders", 0, 0, 10))
    task.settings = ReadSettings(2_000, 60_000, frozenset({east.name}))
    with pytest.raises(ReadError) as caught:
        _read(task)
    message = str(caught.value)
    assert "No progress for kafkaConsumer.pollTimeoutMs=2000 ms" in message
    assert "east/orders/0 range [0, 10) stuck at position 4" in message
