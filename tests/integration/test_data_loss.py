"""failOnDataLoss on real brokers: a topic deleted while the metadata lists it fails the query;
with failOnDataLoss=false a topic recreated with fewer partitions (offsets went back, a partition
vanished) is skipped to its earliest offsets and the query keeps reading.

Records deleted under a range (retention, DeleteRecords) are reported exactly on both readers:
with failOnDataLoss=false the warning names the offsets really lost, from the range's next
offset to the earliest one still available, and reading resumes there.

Removal through the metadata is never data loss: see test_streaming_core.py, whose topic and
cluster removals run with the default failOnDataLoss=true.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from tests.integration.helpers import (
    DEADLINE,
    EstateFactory,
    MemoryQuery,
    delete_records,
    memory_query,
    numbered,
    produce,
    requires_kafka,
    wait_until,
)

from pyspark_dynamic_kafka.errors import DataLossError
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.source.executor.native import core
from pyspark_dynamic_kafka.source.executor.read import read_task
from pyspark_dynamic_kafka.source.executor.task import OffsetRange, ReadSettings, ReadTask
from pyspark_dynamic_kafka.testing import BaseKafkaCluster

#: The readers a task can use: the compiled core only where it is installed (make setup NATIVE=1).
READERS = ["python", *(["native"] if core() is not None else [])]


@contextlib.contextmanager
def _read_then_delete(
    spark: Any, estate: EstateFactory, partitions: int, values: list[str], **options: str
) -> Iterator[tuple[BaseKafkaCluster, MemoryQuery, list[str]]]:
    """A query on east that read ``values``, then its topic deleted."""
    setup = estate("east", partitions=partitions)
    east = setup["east"]
    expected = produce(east, "orders", values, partitions)
    with memory_query(spark, setup.options(**options), "loss") as query:
        query.expect(expected)
        east.delete_topic("orders")
        yield east, query, expected


def test_deleted_topic_fails_the_query_naming_partitions_and_offsets(
    spark: Any, estate: EstateFactory
) -> None:
    # The topic is deleted while the metadata still lists it.
    with _read_then_delete(spark, estate, 2, numbered("x", 10)) as (_, query, _):
        with pytest.raises(Exception) as info:
            query.query.awaitTermination(DEADLINE)
        message = str(info.value)
        assert "DataLossError" in message and "Data loss" in message
        for partition in (0, 1):  # deleted, or already recreated empty by the broker
            assert f"east/orders/{partition}: " in message
            assert "next offset to read 5" in message
        assert "failOnDataLoss=false" in message


def test_recreated_topic_with_fewer_partitions_is_skipped_without_fail(
    spark: Any, estate: EstateFactory
) -> None:
    # Partitions 0 and 1 come back with fewer records (their offsets go back from 4 to 2);
    # partition 2 vanishes. Everything the new topic holds is read, from its earliest offset.
    options = {"failOnDataLoss": "false"}
    with _read_then_delete(spark, estate, 3, numbered("a", 12), **options) as deleted:
        east, query, expected = deleted
        east.create_topic("orders", partitions=2)
        expected += produce(east, "orders", numbered("b", 4), 2)
        query.expect(expected)
        expected += produce(east, "orders", numbered("c", 6), 2)
        query.expect(expected)
        wait_until(
            lambda: query.offsets()["clusters"]["east"]["orders"] == {"0": 5, "1": 5},
            what="the offset of the recreated topic",
        )
        assert query.query.isActive and query.query.exception() is None


def _read_range(
    cluster: BaseKafkaCluster, reader: str, start: int, end: int, fail: bool
) -> list[int]:
    """The offsets a task reads of ``orders``/0 [start, end) with ``reader``."""
    name = cluster.name
    settings = ReadSettings(
        60_000,
        0,  # no pooled consumer outlives the test
        frozenset({name}),
        fail_on_data_loss=fail,
        native_clusters=frozenset({name}) if reader == "native" else frozenset(),
    )
    properties = FrozenProperties({"bootstrap.servers": cluster.bootstrap_servers})
    task = ReadTask((OffsetRange(name, "orders", 0, start, end),), {name: properties}, settings)
    return [o for batch in read_task(task) for o in batch["offset"].to_pylist()]


@requires_kafka("DeleteRecords")
@pytest.mark.parametrize("reader", READERS)
def test_deleted_records_are_reported_exactly_on_both_readers(
    kafka_clusters: Any, reader: str, caplog: pytest.LogCaptureFixture
) -> None:
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=1)
    east.produce("orders", [(None, f"v{i}") for i in range(250)], partition=0)
    delete_records(east, "orders", {0: 150})  # records [0, 150) are gone

    with pytest.raises(DataLossError) as failed:
        _read_range(east, reader, 100, 200, fail=True)
    assert "Data loss: offsets [100, 200) of east/orders/0 cannot be read" in str(failed.value)

    with caplog.at_level(logging.WARNING):
        offsets = _read_range(east, reader, 100, 200, fail=False)
        gone = _read_range(east, reader, 20, 80, fail=False)  # nothing of it is left
    assert offsets == list(range(150, 200)) and gone == []
    warnings = [r.getMessage() for r in caplog.records if "Data loss" in r.getMessage()]
    assert len(warnings) == 2, warnings
    assert "offsets [100, 150) of east/orders/0: they are no longer available" in warnings[0]
    assert "offsets [20, 80) of east/orders/0: they are no longer available" in warnings[1]
