"""The executor read path on a real broker, without Spark: exact ranges, Arrow, pooled consumers."""

from __future__ import annotations

import gc
import pickle
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema
from tests.integration.helpers import numbered, transactions

from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.kafka.pool import consumer_pool
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
