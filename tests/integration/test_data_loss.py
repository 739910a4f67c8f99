"""failOnDataLoss on real brokers: a topic deleted while the metadata lists it fails the query;
with failOnDataLoss=false a topic recreated with fewer partitions (offsets went back, a partition
vanished) is skipped to its earliest offsets and the query keeps reading.

Removal through the metadata is never data loss: see test_streaming_core.py, whose topic and
cluster removals run with the default failOnDataLoss=true.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.integration.helpers import (
    latest_offset_json,
    produce,
    source_options,
    start_memory_query,
    wait_until,
    wait_values,
    write_metadata,
)


def test_deleted_topic_fails_the_query_naming_partitions_and_offsets(
    spark: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    clusters = kafka_clusters("east")
    east = clusters["east"]
    east.create_topic("orders", partitions=2)
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"orders": [("east", ["orders"])]})
    values = [
        v for _, _, v in produce(east.bootstrap_servers, "orders", [f"x{i}" for i in range(10)], 2)
    ]
    query, table = start_memory_query(spark, source_options(meta, streamIds="orders"), "loss")
    try:
        wait_values(spark, query, table, values)
        east.delete_topic("orders")  # still listed in the metadata
        with pytest.raises(Exception) as info:
            query.awaitTermination(120)
        message = str(info.value)
        assert "DataLossError" in message and "Data loss" in message
        for partition in (0, 1):  # deleted, or already recreated empty by the broker
            assert f"east/orders/{partition}: " in message
            assert "next offset to read 5" in message
        assert "failOnDataLoss=false" in message
    finally:
        query.stop()


def test_recreated_topic_with_fewer_partitions_is_skipped_without_fail(
    spark: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    clusters = kafka_clusters("east")
    east = clusters["east"]
    east.create_topic("orders", partitions=3)
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"orders": [("east", ["orders"])]})
    bootstrap = east.bootstrap_servers
    expected = [v for _, _, v in produce(bootstrap, "orders", [f"a{i}" for i in range(12)], 3)]
    options = source_options(meta, streamIds="orders", failOnDataLoss="false")
    query, table = start_memory_query(spark, options, "loss")
    try:
        wait_values(spark, query, table, expected)
        # Partitions 0 and 1 come back with fewer records (their offsets go back from 4 to 2);
        # partition 2 vanishes. Everything the new topic holds is read, from its earliest offset.
        east.delete_topic("orders")
        east.create_topic("orders", partitions=2)
        expected += [v for _, _, v in produce(bootstrap, "orders", [f"b{i}" for i in range(4)], 2)]
        wait_values(spark, query, table, expected)
        expected += [v for _, _, v in produce(bootstrap, "orders", [f"c{i}" for i in range(6)], 2)]
        wait_values(spark, query, table, expected)
        wait_until(
            lambda: latest_offset_json(query)["clusters"]["east"]["orders"] == {"0": 5, "1": 5},
            what="the offset of the recreated topic",
        )
        assert query.isActive and query.exception() is None
    finally:
        query.stop()
