"""Acceptance tests of the core streaming source on real brokers and a real SparkSession.

Every test asserts exact record sets: each produced record read exactly once, nothing else.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from tests.integration.helpers import (
    latest_offset_json,
    produce,
    rows,
    source_options,
    start_memory_query,
    wait_until,
    wait_values,
    write_metadata,
)


def test_two_clusters_every_record_once_with_cluster_column(
    spark: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    clusters = kafka_clusters("east", "west")
    for c in clusters.values():
        c.create_topic("orders", partitions=3)
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"orders": [("east", ["orders"]), ("west", ["orders"])]})
    produce(clusters["east"].bootstrap_servers, "orders", [f"e{i}" for i in range(30)], 3)
    produce(clusters["west"].bootstrap_servers, "orders", [f"w{i}" for i in range(30)], 3)

    query, table = start_memory_query(spark, source_options(meta, streamIds="orders"))
    try:
        expected = [f"e{i}" for i in range(30)] + [f"w{i}" for i in range(30)]
        wait_values(spark, query, table, expected)
        got = rows(spark, table)
        assert all(c == ("east" if v.startswith("e") else "west") for c, _, _, _, v in got)
        assert Counter((c, p) for c, _, p, _, _ in got) == {
            (c, p): 10 for c in ("east", "west") for p in range(3)
        }
    finally:
        query.stop()


def test_migration_east_to_west_without_loss_or_duplicates(
    spark: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    clusters = kafka_clusters("east", "west")
    east, west = clusters["east"].bootstrap_servers, clusters["west"].bootstrap_servers
    for c in clusters.values():
        c.create_topic("orders", partitions=3)
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"orders": [("east", ["orders"])]})
    produce(east, "orders", [f"a{i}" for i in range(20)], 3)
    query, table = start_memory_query(spark, source_options(meta, streamIds="orders"))
    try:
        expected = [f"a{i}" for i in range(20)]
        wait_values(spark, query, table, expected)

        write_metadata(meta, clusters, {"orders": [("east", ["orders"]), ("west", ["orders"])]})
        produce(west, "orders", [f"b{i}" for i in range(20)], 3)
        produce(east, "orders", [f"c{i}" for i in range(10)], 3)
        expected += [f"b{i}" for i in range(20)] + [f"c{i}" for i in range(10)]
        wait_values(spark, query, table, expected)

        write_metadata(meta, clusters, {"orders": [("west", ["orders"])]})
        wait_until(
            lambda: "east" not in latest_offset_json(query).get("clusters", {}),
            what="east to leave the offset",
        )
        produce(east, "orders", [f"ignored{i}" for i in range(5)], 3)
        produce(west, "orders", [f"d{i}" for i in range(20)], 3)
        expected += [f"d{i}" for i in range(20)]
        wait_values(spark, query, table, expected)
    finally:
        query.stop()


def test_topic_added_and_removed_at_runtime(
    spark: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    clusters = kafka_clusters("east")
    east = clusters["east"]
    east.create_topic("orders-v1", partitions=2)
    east.create_topic("orders-v2", partitions=2)
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"orders": [("east", ["orders-v1"])]})
    produce(east.bootstrap_servers, "orders-v1", [f"v1-{i}" for i in range(10)], 2)
    produce(east.bootstrap_servers, "orders-v2", [f"v2-{i}" for i in range(10)], 2)
    query, table = start_memory_query(spark, source_options(meta, streamIds="orders"))
    try:
        expected = [f"v1-{i}" for i in range(10)]
        wait_values(spark, query, table, expected)

        write_metadata(meta, clusters, {"orders": [("east", ["orders-v1", "orders-v2"])]})
        expected += [f"v2-{i}" for i in range(10)]  # discoveryStartingOffsets=earliest
        wait_values(spark, query, table, expected)

        write_metadata(meta, clusters, {"orders": [("east", ["orders-v2"])]})
        wait_until(
            lambda: "orders-v1" not in latest_offset_json(query)["clusters"]["east"],
            what="orders-v1 to leave the offset JSON",
        )
        produce(east.bootstrap_servers, "orders-v1", [f"late-v1-{i}" for i in range(5)], 2)
        produce(east.bootstrap_servers, "orders-v2", [f"late-v2-{i}" for i in range(6)], 2)
        expected += [f"late-v2-{i}" for i in range(6)]
        wait_values(spark, query, table, expected)
        assert set(latest_offset_json(query)["clusters"]["east"]) == {"orders-v2"}
    finally:
        query.stop()


def test_stream_pattern_picks_up_new_stream_on_another_cluster(
    spark: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    clusters = kafka_clusters("east", "west")
    clusters["east"].create_topic("orders", partitions=1)
    clusters["west"].create_topic("orders-eu", partitions=2)
    clusters["west"].create_topic("payments", partitions=1)
    meta = tmp_path / "streams.json"
    meta = meta.with_suffix(".yaml")
    write_metadata(
        meta, clusters, {"orders": [("east", ["orders"])], "payments": [("west", ["payments"])]}
    )
    produce(clusters["east"].bootstrap_servers, "orders", [f"o{i}" for i in range(5)])
    produce(clusters["west"].bootstrap_servers, "payments", [f"p{i}" for i in range(5)])
    produce(clusters["west"].bootstrap_servers, "orders-eu", [f"eu{i}" for i in range(6)], 2)
    query, table = start_memory_query(spark, source_options(meta, streamPattern="^orders"))
    try:
        expected = [f"o{i}" for i in range(5)]
        wait_values(spark, query, table, expected)
        write_metadata(
            meta,
            clusters,
            {
                "orders": [("east", ["orders"])],
                "orders-eu": [("west", ["orders-eu"])],
                "payments": [("west", ["payments"])],
            },
        )
        expected += [f"eu{i}" for i in range(6)]
        wait_values(spark, query, table, expected)
        assert {c for c, *_ in rows(spark, table)} == {"east", "west"}
    finally:
        query.stop()


@pytest.mark.parametrize("threshold", [2])
def test_broken_metadata_tolerated_up_to_threshold_then_fatal(
    spark: Any, kafka_clusters: Any, tmp_path: Path, threshold: int
) -> None:
    clusters = kafka_clusters("east")
    east = clusters["east"]
    east.create_topic("orders", partitions=1)
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"orders": [("east", ["orders"])]})
    produce(east.bootstrap_servers, "orders", [f"x{i}" for i in range(5)])
    options = source_options(
        meta,
        streamIds="orders",
        metadataDiscoveryIntervalMs="0",
        metadataDiscoveryFailureThreshold=str(threshold),
    )
    query, table = start_memory_query(spark, options)
    try:
        wait_values(spark, query, table, [f"x{i}" for i in range(5)])
        good = meta.read_text()
        # A half-written file: tolerated while failures stay within the threshold? With
        # discovery at every micro-batch the failures pile up, so the query must fail, clearly.
        meta.write_text(good[: len(good) // 2] + "\n  - : [")
        wait_until(lambda: query.exception() is not None, what="the query to fail")
        message = str(query.exception())
        assert "metadataDiscoveryFailureThreshold=2" in message
        assert str(meta) in message
    finally:
        query.stop()


def test_broken_metadata_within_threshold_keeps_running(
    spark: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    clusters = kafka_clusters("east")
    east = clusters["east"]
    east.create_topic("orders", partitions=1)
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"orders": [("east", ["orders"])]})
    produce(east.bootstrap_servers, "orders", [f"x{i}" for i in range(5)])
    options = source_options(
        meta,
        streamIds="orders",
        metadataDiscoveryIntervalMs="0",
        metadataDiscoveryFailureThreshold="1000000",
    )
    query, table = start_memory_query(spark, options)
    try:
        wait_values(spark, query, table, [f"x{i}" for i in range(5)])
        good = meta.read_text()
        meta.write_text("clusters: [unclosed")
        produce(east.bootstrap_servers, "orders", [f"y{i}" for i in range(5)])
        # The last good metadata keeps the query reading.
        wait_values(spark, query, table, [f"x{i}" for i in range(5)] + [f"y{i}" for i in range(5)])
        assert query.exception() is None
        meta.write_text(good)
        assert query.isActive
    finally:
        query.stop()


def test_broken_metadata_at_start_fails_at_once(spark: Any, tmp_path: Path) -> None:
    meta = tmp_path / "streams.yaml"
    meta.write_text("clusters:\n  east: {bootstrap.servers: 127.0.0.1:1}\nstreams: {orders: [\n")
    query, _ = start_memory_query(spark, source_options(meta, streamIds="orders"))
    try:
        wait_until(lambda: query.exception() is not None, timeout=60, what="failure")
        assert str(meta) in str(query.exception())
    finally:
        query.stop()


def test_bad_options_name_key_and_value(spark: Any, tmp_path: Path) -> None:
    meta = tmp_path / "streams.yaml"
    meta.write_text(
        "clusters:\n  east: {bootstrap.servers: '127.0.0.1:1'}\n"
        "streams:\n  orders: [{cluster: east, topics: [orders]}]\n"
    )
    base = {"metadataService": "file", "metadataService.path": str(meta)}

    def load(**options: str) -> Any:
        reader = spark.readStream.format("dynamic_kafka")
        for key, value in {**base, **options}.items():
            reader = reader.option(key, value)
        return reader.load()

    with pytest.raises(Exception, match=r"Did you mean 'startingOffsets'"):
        load(streamIds="orders", startingOffset="earliest")
    with pytest.raises(Exception, match=r"streamIds='orders'.*streamPattern='\^o'"):
        load(streamIds="orders", streamPattern="^o")
    with pytest.raises(Exception, match=r"'\{bad' for option 'startingOffsets'"):
        load(streamIds="orders", startingOffsets="{bad")

    query = load(streamIds="orders,refunds").writeStream.format("memory").queryName("bad").start()
    try:
        wait_until(lambda: query.exception() is not None, timeout=60, what="failure")
        assert "streamIds" in str(query.exception())
        assert "refunds" in str(query.exception())
    finally:
        query.stop()
