"""Apache Kafka's own semantics through real ``dynamic_kafka`` queries: records removed by
DeleteRecords (retention), partitions added while a query runs, LogAppendTime topics and
compacted topics whose offsets have gaps.

Every test runs on the suite's clusters (Apache Kafka in ``make test``, or existing brokers) and
asserts the exact set of records read; each is skipped on Tansu, which has none of these features
(the reason says what it does instead).
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions  # type: ignore[attr-defined]
from tests.integration.compaction import compacted_topic
from tests.integration.helpers import (
    DEADLINE,
    EstateFactory,
    delete_records,
    numbered,
    produce,
    requires_kafka,
    wait_until,
)
from tests.integration.queries import (
    available_now,
    batch_read,
    keyed_rows,
    memory_query,
    parquet_query,
    parquet_values,
    wait_parquet,
)

from pyspark_dynamic_kafka.monitoring.progress import offset_document
from pyspark_dynamic_kafka.testing import BaseKafkaCluster

# -- Apache Kafka admin operations the cluster helpers do not have ---------------------------------


def _add_partitions(cluster: BaseKafkaCluster, topic: str, total: int) -> None:
    """CreatePartitions: grow ``topic`` to ``total`` partitions; wait until metadata shows them."""
    admin = AdminClient(cluster.client_properties())
    admin.create_partitions([NewPartitions(topic, total)], operation_timeout=30)[topic].result(60)
    wait_until(lambda: cluster.partition_count(topic) == total, what=f"{total} partitions")


# -- retention: records removed under a query ------------------------------------------------------


def _records_deleted_while_stopped(
    spark: Any, estate: EstateFactory, tmp_path: Path, **options: str
) -> tuple[BaseKafkaCluster, list[str], Any]:
    """A checkpointed query read a0..a9 (offsets 0..4 of partitions 0 and 1) and stopped; then
    b0..b9 were produced (offsets 5..9) and DeleteRecords removed partition 0 below 8 and
    partition 1 below 10, so b0, b2, b4 and every b of partition 1 are gone unread, b6 and b8
    survive. Returns the cluster, the values read, and the query restarted from its checkpoint.
    """
    setup = estate("east", partitions=2)
    east = setup["east"]
    read = produce(east, "orders", numbered("a", 10), 2)
    query = parquet_query(spark, setup.options(**options), tmp_path)
    wait_parquet(spark, tmp_path / "out", len(read))
    query.processAllAvailable()
    query.stop()
    produce(east, "orders", numbered("b", 10), 2)
    delete_records(east, "orders", {0: 8, 1: 10})
    return east, read, parquet_query(spark, setup.options(**options), tmp_path)


@requires_kafka("Tansu has no DeleteRecords (it drops the connection) and no retention")
def test_deleted_records_fail_the_query_naming_partition_and_offsets(
    spark: Any, estate: EstateFactory, tmp_path: Path
) -> None:
    _, read, query = _records_deleted_while_stopped(spark, estate, tmp_path)
    try:
        with pytest.raises(Exception) as info:
            query.awaitTermination(DEADLINE)
    finally:
        query.stop()
    message = str(info.value)
    assert "DataLossError" in message
    # The executor finds the loss when it reads: both partitions lost [5, 10).
    assert re.search(r"Data loss: offsets \[5, 10\) of east/orders/[01] cannot be read", message)
    assert "OFFSET_OUT_OF_RANGE" in message or "Offset out of range" in message
    assert "failOnDataLoss=false" in message
    assert sorted(parquet_values(spark, tmp_path / "out")) == sorted(read)  # nothing more


@requires_kafka("Tansu has no DeleteRecords (it drops the connection) and no retention")
def test_deleted_records_skipped_to_the_earliest_offset_without_fail(
    spark: Any, estate: EstateFactory, tmp_path: Path
) -> None:
    east, expected, query = _records_deleted_while_stopped(
        spark, estate, tmp_path, failOnDataLoss="false"
    )
    try:
        expected += ["b6", "b8"]  # what survived of partition 0; nothing of partition 1
        wait_parquet(spark, tmp_path / "out", len(expected))
        expected += produce(east, "orders", numbered("c", 6), 2)  # offsets 10..12
        wait_parquet(spark, tmp_path / "out", len(expected))
        query.processAllAvailable()
        assert sorted(parquet_values(spark, tmp_path / "out")) == sorted(expected)
        end = offset_document(query.lastProgress["sources"][0]["endOffset"])
        assert end["clusters"]["east"]["orders"] == {"0": 13, "1": 13}
        assert query.isActive and query.exception() is None
    finally:
        query.stop()


# -- a partition-count increase while the query runs -----------------------------------------------


@requires_kafka("Tansu answers CreatePartitions with UNSUPPORTED_FEATURE")
def test_partitions_added_while_running_are_read_from_their_start_exactly_once(
    spark: Any, estate: EstateFactory
) -> None:
    setup = estate("east", partitions=2)
    east = setup["east"]
    expected = produce(east, "orders", numbered("a", 10), 2)
    with memory_query(spark, setup.options(), "grown") as query:
        query.expect(expected)

        _add_partitions(east, "orders", 4)
        # Produced at once, before the query can list the new partitions: read from offset 0.
        expected += produce(east, "orders", numbered("b", 20), 4)
        query.expect(expected)
        rows = query.rows()
        assert Counter(p for _, _, p, _, _ in rows) == {0: 10, 1: 10, 2: 5, 3: 5}
        assert sorted(o for _, _, p, o, _ in rows if p >= 2) == sorted(list(range(5)) * 2)

        expected += produce(east, "orders", numbered("c", 8), 4)
        query.expect(expected)
        wait_until(
            lambda: (
                query.offsets()["clusters"]["east"]["orders"] == {"0": 12, "1": 12, "2": 7, "3": 7}
            ),
            what="the offsets of all four partitions",
        )


# -- LogAppendTime ---------------------------------------------------------------------------------


def _times(df: Any) -> list[tuple[str, int, int]]:
    """(value, timestamp in ms, timestampType) of each row, sorted."""
    return sorted(
        (r.v, r.ms, r.timestampType)
        for r in df.selectExpr(
            "cast(value as string) as v", "unix_millis(timestamp) as ms", "timestampType"
        ).collect()
    )


@requires_kafka("Tansu ignores message.timestamp.type=LogAppendTime")
def test_log_append_time_is_the_brokers_time_with_timestamp_type_1(
    spark: Any, estate: EstateFactory
) -> None:
    config = {"message.timestamp.type": "LogAppendTime"}
    setup = estate("east", partitions=2, config=config)
    created = 1_000_000_000_000  # 2001: what the producer stamps, which the broker replaces
    values = numbered("v", 10)
    before = int(time.time() * 1000)
    records = [{"value": v, "timestamp": created, "partition": i % 2} for i, v in enumerate(values)]
    setup["east"].produce("orders", records)
    after = int(time.time() * 1000)

    batch = _times(batch_read(spark, setup.options()))
    assert [v for v, _, _ in batch] == values
    assert all(before <= ms <= after and kind == 1 for _, ms, kind in batch), (before, after, batch)
    query = available_now(spark, setup.options(), "append_time")
    assert _times(spark.table(query.table)) == batch


# -- a compacted topic: gaps in offsets ------------------------------------------------------------


def _values(rows: list[Any]) -> dict[int, str]:
    return {offset: value for _, _, _, offset, value in rows}


@requires_kafka("Tansu does not compact topics")
def test_compacted_topic_reads_exactly_the_survivors_without_hanging(
    spark: Any, estate: EstateFactory
) -> None:
    setup, survivors = compacted_topic(estate)
    options = setup.options()
    options.pop("startingOffsets")

    def read(start: int | None, end: int | None, **extra: str) -> dict[int, str]:
        spans = {}
        if start is not None:
            spans["startingOffsets"] = json.dumps({"east": {"orders": {"0": start}}})
        if end is not None:
            spans["endingOffsets"] = json.dumps({"east": {"orders": {"0": end}}})
        return _values(keyed_rows(batch_read(spark, options | spans | extra)))

    assert read(None, None) == survivors
    # Ranges that start, end, or lie wholly inside a gap.
    assert read(None, 12) == {4: "u0", 9: "u1"}
    assert read(6, 16) == {9: "u1", 14: "u2", 15: "k0-r3"}
    assert read(10, 13) == {}
    # Split into 7 ranges of 3 offsets, some of them holding no record at all.
    split = batch_read(spark, options | {"maxRecordsPerPartition": "3"})
    assert split.rdd.getNumPartitions() == 7
    assert _values(keyed_rows(split)) == survivors

    streamed = available_now(spark, setup.options(), "compacted")
    assert _values(streamed.rows()) == survivors
    assert streamed.offsets()["clusters"]["east"]["orders"] == {"0": 21}
    with memory_query(spark, setup.options(), "compacted_live") as query:
        expected = list(survivors.values())
        query.expect(expected)
        expected += produce(setup["east"], "orders", ["after"])
        query.expect(expected)
