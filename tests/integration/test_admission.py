"""Admission control on real brokers: Trigger.AvailableNow with maxOffsetsPerTrigger,
minOffsetsPerTrigger + maxTriggerDelay, and the engine's ReadAllAvailable (Trigger.Once)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tests.integration.helpers import Estate, EstateFactory, numbered, produce, wait_until
from tests.integration.queries import MemoryQuery, available_now, memory_query, start_memory_query

from pyspark_dynamic_kafka.monitoring.progress import offset_document


def _two_clusters(estate: EstateFactory, per_partition: int) -> tuple[Estate, list[str]]:
    setup = estate("east", "west", partitions=2)
    expected = []
    for name, cluster in setup.clusters.items():
        for p in range(2):
            expected += produce(cluster, "orders", numbered(f"{name}-{p}-", per_partition), first=p)
    return setup, expected


def test_available_now_honours_max_offsets_per_trigger(spark: Any, estate: EstateFactory) -> None:
    setup, expected = _two_clusters(estate, per_partition=10)
    query = available_now(spark, setup.options(maxOffsetsPerTrigger="8"))
    assert query.values() == sorted(expected)
    # 40 records, 4 partitions with equal backlogs, 8 per trigger: 2 per partition, 5 batches.
    assert query.batch_sizes() == [8, 8, 8, 8, 8]


def test_trigger_once_reads_everything_whatever_the_options(
    spark: Any, estate: EstateFactory
) -> None:
    setup, expected = _two_clusters(estate, per_partition=5)
    options = setup.options(maxOffsetsPerTrigger="3", minOffsetsPerTrigger="2")
    query = start_memory_query(spark, options, once=True).finish()
    assert query.values() == sorted(expected)
    assert query.batch_sizes() == [20]  # the engine's ReadAllAvailable overrides both limits


def _trigger_times(query: MemoryQuery) -> list[float]:
    """Start times (s) of the micro-batches that read something, from Spark's own progress."""
    return [
        datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp()
        for p in query.query.recentProgress
        if p["numInputRows"] > 0
    ]


def _seen(query: MemoryQuery) -> int:
    """Records up to the latest offset the source reported (read or not)."""
    progress = query.query.lastProgress
    latest = progress and progress["sources"][0].get("latestOffset")
    if not latest:
        return 0
    latest = offset_document(latest)
    return sum(sum(t.values()) for c in latest["clusters"].values() for t in c.values())


def test_min_offsets_per_trigger_waits_for_enough_data_or_the_delay(
    spark: Any, estate: EstateFactory
) -> None:
    setup = estate("east", partitions=2)
    delay_s = 15  # the checks below keep 5 s of margin on each side of it
    options = setup.options(minOffsetsPerTrigger="10", maxTriggerDelay=f"{delay_s}s")

    def more(prefix: str, count: int) -> list[str]:
        return produce(setup["east"], "orders", numbered(prefix, count), 2)

    expected = more("first", 3)
    with memory_query(spark, options, processingTime="500 milliseconds") as query:
        # The first trigger never waits (as in Spark): the 3 records are read at once.
        wait_until(lambda: len(query.healthy_values()) >= 3, what="the first 3 records")
        expected += more("few", 4)  # fewer than minOffsetsPerTrigger
        # The source sees the 4 records and declines them: nothing read before the delay.
        wait_until(lambda: _seen(query) >= 7, what="the source to see 7 records")
        assert query.values() == sorted(expected[:3]), "read before enough data or delay"
        wait_until(lambda: len(query.healthy_values()) >= 7, what="the delay to pass")
        expected += more("many", 10)  # enough: read without waiting for the delay
        query.expect(expected)
        assert query.batch_sizes() == [3, 4, 10]
        first, delayed, enough = _trigger_times(query)
        assert delayed - first >= delay_s - 5
        assert enough - delayed < delay_s - 5
