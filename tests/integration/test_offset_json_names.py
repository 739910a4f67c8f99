"""Offset JSON options that name what the query does not read fail before anything is read.

A cluster, topic or partition named in ``startingOffsets``, ``endingOffsets``,
``startingOffsetsByTimestamp`` or ``endingOffsetsByTimestamp`` that the query does not read is an
error naming it, what the query reads, and the closest name; the query reads nothing (a stream
fails before its first micro-batch; a batch read fails). A JSON naming a subset of the partitions
read still works, and a restarted stream ignores its starting options, as Spark's kafka source.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.integration.helpers import Estate, numbered, produce, wait_until
from tests.integration.queries import batch_read, keyed_rows, start_memory_query

from pyspark_dynamic_kafka.testing import open_clusters

STAMP = 1_000  # a timestamp before every record

_READS = "The query reads east/orders (partitions 0-1)"
CASES = [
    # (option, JSON, what the error says)
    (
        "startingOffsets",
        {"north": {"orders": {"0": 10}}},
        "names cluster 'north', which the query does not read.",
    ),
    (
        "startingOffsets",
        {"east": {"order": {"0": 1}}},
        "names topic 'order' on cluster 'east', which the query does not read there. "
        "Did you mean 'orders'?",
    ),
    (
        "startingOffsets",
        {"east": {"orders": {"0": 1, "7": 0}}},
        "names partition 7 of east/orders, which has partitions 0-1 now.",
    ),
    (
        "startingOffsetsByTimestamp",
        {"eest": {"orders": {"0": STAMP}}},
        "names cluster 'eest', which the query does not read. Did you mean 'east'?",
    ),
    (
        "startingOffsetsByTimestamp",
        {"east": {"orders": {"2": STAMP}}},
        "names partition 2 of east/orders, which has partitions 0-1 now.",
    ),
]
BATCH_ONLY = [
    (
        "endingOffsets",
        {"north": {"orders": {"0": 10}}},
        "names cluster 'north', which the query does not read.",
    ),
    (
        "endingOffsets",
        {"east": {"order": {"0": -1}}},
        "names topic 'order' on cluster 'east', which the query does not read there. "
        "Did you mean 'orders'?",
    ),
    (
        "endingOffsetsByTimestamp",
        {"east": {"orders": {"3": STAMP}}},
        "names partition 3 of east/orders, which has partitions 0-1 now.",
    ),
]


@pytest.fixture(scope="module")
def orders(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Estate]:
    """Stream orders: topic orders on east, 2 partitions, 10 records on each; one estate for the
    module (every test reads it as it is; the restart test maps the stream in a file of its own)."""
    with open_clusters(["east"]) as clusters:
        setup = Estate(clusters, tmp_path_factory.mktemp("offset-json") / "streams.yaml")
        clusters["east"].create_topic("orders", partitions=2)
        setup.route("east")
        for partition in (0, 1):
            produce(clusters["east"], "orders", numbered(f"p{partition}-", 10), first=partition)
        yield setup


@pytest.mark.parametrize(("option", "spec", "says"), CASES + BATCH_ONLY)
def test_a_batch_read_fails_naming_what_is_not_read(
    spark: Any, orders: Any, option: str, spec: dict[str, Any], says: str
) -> None:
    with pytest.raises(Exception) as raised:
        batch_read(spark, orders.options(**{option: json.dumps(spec)})).collect()
    message = str(raised.value)
    assert f"Option '{option}' {says}" in message
    assert _READS in message


@pytest.mark.parametrize(("option", "spec", "says"), CASES)
def test_a_stream_fails_before_reading_anything(
    spark: Any, orders: Any, option: str, spec: dict[str, Any], says: str
) -> None:
    query = start_memory_query(spark, orders.options(**{option: json.dumps(spec)}))
    try:
        message = query.failure()
        assert f"Option '{option}' {says}" in message
        assert _READS in message
        assert query.rows() == []
        assert all(p["numInputRows"] == 0 for p in query.query.recentProgress)
    finally:
        query.query.stop()


def test_a_json_naming_some_partitions_read_still_works_and_a_restart_ignores_it(
    spark: Any, orders: Any, tmp_path: Path
) -> None:
    """startingOffsets names partition 0 only (1 takes the fallback); restarted after topic
    orders left the stream for topic payments, the query resumes from its checkpoint."""
    east = orders["east"]
    mine = Estate(orders.clusters, tmp_path / "streams.yaml")  # the module's file stays as it is
    mine.route("east")
    options = mine.options(startingOffsets=json.dumps({"east": {"orders": {"0": 5}}}))
    rows = keyed_rows(batch_read(spark, options))
    assert [r[4] for r in rows] == numbered("p0-", 5, 5) + numbered("p1-", 10)

    checkpoint, output = str(tmp_path / "checkpoint"), str(tmp_path / "out")

    def start(**trigger: Any) -> Any:
        return (
            spark.readStream.format("dynamic_kafka")
            .options(**options)
            .load()
            .selectExpr("CAST(value AS STRING) AS value")
            .writeStream.format("parquet")
            .option("path", output)
            .option("checkpointLocation", checkpoint)
            .trigger(**trigger)
            .start()
        )

    def values() -> list[str]:
        return sorted(r.value for r in spark.read.parquet(output).collect())

    first = start(availableNow=True)
    first.awaitTermination()
    assert first.exception() is None
    assert values() == sorted(numbered("p0-", 5, 5) + numbered("p1-", 10))

    east.create_topic("payments", partitions=1)
    produce(east, "payments", ["pay0", "pay1"])
    mine.write({"orders": [("east", ["payments"])]})
    again = start(processingTime="200 milliseconds")
    try:
        wait_until(
            lambda: again.exception() is not None or len(values()) >= 17,
            what="the restarted query to read payments",
        )
        assert again.exception() is None
        again.processAllAvailable()
        assert values() == sorted(numbered("p0-", 5, 5) + numbered("p1-", 10) + ["pay0", "pay1"])
    finally:
        again.stop()
