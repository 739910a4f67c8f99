"""Where streams start on real brokers: timestamps over two clusters, the timestamp strategy, and
per-cluster ``startingOffsets`` from the metadata (at query start and at discovery).

Timestamps are the brokers' record timestamps of records produced a second or more apart, so a
timestamp taken between two productions separates them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from tests.integration.helpers import (
    source_options,
    start_memory_query,
    values_of,
    wait_until,
    wait_values,
    write_metadata,
)

from pyspark_dynamic_kafka.kafka.admin import NO_OFFSET, ClusterAdmin


def _produce(cluster: Any, topic: str, values: list[str], partition: int = 0) -> list[str]:
    cluster.produce(topic, [(None, v) for v in values], partition=partition)
    return values


def _pause_for_a_timestamp() -> int:
    """A timestamp strictly between what was produced before and what is produced after."""
    time.sleep(1.2)
    stamp = int(time.time() * 1000)
    time.sleep(1.2)
    return stamp


def test_timestamp_starts_on_two_clusters(spark: Any, kafka_clusters: Any, tmp_path: Path) -> None:
    clusters = kafka_clusters("east", "west")
    east, west = clusters["east"], clusters["west"]
    for c in (east, west):
        c.create_topic("orders", partitions=1)
    old = _produce(east, "orders", ["e-old0", "e-old1"]) + _produce(west, "orders", ["w-old0"])
    stamp = _pause_for_a_timestamp()
    new = _produce(east, "orders", ["e-new0", "e-new1"]) + _produce(west, "orders", ["w-new0"])
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"orders": [("east", ["orders"]), ("west", ["orders"])]})

    # startingTimestamp wins over startingOffsets=earliest.
    query, table = start_memory_query(
        spark, source_options(meta, streamIds="orders", startingTimestamp=str(stamp))
    )
    try:
        wait_values(spark, query, table, new)
        later = _produce(east, "orders", ["e-later"]) + _produce(west, "orders", ["w-later"])
        wait_values(spark, query, table, new + later)
    finally:
        query.stop()

    # Per partition: east from the timestamp, west from before everything.
    by_partition = {"east": {"orders": {"0": stamp}}, "west": {"orders": {"0": 0}}}
    options = source_options(
        meta, streamIds="orders", startingOffsetsByTimestamp=json.dumps(by_partition)
    )
    query, table = start_memory_query(spark, options, availableNow=True)
    query.awaitTermination(120)
    assert query.exception() is None
    expected = [v for v in old + new if v.startswith("w-")] + ["w-later"]
    expected += [v for v in new if v.startswith("e-")] + ["e-later"]
    assert values_of(spark, table) == sorted(expected)


def test_timestamp_without_a_record_follows_the_strategy(
    spark: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    clusters = kafka_clusters("east")
    east = clusters["east"]
    east.create_topic("orders", partitions=2)  # partition 1 stays empty: no record at any time
    _produce(east, "orders", ["old"])
    stamp = _pause_for_a_timestamp()
    new = _produce(east, "orders", ["new0", "new1"])
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"orders": [("east", ["orders"])]})
    options = source_options(meta, streamIds="orders", startingTimestamp=str(stamp))
    admin = ClusterAdmin("east", {"bootstrap.servers": east.bootstrap_servers}, 10_000)
    found = admin.offsets_for_times({("orders", 1): stamp})[("orders", 1)]
    if found != NO_OFFSET:
        pytest.xfail(
            f"the broker answers offset {found} for a timestamp lookup on an empty partition, "
            "where Kafka answers -1 (Tansu does); the strategies are unit-tested in "
            "tests/unit/test_positions.py"
        )

    query, _ = start_memory_query(spark, options)
    try:
        with pytest.raises(Exception) as info:
            query.awaitTermination(120)
        message = str(info.value)
        assert "east/orders/1 (startingTimestamp " + str(stamp) + ")" in message
        assert "startingOffsetsByTimestampStrategy=latest" in message
    finally:
        query.stop()

    query, table = start_memory_query(
        spark, options | {"startingOffsetsByTimestampStrategy": "latest"}
    )
    try:
        wait_values(spark, query, table, new)
        later = _produce(east, "orders", ["p1-later"], partition=1)
        wait_values(spark, query, table, new + later)
    finally:
        query.stop()


def test_metadata_starting_offsets_per_cluster(
    spark: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    clusters = kafka_clusters("east", "west")
    east, west = clusters["east"], clusters["west"]
    east.create_topic("orders", partitions=1)
    east.create_topic("orders-v2", partitions=1)
    west.create_topic("orders", partitions=1)
    _produce(east, "orders", ["e-old0", "e-old1"])
    v2 = _produce(east, "orders-v2", ["v2-old0"])
    _produce(west, "orders", ["w-old0"])
    stamp = _pause_for_a_timestamp()
    w_new = _produce(west, "orders", ["w-new0", "w-new1"])
    meta = tmp_path / "streams.yaml"
    starting = {("orders", "east"): "latest", ("orders", "west"): {"timestamp": stamp}}
    write_metadata(meta, clusters, {"orders": [("east", ["orders"])]}, starting=starting)

    # The entry's `latest` overrides the query's startingOffsets=earliest for east.
    query, table = start_memory_query(spark, source_options(meta, streamIds="orders"))
    try:
        wait_until(lambda: query.lastProgress is not None, what="a first trigger")
        expected = _produce(east, "orders", ["e-new0"])
        wait_values(spark, query, table, expected)

        # West appears through discovery: its entry's timestamp wins over
        # discoveryStartingOffsets=earliest.
        write_metadata(
            meta,
            clusters,
            {"orders": [("east", ["orders"]), ("west", ["orders"])]},
            starting=starting,
        )
        expected += w_new
        wait_values(spark, query, table, expected)

        # A topic added to a cluster already read starts at discoveryStartingOffsets (earliest).
        write_metadata(
            meta,
            clusters,
            {"orders": [("east", ["orders", "orders-v2"]), ("west", ["orders"])]},
            starting=starting,
        )
        expected += v2
        wait_values(spark, query, table, expected)
        expected += _produce(west, "orders", ["w-later"]) + _produce(east, "orders-v2", ["v2-new"])
        wait_values(spark, query, table, expected)
    finally:
        query.stop()
