"""The executor read path on a real broker, without Spark, on both readers (the ``reader``
fixture: the Python reader, then the compiled core): exact ranges, keys, headers, timestamps,
data loss, a deleted topic, the poll timeout and its "stuck" message, the byte bound of a batch,
consecutive ranges of a partition.

These tests hold the read semantics both readers share; transaction markers, aborted records
and compaction gaps are test_transactional_reads.py's (every start offset, against the Java
consumer); test_native_read.py holds what is the compiled core's own (its differential test
against the Python reader, the fallback, TLS/SASL).
"""

from __future__ import annotations

import datetime as dt
import gc
import logging
import threading
import time
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import Producer
from tests.integration.helpers import (
    delete_records,
    numbered,
    requires_kafka,
    transactions,
)
from tests.integration.read_tasks import make_task, read_table

from pyspark_dynamic_kafka.engines import read_python
from pyspark_dynamic_kafka.engines.read_core import native_factory
from pyspark_dynamic_kafka.errors import DataLossError, ReadError
from pyspark_dynamic_kafka.kafka.pool import confluent_consumer, consumer_pool
from pyspark_dynamic_kafka.source.executor.read import read_task
from pyspark_dynamic_kafka.source.executor.task import ReadTask

pytestmark = pytest.mark.usefixtures("empty_consumer_pool")

#: An explicit CreateTime (ms), an hour ago: older ones would fall to the topic's retention.
_T0 = (int(time.time()) - 3600) * 1000


def _utc(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)


@pytest.mark.smoke
def test_reads_exact_ranges_keys_and_timestamps(kafka_clusters: Any, reader: str) -> None:
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=2)
    records = [{"key": f"k{i}", "value": f"v{i}", "timestamp": _T0 + i} for i in range(10)]
    east.produce("orders", records, partition=0)
    east.produce("orders", [(None, f"w{i}") for i in range(10)], partition=1)

    table = read_table(make_task(east, reader, ("orders", 0, 2, 7), ("orders", 1, 0, 3)))
    got = sorted(zip(table["partition"].to_pylist(), table["offset"].to_pylist(), strict=True))
    assert got == [(0, o) for o in range(2, 7)] + [(1, o) for o in range(3)]
    rows = {(r["partition"], r["offset"]): r for r in table.to_pylist()}
    assert [rows[(0, o)]["key"] for o in range(2, 7)] == [f"k{i}".encode() for i in range(2, 7)]
    assert [rows[(0, o)]["value"] for o in range(2, 7)] == [f"v{i}".encode() for i in range(2, 7)]
    assert [rows[(0, o)]["timestamp"] for o in range(2, 7)] == [_utc(_T0 + i) for i in range(2, 7)]
    assert [rows[(1, o)]["key"] for o in range(3)] == [None] * 3
    assert [rows[(1, o)]["value"] for o in range(3)] == [b"w0", b"w1", b"w2"]
    assert {r["cluster"] for r in rows.values()} == {"east"}
    assert {r["topic"] for r in rows.values()} == {"orders"}
    assert {r["timestampType"] for r in rows.values()} == {0}  # CreateTime


@requires_kafka("LogAppendTime")
def test_headers_and_log_append_time(kafka_clusters: Any, reader: str) -> None:
    east = kafka_clusters("east")["east"]
    east.create_topic("audit", partitions=1, config={"message.timestamp.type": "LogAppendTime"})
    headers = [("h", b"1"), ("h", b"2"), ("empty", None)]  # repeated keys, a null value
    east.produce(
        "audit",
        [{"value": "a", "headers": headers}, {"value": None, "timestamp": _T0}, ("k", "c")],
        partition=0,
    )
    before = dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=10)

    table = read_table(make_task(east, reader, ("audit", 0, 0, 3), include_headers=True))
    assert table["headers"].to_pylist() == [
        [{"key": "h", "value": b"1"}, {"key": "h", "value": b"2"}, {"key": "empty", "value": None}],
        None,
        None,
    ]
    assert table["value"].to_pylist() == [b"a", None, b"c"]
    assert table["key"].to_pylist() == [None, None, b"k"]
    assert set(table["timestampType"].to_pylist()) == {1}  # LogAppendTime: the broker's clock
    assert all(before < t < before + dt.timedelta(hours=1) for t in table["timestamp"].to_pylist())
    assert "headers" not in read_table(make_task(east, reader, ("audit", 0, 0, 3))).column_names


