"""Acceptance tests of the core streaming source on real brokers and a real SparkSession.

Every test asserts exact record sets: each produced record read exactly once, nothing else.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.integration.helpers import (
    Estate,
    EstateFactory,
    numbered,
    produce,
    source_options,
    wait_until,
)
from tests.integration.queries import MemoryQuery, memory_query
from tests.integration.scenarios import migrate_east_to_west


def test_two_clusters_every_record_once_with_cluster_column(
    spark: Any, estate: EstateFactory
) -> None:
    setup = estate("east", "west", partitions=3)
    expected = produce(setup["east"], "orders", numbered("e", 30), 3)
    expected += produce(setup["west"], "orders", numbered("w", 30), 3)

    with memory_query(spark, setup.options()) as query:
        query.expect(expected)
        got = query.rows()
        assert all(c == ("east" if v.startswith("e") else "west") for c, _, _, _, v in got)
        assert Counter((c, p) for c, _, p, _, _ in got) == {
            (c, p): 10 for c in ("east", "west") for p in range(3)
        }


@pytest.mark.smoke
def test_migration_east_to_west_without_loss_or_duplicates(
    spark: Any, estate: EstateFactory
) -> None:
    migrate_east_to_west(spark, estate)


def test_topic_added_and_removed_at_runtime(spark: Any, estate: EstateFactory) -> None:
    setup = estate("east", partitions=0)
    east = setup["east"]
    east.create_topic("orders-v1", partitions=2)
    east.create_topic("orders-v2", partitions=2)
    setup.write({"orders": [("east", ["orders-v1"])]})
    expected = produce(east, "orders-v1", numbered("v1-", 10), 2)
    v2 = produce(east, "orders-v2", numbered("v2-", 10), 2)
    with memory_query(spark, setup.options()) as query:
        query.expect(expected)

        setup.write({"orders": [("east", ["orders-v1", "orders-v2"])]})
        expected += v2  # discoveryStartingOffsets=earliest
        query.expect(expected)

        setup.write({"orders": [("east", ["orders-v2"])]})
        wait_until(
            lambda: "orders-v1" not in query.offsets()["clusters"]["east"],
            what="orders-v1 to leave the offset JSON",
        )
        produce(east, "orders-v1", numbered("late-v1-", 5), 2)
        expected += produce(east, "orders-v2", numbered("late-v2-", 6), 2)
        query.expect(expected)
        assert set(query.offsets()["clusters"]["east"]) == {"orders-v2"}


def test_stream_pattern_picks_up_new_stream_on_another_cluster(
    spark: Any, estate: EstateFactory
) -> None:
    setup = estate("east", "west", partitions=0)
    east, west = setup["east"], setup["west"]
    east.create_topic("orders", partitions=1)
    west.create_topic("orders-eu", partitions=2)
    west.create_topic("payments", partitions=1)
    streams = {"orders": [("east", ["orders"])], "payments": [("west", ["payments"])]}
    setup.write(streams)
    expected = produce(east, "orders", numbered("o", 5))
    produce(west, "payments", numbered("p", 5))
    eu = produce(west, "orders-eu", numbered("eu", 6), 2)
    with memory_query(spark, source_options(setup.meta, streamPattern="^orders")) as query:
        query.expect(expected)
        setup.write({**streams, "orders-eu": [("west", ["orders-eu"])]})
        query.expect(expected + eu)
        assert {c for c, *_ in query.rows()} == {"east", "west"}


@contextlib.contextmanager
def _broken_after_five_records(
    spark: Any, estate: EstateFactory, threshold: str, broken: Callable[[str], str]
) -> Iterator[tuple[Estate, MemoryQuery, str]]:
    """A query that read five records, then its metadata file broken; yields the good text."""
    setup = estate("east")
    expected = produce(setup["east"], "orders", numbered("x", 5))
    options = setup.options(metadataDiscoveryFailureThreshold=threshold)
    with memory_query(spark, options) as query:
        query.expect(expected)
        good = setup.meta.read_text()
        setup.meta.write_text(broken(good))
        yield setup, query, good


@pytest.mark.parametrize("threshold", [2])
def test_broken_metadata_tolerated_up_to_threshold_then_fatal(
    spark: Any, estate: EstateFactory, threshold: int
) -> None:
    # A half-written file: tolerated while failures stay within the threshold? With discovery
    # at every micro-batch the failures pile up, so the query must fail, clearly.
    with _broken_after_five_records(
        spark, estate, str(threshold), lambda good: good[: len(good) // 2] + "\n  - : ["
    ) as (setup, query, _):
        message = query.failure()
        assert "metadataDiscoveryFailureThreshold=2" in message
        assert str(setup.meta) in message


def test_broken_metadata_within_threshold_keeps_running(spark: Any, estate: EstateFactory) -> None:
    with _broken_after_five_records(spark, estate, "1000000", lambda _: "clusters: [unclosed") as (
        setup,
        query,
        good,
    ):
        later = produce(setup["east"], "orders", numbered("y", 5))
        # The last good metadata keeps the query reading.
        query.expect(numbered("x", 5) + later)
        assert query.query.exception() is None
        setup.meta.write_text(good)
        assert query.query.isActive


def test_broken_metadata_at_start_fails_at_once(spark: Any, tmp_path: Path) -> None:
    meta = tmp_path / "streams.yaml"
    meta.write_text("clusters:\n  east: {bootstrap.servers: 127.0.0.1:1}\nstreams: {orders: [\n")
    with memory_query(spark, source_options(meta, streamIds="orders")) as query:
        assert str(meta) in query.failure()


def test_bad_options_name_key_and_value(spark: Any, tmp_path: Path) -> None:
    meta = tmp_path / "streams.yaml"
    meta.write_text(
        "clusters:\n  east: {bootstrap.servers: '127.0.0.1:1'}\n"
        "streams:\n  orders: [{cluster: east, topics: [orders]}]\n"
    )
    base = {"metadataService": "file", "metadataService.path": str(meta)}

    def load(**options: str) -> Any:
        return spark.readStream.format("dynamic_kafka").options(**base, **options).load()

    with pytest.raises(Exception, match=r"Did you mean 'startingOffsets'"):
        load(streamIds="orders", startingOffset="earliest")
    with pytest.raises(Exception, match=r"streamIds='orders'.*streamPattern='\^o'"):
        load(streamIds="orders", streamPattern="^o")
    with pytest.raises(Exception, match=r"'\{bad' for option 'startingOffsets'"):
        load(streamIds="orders", startingOffsets="{bad")

    with memory_query(spark, {**base, "streamIds": "orders,refunds"}, "bad") as query:
        message = query.failure()
        assert "streamIds" in message
        assert "refunds" in message
