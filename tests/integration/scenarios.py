"""Scenarios run on more than one kind of Spark: the local session of most tests, and a
standalone cluster driven through Spark Connect (test_deploy.py). Each asserts exact records."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from tests.integration.helpers import EstateFactory, numbered, produce, wait_until
from tests.integration.queries import memory_query, parquet_query, parquet_values, wait_parquet


def migrate_east_to_west(spark: Any, estate: EstateFactory) -> None:
    """Stream ``orders`` moves from east to west through the metadata while the query runs
    (east, then both, then west): every record read once, east's late records not at all."""
    setup = estate("east", "west", partitions=3, listed=["east"])
    east, west = setup["east"], setup["west"]
    expected = produce(east, "orders", numbered("a", 20), 3)
    with memory_query(spark, setup.options()) as query:
        query.expect(expected)

        setup.route("east", "west")
        expected += produce(west, "orders", numbered("b", 20), 3)
        expected += produce(east, "orders", numbered("c", 10), 3)
        query.expect(expected)

        setup.route("west")
        wait_until(
            lambda: "east" not in query.offsets().get("clusters", {}),
            what="east to leave the offset",
        )
        produce(east, "orders", numbered("ignored", 5), 3)
        expected += produce(west, "orders", numbered("d", 20), 3)
        query.expect(expected)


def stop_mid_stream_and_restart(spark: Any, estate: EstateFactory, tmp_path: Path) -> None:
    """A checkpointed query into Parquet stopped mid-stream and started again from its
    checkpoint: every record produced before, during and after the stop read exactly once."""
    setup = estate("east", "west", partitions=2)
    output = tmp_path / "out"
    expected: list[str] = []

    query = parquet_query(spark, setup.options(), tmp_path)
    for round_ in range(3):
        values = numbered(f"r{round_}-", 15)
        expected += produce(setup["east"], "orders", values[:8], 2)
        expected += produce(setup["west"], "orders", values[8:], 2)
        if round_ == 0:  # a batch is committed before the stop: the restart resumes from it
            wait_parquet(spark, output, 1)
    query.stop()  # mid-stream: some records may not be processed yet
    expected += produce(setup["west"], "orders", ["while-down"], 2)

    query = parquet_query(spark, setup.options(), tmp_path)
    try:
        wait_parquet(spark, output, len(expected))
        query.processAllAvailable()
        got = parquet_values(spark, output)
        assert sorted(got) == sorted(expected)
        assert not [v for v, n in Counter(got).items() if n > 1]
    finally:
        query.stop()