def test_consecutive_tasks_reuse_the_pooled_consumer(kafka_clusters: Any, reader: str) -> None:
    # Like consecutive micro-batches: partition 0 is paused at the end of each range, then read
    # again by the next task with the same pooled consumer (librdkafka keeps pause flags across
    # assign()); partition 1 joins in the third. Both readers pool their consumers per process.
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=2)
    east.produce("orders", [(None, f"v{i}") for i in range(10)], partition=0)
    east.produce("orders", [(None, f"w{i}") for i in range(10)], partition=1)
    pool = consumer_pool()
    batches = [
        (("orders", 0, 0, 4),),
        (("orders", 0, 4, 7),),
        (("orders", 0, 7, 10), ("orders", 1, 2, 5)),
    ]
    seen: list[tuple[int, int]] = []
    consumers = set()
    for ranges in batches:
        task = make_task(east, reader, *ranges)
        engine = task.settings.engine(east.name)
        factory = confluent_consumer if engine == "python" else native_factory(engine)
        table = read_table(task)
        seen += zip(table["partition"].to_pylist(), table["offset"].to_pylist(), strict=True)
        assert pool.idle_count() == 1
        properties = task.properties[east.name]
        consumer = pool.acquire(east.name, properties, 0, factory)
        consumers.add(id(consumer))
        pool.release(east.name, properties, consumer, True, 60_000, 0, factory)
    assert sorted(seen) == [(0, o) for o in range(10)] + [(1, o) for o in range(2, 5)]
    assert len(consumers) == 1


@requires_kafka("DeleteRecords")
def test_offsets_out_of_range_fail_or_resume(
    kafka_clusters: Any, reader: str, caplog: pytest.LogCaptureFixture
) -> None:
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=1)
    east.produce("orders", [(None, f"v{i}") for i in range(20)], partition=0)
    delete_records(east, "orders", {0: 12})

    with pytest.raises(DataLossError) as failed:
        read_table(make_task(east, reader, ("orders", 0, 5, 15)))
    assert "Data loss: offsets [5, 15) of east/orders/0 cannot be read" in str(failed.value)
    assert "failOnDataLoss=false" in str(failed.value)

    with caplog.at_level(logging.WARNING):
        table = read_table(make_task(east, reader, ("orders", 0, 5, 15), fail_on_data_loss=False))
        gone = read_table(make_task(east, reader, ("orders", 0, 2, 10), fail_on_data_loss=False))
    assert table["offset"].to_pylist() == [12, 13, 14]
    assert gone.num_rows == 0  # nothing of it is left
    warnings = [r.getMessage() for r in caplog.records if "Data loss" in r.getMessage()]
    assert len(warnings) == 2, warnings  # exactly the records lost
    assert "offsets [5, 12) of east/orders/0: they are no longer available" in warnings[0]
    assert "offsets [2, 10) of east/orders/0: they are no longer available" in warnings[1]


def test_a_range_of_a_deleted_topic_fails_after_the_poll_timeout(
    kafka_clusters: Any, reader: str
) -> None:
    # A consumer assigned a partition of a topic that no longer exists gets no error from
    # librdkafka, only no records: the task fails with the "stuck" message, whatever
    # failOnDataLoss says (it never returns an empty table as if the range were read). The
    # driver is where a deleted topic is found and handled (test_data_loss.py).
    east = kafka_clusters("east")["east"]
    east.create_topic("gone", partitions=1)
    east.produce("gone", [(None, f"v{i}") for i in range(3)], partition=0)
    east.delete_topic("gone")

    for fail_on_data_loss in (True, False):
        task = make_task(
            east,
            reader,
            ("gone", 0, 0, 3),
            poll_timeout_ms=3_000,
            fail_on_data_loss=fail_on_data_loss,
        )
        with pytest.raises(ReadError) as stuck:
            read_table(task)
        assert str(stuck.value).startswith("No progress for kafkaConsumer.pollTimeoutMs=3000 ms")
        assert "east/gone/0 range [0, 3) stuck at position" in str(stuck.value)


