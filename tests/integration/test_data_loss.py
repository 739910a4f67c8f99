"""failOnDataLoss on real brokers: a topic deleted while the metadata lists it fails the query;
with failOnDataLoss=false a topic recreated with fewer partitions (offsets went back, a partition
vanished) is skipped to its earliest offsets and the query keeps reading.

Records deleted under a range (retention, DeleteRecords) are reported exactly on both readers:
test_read.py::test_offsets_out_of_range_fail_or_resume.

Removal through the metadata is never data loss: see test_streaming_core.py, whose topic and
cluster removals run with the default failOnDataLoss=true.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from tests.integration import helpers, queries

from pyspark_dynamic_kafka.source.executor.native import core
from pyspark_dynamic_kafka.testing import BaseKafkaCluster

#: The readers a task can use: the compiled core only where it is installed (make setup NATIVE=1).
READERS = ["python", *(["native"] if core() is not None else [])]


@contextlib.contextmanager
def _read_then_delete(
    spark: Any, estate: helpers.EstateFactory, partitions: int, values: list[str], **options: str
) -> Iterator[tuple[BaseKafkaCluster, queries.MemoryQuery, list[str]]]:
    """A query on east that read ``values``, then its topic deleted."""
    setup = estate("east", partitions=partitions)
    east = setup["east"]
    expected = helpers.produce(east, "orders", values, partitions)
    with queries.memory_query(spark, setup.options(**options), "loss") as query:
        query.expect(expected)
        east.delete_topic("orders")
        yield east, query, expected


def test_deleted_topic_fails_the_query_naming_partitions_and_offsets(
    spark: Any, estate: helpers.EstateFactory
) -> None:
    # The topic is deleted while the metadata still lists it.
    with _read_then_delete(spark, estate, 2, helpers.numbered("x", 10)) as (_, query, _):
        with pytest.raises(Exception) as info:
            query.query.awaitTermination(helpers.DEADLINE)
        message = str(info.value)
        assert "DataLossError" in message and "Data loss" in message
        for partition in (0, 1):  # deleted, or already recreated empty by the broker
            assert f"east/orders/{partition}: " in message
            assert "next offset to read 5" in message
        assert "failOnDataLoss=false" in message


def test_recreated_topic_with_fewer_partitions_is_skipped_without_fail(
    spark: Any, estate: helpers.EstateFactory
) -> None:
    # Partitions 0 and 1 come back with fewer records (their offsets go back from 4 to 2);
    # partition 2 vanishes. Everything the new topic holds is read, from its earliest offset.
    options = {"failOnDataLoss": "false"}
    with _read_then_delete(spark, estate, 3, helpers.numbered("a", 12), **options) as deleted:
        east, query, expected = deleted
        east.create_topic("orders", partitions=2)
        expected += helpers.produce(east, "orders", helpers.numbered("b", 4), 2)
        query.expect(expected)
        expected += helpers.produce(east, "orders", helpers.numbered("c", 6), 2)
        query.expect(expected)
        helpers.wait_until(
            lambda: query.offsets()["clusters"]["east"]["orders"] == {"0": 5, "1": 5},
            what="the offset of the recreated topic",
        )
        assert query.query.isActive and query.query.exception() is None
