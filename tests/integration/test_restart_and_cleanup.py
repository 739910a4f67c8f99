"""Restart from a checkpoint (graceful stop and killed driver) and client cleanup."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.integration import query_app
from tests.integration.helpers import (
    DEADLINE,
    EstateFactory,
    numbered,
    produce,
    wait_for_line,
    wait_until,
)
from tests.integration.queries import (
    end_offset,
    memory_query,
    parquet_query,
    parquet_values,
    wait_parquet,
)
from tests.integration.scenarios import stop_mid_stream_and_restart

from pyspark_dynamic_kafka.testing import count_client_connections

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.smoke
def test_stop_mid_stream_and_restart_reads_each_record_once(
    spark: Any, estate: EstateFactory, tmp_path: Path
) -> None:
    stop_mid_stream_and_restart(spark, estate, tmp_path)


def test_metadata_changed_while_down_is_reconciled_at_restart(
    spark: Any, estate: EstateFactory, tmp_path: Path
) -> None:
    setup = estate("east", "west", partitions=2, listed=["east"])
    east, west = setup["east"], setup["west"]
    output = tmp_path / "out"
    before = produce(east, "orders", numbered("east-", 12), 2)
    west_old = produce(west, "orders", numbered("west-old-", 6), 2)  # not in the stream yet

    query = parquet_query(spark, setup.options(), tmp_path)
    try:
        wait_parquet(spark, output, len(before))
        query.processAllAvailable()
    finally:
        query.stop()

    # While the query is down: the stream moves to west; east keeps receiving records that the
    # stream no longer maps.
    setup.route("west")
    produce(east, "orders", numbered("east-late-", 5), 2)
    west_new = produce(west, "orders", numbered("west-new-", 6), 2)

    query = parquet_query(spark, setup.options(), tmp_path)
    try:
        # west is discovered at restart: read from discoveryStartingOffsets=earliest.
        expected = before + west_old + west_new
        wait_parquet(spark, output, len(expected))
        query.processAllAvailable()
        assert sorted(parquet_values(spark, output)) == sorted(expected)
        assert set(end_offset(query)["clusters"]) == {"west"}
    finally:
        query.stop()


def test_killed_driver_restarts_exactly_once(
    spark: Any, estate: EstateFactory, tmp_path: Path
) -> None:
    setup = estate("east", partitions=3)
    east = setup["east"]
    checkpoint, output, log = tmp_path / "ckpt", tmp_path / "out", tmp_path / "app.log"
    app = [sys.executable, str(ROOT / "tests/integration/query_app.py"), str(setup.meta)]
    app += [str(checkpoint), str(output), "orders"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    with open(log, "wb") as out:
        process = subprocess.Popen(
            [*app, "run"], env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        # The child reports a committed batch: only then is there a checkpoint to restart from.
        expected = produce(east, "orders", numbered("k0-", 10), 3)
        wait_for_line(process, log, "COMMITTED")
        assert len(parquet_values(spark, output)) > 0, "the job never committed a batch"
        for batch in range(1, 10):
            expected += produce(east, "orders", numbered(f"k{batch}-", 10), 3)
        wait_parquet(spark, output, 100)  # the job is reading as it runs
        expected += produce(east, "orders", numbered("late-", 30), 3)  # being read while we kill
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the driver and its Python workers
        process.wait(DEADLINE)

    # Drained from the checkpoint by the same query in this test's own driver (a second Spark
    # driver, without a second JVM start).
    query = query_app.parquet_query(
        spark, str(setup.meta), str(checkpoint), str(output), "orders", {}
    )
    drain = query.trigger(availableNow=True).start()
    try:
        assert drain.awaitTermination(2 * DEADLINE), "the drain did not end"
    finally:
        drain.stop()
    got = parquet_values(spark, output)
    assert sorted(set(expected) - set(got)) == [], "lost"
    assert sorted(set(got) - set(expected)) == [], "unexpected"
    assert sorted(got) == sorted(expected)


def test_consumers_of_removed_cluster_are_closed(spark: Any, estate: EstateFactory) -> None:
    setup = estate("east", "west", partitions=2)
    west_port = setup["west"].port
    produce(setup["east"], "orders", numbered("e", 10), 2)
    produce(setup["west"], "orders", numbered("w", 10), 2)
    with memory_query(spark, setup.options(), "cleanup") as query:
        wait_until(lambda: len(query.healthy_values()) >= 20, what="20 rows")
        assert count_client_connections(west_port) > 0
        setup.route("east")
        wait_until(
            lambda: "west" not in query.offsets().get("clusters", {}),
            what="west to leave the offsets",
        )
        produce(setup["east"], "orders", numbered("e2-", 10), 2)
        wait_until(lambda: len(query.healthy_values()) >= 30, what="30 rows")
        # Driver admin clients go at reconciliation; pooled executor consumers when idle
        # (kafkaConsumer.cacheTimeoutMs=2000 in these tests) or at the next task.
        wait_until(
            lambda: count_client_connections(west_port) == 0,
            what="every connection to the removed cluster to close",
        )
        assert query.query.exception() is None