def test_a_batch_is_cut_at_the_byte_bound(kafka_clusters: Any, reader: str) -> None:
    # A batch is due once it holds 32 MiB of values (BatchBuilder.max_bytes, the core's
    # max_bytes), checked after each consume call: a batch holds at most the bound plus what one
    # call returned, which librdkafka's prefetch queue caps (queued.max.messages.kbytes, set low
    # here so that the test does not depend on how fast the queue fills).
    east = kafka_clusters("east")["east"]
    east.create_topic("big", partitions=1, config={"max.message.bytes": str(2 << 20)})
    big = [(None, bytes([i]) * (1 << 20)) for i in range(40)]  # 40 values of 1 MiB
    east.produce_bulk("big", big, config={"message.max.bytes": 4 << 20})
    # The queue stops fetching over 2 MiB, a fetch brings at most 2 MiB: a consume call returns
    # at most ~5 MiB, so 40 MiB are at least two batches, none over 32 + 5 MiB.
    fetch = str(2 << 20)
    queue = {"queued.max.messages.kbytes": "2048", "fetch.max.bytes": fetch}
    queue["max.partition.fetch.bytes"] = fetch

    batches = list(read_task(make_task(east, reader, ("big", 0, 0, 40), **queue)))
    mib = [sum(map(len, b["value"].to_pylist())) >> 20 for b in batches]
    assert len(batches) >= 2 and sum(mib) == 40, mib
    assert max(mib) <= 32 + 5, mib
    assert [v for b in batches for v in b["value"].to_pylist()] == [v for _, v in big]


def test_cyclic_gc_is_paused_while_reading_and_restored_after(
    kafka_clusters: Any, reader: str
) -> None:
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=1)
    east.produce_bulk("orders", ((None, f"v{i}") for i in range(70_000)))  # > one Arrow batch
    assert gc.isenabled()

    def rows(start: int, end: int) -> int:
        return sum(
            b.num_rows for b in read_task(make_task(east, reader, ("orders", 0, start, end)))
        )

    batches = read_task(make_task(east, reader, ("orders", 0, 0, 70_000)))
    first = next(batches)
    assert first.num_rows > 0 and not gc.isenabled()  # paused between batches too
    batches.close()  # a consumer of the task stops early (e.g. a LIMIT)
    assert gc.isenabled()

    assert rows(0, 70_000) == 70_000
    assert gc.isenabled()

    gc.disable()  # a worker that disabled the collector itself keeps it disabled
    try:
        assert rows(5, 10) == 5
        assert not gc.isenabled()
    finally:
        gc.enable()


def _read_within(task: ReadTask, seconds: float) -> pa.Table:
    """``read_table(task)`` in a daemon thread: still reading after ``seconds`` fails the test."""
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(read_table(task)), daemon=True)
    thread.start()
    thread.join(seconds)
    assert result, f"{task!r} was still reading after {seconds} s"
    table: pa.Table = result[0]
    return table


def test_a_range_ends_when_its_end_is_known_not_after_a_wait(
    kafka_clusters: Any, reader: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The Python reader's wait for the next message is made longer than the test's deadline: a
    # read that relied on waiting (for a batch to fill, or for the last offsets of a range when
    # they are transaction markers) would fail here; each range must end from what the consumer
    # reports (its last record, a record past it, partition EOF). The compiled core's wait is
    # its own (not patched): there the cases check the same ends, each read within 120 s.
    monkeypatch.setattr(read_python, "_WAIT_S", 3600.0)
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
            (make_task(east, reader, ("tx", 0, 0, 6)), [f"a{i}" for i in range(5)]),
            (make_task(east, reader, ("tx", 0, 0, 6), **committed), [f"a{i}" for i in range(5)]),
            # ending on a commit marker that records of an open transaction follow
            (make_task(east, reader, ("tx", 0, 6, 10)), [f"b{i}" for i in range(3)]),
            # ending on a marker at the last stable offset, the open transaction behind it
            (
                make_task(east, reader, ("tx", 0, 0, 10), **committed),
                numbered("a", 5) + numbered("b", 3),
            ),
            # ending inside the records, and at the end of the partition
            (make_task(east, reader, ("tx", 0, 1, 3)), ["a1", "a2"]),
            (make_task(east, reader, ("tx", 0, 10, 12)), ["c0", "c1"]),
        ]
        for task, values in cases:
            table = _read_within(task, 120.0)
            assert [v.decode() for v in table["value"].to_pylist()] == values, task
    finally:
        producer.abort_transaction(30)


def test_a_range_whose_records_never_arrive_fails_after_the_poll_timeout(
    kafka_clusters: Any, reader: str
) -> None:
    # Offsets the partition does not have yet (a driver never plans them; here they stand for
    # records that never arrive): no progress for kafkaConsumer.pollTimeoutMs fails the task,
    # naming the range and where the consumer stands.
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=1)
    east.produce("orders", [(None, v) for v in numbered("v", 4)], partition=0)
    with pytest.raises(ReadError) as caught:
        read_table(make_task(east, reader, ("orders", 0, 0, 10), poll_timeout_ms=2_000))
    message = str(caught.value)
    assert message.startswith("No progress for kafkaConsumer.pollTimeoutMs=2000 ms: "), message
    assert "east/orders/0 range [0, 10) stuck at position 4." in message
