"""The compiled core's direct fetch path (``native/src/fetch.rs``) on a real broker, without
Spark: where it reads, and how it hands over to librdkafka's consumer mid-range.

Every read-path semantic is test_read.py's and the differential test's (test_native_read.py),
which read through this path wherever it applies (a PLAINTEXT cluster); here the core's
``Reader.fallback()`` says which path read, so those tests cannot pass on librdkafka alone.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from tests.integration.helpers import delete_records, requires_kafka

from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.kafka.pool import consumer_config

pytestmark = pytest.mark.skipif(core() is None, reason="the compiled core is not installed")


def _read(cluster: Any, ranges: list[tuple[str, int, int, int]], **props: str) -> Any:
    """Read ``ranges`` with a core ``Reader`` of its own; the reader and its rows."""
    config = consumer_config({**cluster.connection_properties(), **props})
    module = core()
    assert module is not None
    reader = module.Reader(cluster.name, sorted(config.items()), ranges, 30_000, True, True, 7)
    rows = [row for batch in reader for row in batch.to_pylist()]
    return reader, rows


def _headers(row: dict[str, Any]) -> list[tuple[str, bytes | None]]:
    return [(h["key"], h["value"]) for h in row["headers"] or []]


@requires_kafka("batches of several records, and every codec")
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_plaintext_ranges_are_fetched_directly(kafka_clusters: Any, codec: str) -> None:
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=2)
    records = [
        {
            "key": None if i % 5 == 0 else f"k{i}",
            "value": None if i % 7 == 0 else f"v{i}" * (i % 3),
            "headers": [("h", f"{i}".encode()), ("n", None)] if i % 4 == 0 else None,
            "partition": i % 2,
        }
        for i in range(400)
    ]
    config = {"compression.type": codec, "linger.ms": 20}
    placed = east.produce("orders", records, config=config)
    reader, rows = _read(east, [("orders", 0, 3, 180), ("orders", 1, 0, 200)])
    assert reader.fallback() is None
    ends = {0: (3, 180), 1: (0, 200)}
    expected = [
        (p, o, r) for (p, o), r in zip(placed, records, strict=True) if ends[p][0] <= o < ends[p][1]
    ]
    assert len(expected) == 377
    got = [(r["partition"], r["offset"], r["key"], r["value"], _headers(r)) for r in rows]

    def encoded(text: str | None) -> bytes | None:
        return None if text is None else text.encode()

    assert sorted(got) == sorted(
        (p, o, encoded(r["key"]), encoded(r["value"]), r["headers"] or []) for p, o, r in expected
    )
    assert {(r["cluster"], r["topic"], r["timestampType"]) for r in rows} == {("east", "orders", 0)}


def test_a_broker_error_hands_the_rest_of_the_range_to_librdkafka(kafka_clusters: Any) -> None:
    # Offset 0..9 deleted under a range [0, 30) with failOnDataLoss off: the direct path reads
    # nothing before the broker answers OFFSET_OUT_OF_RANGE, then librdkafka's consumer reads
    # [10, 30) and reports the lost records, as test_data_loss.py expects of either reader.
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=1)
    east.produce("orders", [(None, f"v{i}") for i in range(30)], partition=0)
    delete_records(east, "orders", {0: 10})
    config = consumer_config(east.connection_properties())
    module = core()
    assert module is not None
    reader = module.Reader(
        "east", sorted(config.items()), [("orders", 0, 0, 30)], 30_000, False, False
    )
    rows = [row for batch in reader for row in batch.to_pylist()]
    assert [r["offset"] for r in rows] == list(range(10, 30))
    assert reader.fallback() == "partition orders/0 answered error code 1 (OFFSET_OUT_OF_RANGE)"
    assert any("[0, 10)" in w for w in reader.take_warnings())


def test_follower_fetching_is_left_to_librdkafka_which_says_why(kafka_clusters: Any) -> None:
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=1)
    east.produce("orders", [(None, "v")], partition=0)
    module = core()
    assert module is not None
    config = consumer_config({**east.connection_properties(), "client.rack": "dc1"})
    reader = module.Reader(
        "east", sorted(config.items()), [("orders", 0, 0, 1)], 30_000, False, True
    )
    assert [r["value"] for b in reader for r in b.to_pylist()] == [b"v"]
    assert reader.fallback() == "client.rack is set (follower fetching)"


def test_a_fetch_the_broker_holds_longer_than_the_socket_timeout_is_waited_for(
    kafka_clusters: Any,
) -> None:
    # The broker holds a Fetch without data for up to fetch.wait.max.ms (5 s), longer than
    # socket.timeout.ms (1 s): the direct path waits for it rather than timing out (twice: a
    # kept connection is tried again on a new one) and handing the range over. The range's last
    # records are produced 2.5 s into the read.
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=1)
    east.produce("orders", [(None, f"v{i}") for i in range(5)], partition=0)
    later = threading.Timer(
        2.5, east.produce, ("orders", [(None, f"v{i}") for i in range(5, 10)]), {"partition": 0}
    )
    later.start()
    try:
        props = {"socket.timeout.ms": "1000", "fetch.wait.max.ms": "5000"}
        reader, rows = _read(east, [("orders", 0, 0, 10)], **props)
    finally:
        later.join()
    assert [r["value"] for r in rows] == [f"v{i}".encode() for i in range(10)]
    assert reader.fallback() is None
