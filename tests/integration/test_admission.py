"""Admission control on real brokers: Trigger.AvailableNow with maxOffsetsPerTrigger,
minOffsetsPerTrigger + maxTriggerDelay, and the engine's ReadAllAvailable (Trigger.Once)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.integration.helpers import (
    source_options,
    start_memory_query,
    values_of,
    wait_until,
    write_metadata,
)


def _batch_sizes(query: Any) -> list[int]:
    """Rows of each micro-batch that read something, in order."""
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"] > 0]


def _two_clusters(
    kafka_clusters: Any, tmp_path: Path, per_partition: int
) -> tuple[Path, list[str]]:
    clusters = kafka_clusters("east", "west")
    expected = []
    for name, cluster in clusters.items():
        cluster.create_topic("orders", partitions=2)
        for p in range(2):
            values = [f"{name}-{p}-{i}" for i in range(per_partition)]
            cluster.produce("orders", [(None, v) for v in values], partition=p)
            expected += values
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"orders": [("east", ["orders"]), ("west", ["orders"])]})
    return meta, expected


def test_available_now_honours_max_offsets_per_trigger(
    spark: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    meta, expected = _two_clusters(kafka_clusters, tmp_path, per_partition=10)
    options = source_options(meta, streamIds="orders", maxOffsetsPerTrigger="8")
    query, table = start_memory_query(spark, options, availableNow=True)
    query.awaitTermination(300)
    assert not query.isActive and query.exception() is None
    assert values_of(spark, table) == sorted(expected)
    # 40 records, 4 partitions with equal backlogs, 8 per trigger: 2 per partition, 5 batches.
    assert _batch_sizes(query) == [8, 8, 8, 8, 8]


def test_trigger_once_reads_everything_whatever_the_options(
    spark: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    meta, expected = _two_clusters(kafka_clusters, tmp_path, per_partition=5)
    options = source_options(
        meta, streamIds="orders", maxOffsetsPerTrigger="3", minOffsetsPerTrigger="2"
    )
    query, table = start_memory_query(spark, options, once=True)
    query.awaitTermination(300)
    assert query.exception() is None
    assert values_of(spark, table) == sorted(expected)
    assert _batch_sizes(query) == [20]  # the engine's ReadAllAvailable overrides both limits


def test_min_offsets_per_trigger_waits_for_enough_data_or_the_delay(
    spark: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    clusters = kafka_clusters("east")
    east = clusters["east"]
    east.create_topic("orders", partitions=2)
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"orders": [("east", ["orders"])]})
    delay_s = 30
    options = source_options(
        meta, streamIds="orders", minOffsetsPerTrigger="10", maxTriggerDelay=f"{delay_s}s"
    )

    def produce(prefix: str, count: int) -> list[str]:
        values = [f"{prefix}{i}" for i in range(count)]
        east.produce("orders", [(None, v) for v in values], partition=None)
        return values

    expected = produce("first", 3)
    query, table = start_memory_query(spark, options, processingTime="500 milliseconds")
    try:

        def rows_are(n: int) -> bool:
            if query.exception() is not None:
                raise AssertionError(f"query failed: {query.exception()}")
            return len(values_of(spark, table)) >= n

        # The first trigger never waits (as in Spark): the 3 records are read at once.
        wait_until(lambda: rows_are(3), what="the first 3 records")
        first_batch = time.monotonic()
        expected += produce("few", 4)  # fewer than minOffsetsPerTrigger
        time.sleep(10)
        assert values_of(spark, table) == sorted(expected[:3]), "read before enough data or delay"
        wait_until(lambda: rows_are(7), timeout=delay_s + 60, what="the delay to pass")
        assert time.monotonic() - first_batch >= delay_s - 5
        enough = time.monotonic()
        expected += produce("many", 10)  # enough: read without waiting for the delay
        wait_until(lambda: rows_are(17), timeout=delay_s - 5, what="enough data to trigger")
        assert time.monotonic() - enough < delay_s - 5
        assert values_of(spark, table) == sorted(expected)
        assert _batch_sizes(query) == [3, 4, 10]
    finally:
        query.stop()
