"""Where streams start on real brokers: timestamps over two clusters, the timestamp strategy, and
per-cluster ``startingOffsets`` from the metadata (at query start and at discovery).

Timestamps are the brokers' record timestamps of records produced a second or more apart, so a
timestamp taken between two productions separates them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.integration.helpers import (
    DEADLINE,
    EstateFactory,
    pause_for_a_timestamp,
    produce,
    requires_kafka,
    wait_until,
)
from tests.integration.queries import available_now, memory_query


def _produce(cluster: Any, topic: str, values: list[str], partition: int = 0) -> list[str]:
    return produce(cluster, topic, values, first=partition, key=False)


def test_timestamp_starts_on_two_clusters(spark: Any, estate: EstateFactory) -> None:
    setup = estate("east", "west")
    east, west = setup["east"], setup["west"]
    old = _produce(east, "orders", ["e-old0", "e-old1"]) + _produce(west, "orders", ["w-old0"])
    stamp = pause_for_a_timestamp()
    new = _produce(east, "orders", ["e-new0", "e-new1"]) + _produce(west, "orders", ["w-new0"])

    # startingTimestamp wins over startingOffsets=earliest.
    with memory_query(spark, setup.options(startingTimestamp=str(stamp))) as query:
        query.expect(new)
        later = _produce(east, "orders", ["e-later"]) + _produce(west, "orders", ["w-later"])
        query.expect(new + later)

    # Per partition: east from the timestamp, west from before everything.
    by_partition = {"east": {"orders": {"0": stamp}}, "west": {"orders": {"0": 0}}}
    query = available_now(spark, setup.options(startingOffsetsByTimestamp=json.dumps(by_partition)))
    expected = [v for v in old + new if v.startswith("w-")] + ["w-later"]
    expected += [v for v in new if v.startswith("e-")] + ["e-later"]
    assert query.values() == sorted(expected)


@requires_kafka(
    "Tansu answers offset 0 for a timestamp lookup on an empty partition, where Kafka answers "
    "-1 (the strategies are unit-tested in tests/unit/test_positions.py)"
)
def test_timestamp_without_a_record_follows_the_strategy(spark: Any, estate: EstateFactory) -> None:
    setup = estate("east", partitions=2)  # partition 1 stays empty: no record at any time
    east = setup["east"]
    _produce(east, "orders", ["old"])
    stamp = pause_for_a_timestamp()
    new = _produce(east, "orders", ["new0", "new1"])
    options = setup.options(startingTimestamp=str(stamp))
    assert east.offset_for_timestamp("orders", 1, stamp) == -1  # no record at or after stamp

    with memory_query(spark, options) as query:
        with pytest.raises(Exception) as info:
            query.query.awaitTermination(DEADLINE)
        message = str(info.value)
        assert "east/orders/1 (startingTimestamp " + str(stamp) + ")" in message
        assert "startingOffsetsByTimestampStrategy=latest" in message

    with memory_query(spark, options | {"startingOffsetsByTimestampStrategy": "latest"}) as query:
        query.expect(new)
        later = _produce(east, "orders", ["p1-later"], partition=1)
        query.expect(new + later)


def test_metadata_starting_offsets_per_cluster(spark: Any, estate: EstateFactory) -> None:
    setup = estate("east", "west")
    east, west = setup["east"], setup["west"]
    east.create_topic("orders-v2", partitions=1)
    _produce(east, "orders", ["e-old0", "e-old1"])
    v2 = _produce(east, "orders-v2", ["v2-old0"])
    _produce(west, "orders", ["w-old0"])
    stamp = pause_for_a_timestamp()
    w_new = _produce(west, "orders", ["w-new0", "w-new1"])
    starting = {("orders", "east"): "latest", ("orders", "west"): {"timestamp": stamp}}
    setup.write({"orders": [("east", ["orders"])]}, starting=starting)

    # The entry's `latest` overrides the query's startingOffsets=earliest for east.
    with memory_query(spark, setup.options()) as query:
        wait_until(lambda: query.query.lastProgress is not None, what="a first trigger")
        expected = _produce(east, "orders", ["e-new0"])
        query.expect(expected)

        # West appears through discovery: its entry's timestamp wins over
        # discoveryStartingOffsets=earliest.
        setup.write({"orders": [("east", ["orders"]), ("west", ["orders"])]}, starting=starting)
        expected += w_new
        query.expect(expected)

        # A topic added to a cluster already read starts at discoveryStartingOffsets (earliest).
        both = {"orders": [("east", ["orders", "orders-v2"]), ("west", ["orders"])]}
        setup.write(both, starting=starting)
        expected += v2
        query.expect(expected)
        expected += _produce(west, "orders", ["w-later"]) + _produce(east, "orders-v2", ["v2-new"])
        query.expect(expected)
