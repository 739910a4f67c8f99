"""Restart from a checkpoint (graceful stop and killed driver) and client cleanup."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tests.integration.helpers import (
    latest_offset_json,
    produce,
    source_options,
    values_of,
    wait_until,
    write_metadata,
)

from pyspark_dynamic_kafka.testing import count_client_connections

ROOT = Path(__file__).resolve().parents[2]


def _parquet_values(spark: Any, output: Path) -> list[str]:
    if not (output / "_spark_metadata").exists():
        return []
    # An explicit schema: the sink's log may exist before its first data file does.
    table = spark.read.schema("cluster string, value string").parquet(str(output))
    return [r.value for r in table.select("value").collect()]


def _parquet_query(spark: Any, meta: Path, checkpoint: Path, output: Path) -> Any:
    df = (
        spark.readStream.format("dynamic_kafka")
        .options(**source_options(meta, streamIds="orders"))
        .load()
        .selectExpr("cluster", "cast(value as string) as value")
    )
    return (
        df.writeStream.format("parquet")
        .option("path", str(output))
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="200 milliseconds")
        .start()
    )


def test_stop_mid_stream_and_restart_reads_each_record_once(
    spark: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    clusters = kafka_clusters("east", "west")
    for c in clusters.values():
        c.create_topic("orders", partitions=2)
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"orders": [("east", ["orders"]), ("west", ["orders"])]})
    checkpoint, output = tmp_path / "ckpt", tmp_path / "out"
    expected: list[str] = []

    query = _parquet_query(spark, meta, checkpoint, output)
    for round_ in range(3):
        values = [f"r{round_}-{i}" for i in range(15)]
        produce(clusters["east"].bootstrap_servers, "orders", values[:8], 2)
        produce(clusters["west"].bootstrap_servers, "orders", values[8:], 2)
        expected += values
        time.sleep(0.3)
    query.stop()  # mid-stream: some records may not be processed yet
    produce(clusters["west"].bootstrap_servers, "orders", ["while-down"], 2)
    expected.append("while-down")

    query = _parquet_query(spark, meta, checkpoint, output)
    try:
        wait_until(lambda: len(_parquet_values(spark, output)) >= len(expected), what="rows")
        query.processAllAvailable()
        got = _parquet_values(spark, output)
        assert sorted(got) == sorted(expected)
        assert not [v for v, n in Counter(got).items() if n > 1]
    finally:
        query.stop()


def test_metadata_changed_while_down_is_reconciled_at_restart(
    spark: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    clusters = kafka_clusters("east", "west")
    east, west = clusters["east"].bootstrap_servers, clusters["west"].bootstrap_servers
    for c in clusters.values():
        c.create_topic("orders", partitions=2)
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"orders": [("east", ["orders"])]})
    checkpoint, output = tmp_path / "ckpt", tmp_path / "out"
    before = [f"east-{i}" for i in range(12)]
    produce(east, "orders", before, 2)
    produce(west, "orders", [f"west-old-{i}" for i in range(6)], 2)  # not in the stream yet

    query = _parquet_query(spark, meta, checkpoint, output)
    try:
        wait_until(lambda: len(_parquet_values(spark, output)) >= len(before), what="east rows")
        query.processAllAvailable()
    finally:
        query.stop()

    # While the query is down: the stream moves to west; east keeps receiving records that the
    # stream no longer maps.
    write_metadata(meta, clusters, {"orders": [("west", ["orders"])]})
    produce(east, "orders", [f"east-late-{i}" for i in range(5)], 2)
    produce(west, "orders", [f"west-new-{i}" for i in range(6)], 2)

    query = _parquet_query(spark, meta, checkpoint, output)
    try:
        # west is discovered at restart: read from discoveryStartingOffsets=earliest.
        expected = (
            before + [f"west-old-{i}" for i in range(6)] + [f"west-new-{i}" for i in range(6)]
        )
        wait_until(lambda: len(_parquet_values(spark, output)) >= len(expected), what="rows")
        query.processAllAvailable()
        assert sorted(_parquet_values(spark, output)) == sorted(expected)
        assert set(latest_offset_json(query)["clusters"]) == {"west"}
    finally:
        query.stop()


def test_killed_driver_restarts_exactly_once(
    spark: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    clusters = kafka_clusters("east")
    east = clusters["east"]
    east.create_topic("orders", partitions=3)
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"orders": [("east", ["orders"])]})
    checkpoint, output = tmp_path / "ckpt", tmp_path / "out"
    app = [sys.executable, str(ROOT / "tests/integration/query_app.py"), str(meta)]
    app += [str(checkpoint), str(output), "orders"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    process = subprocess.Popen(
        [*app, "run"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    expected: list[str] = []
    try:
        for batch in range(40):
            values = [f"k{batch}-{i}" for i in range(10)]
            produce(east.bootstrap_servers, "orders", values, 3)
            expected += values
            if len(_parquet_values(spark, output)) >= 100:
                break
            time.sleep(0.5)
        assert len(_parquet_values(spark, output)) > 0, "the job never committed a batch"
        more = [f"late-{i}" for i in range(30)]
        produce(east.bootstrap_servers, "orders", more, 3)  # being read while we kill
        expected += more
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the driver and its Python workers
        process.wait(30)

    drain = subprocess.run([*app, "drain"], env=env, capture_output=True, timeout=300)
    assert drain.returncode == 0, drain.stderr.decode()[-3000:]
    got = _parquet_values(spark, output)
    assert sorted(set(expected) - set(got)) == [], "lost"
    assert sorted(set(got) - set(expected)) == [], "unexpected"
    assert sorted(got) == sorted(expected)


def test_consumers_of_removed_cluster_are_closed(
    spark: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    clusters = kafka_clusters("east", "west")
    for c in clusters.values():
        c.create_topic("orders", partitions=2)
    west_port = clusters["west"].port
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"orders": [("east", ["orders"]), ("west", ["orders"])]})
    produce(clusters["east"].bootstrap_servers, "orders", [f"e{i}" for i in range(10)], 2)
    produce(clusters["west"].bootstrap_servers, "orders", [f"w{i}" for i in range(10)], 2)
    query = (
        spark.readStream.format("dynamic_kafka")
        .options(**source_options(meta, streamIds="orders"))
        .load()
        .writeStream.format("memory")
        .queryName("cleanup")
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        wait_until(lambda: len(values_of(spark, "cleanup")) >= 20, what="20 rows")
        assert count_client_connections(west_port) > 0
        write_metadata(meta, clusters, {"orders": [("east", ["orders"])]})
        wait_until(
            lambda: "west" not in latest_offset_json(query).get("clusters", {}),
            what="west to leave the offsets",
        )
        produce(clusters["east"].bootstrap_servers, "orders", [f"e2-{i}" for i in range(10)], 2)
        wait_until(lambda: len(values_of(spark, "cleanup")) >= 30, what="30 rows")
        # Driver admin clients go at reconciliation; pooled executor consumers when idle
        # (kafkaConsumer.cacheTimeoutMs=2000 in these tests) or at the next task.
        wait_until(
            lambda: count_client_connections(west_port) == 0,
            timeout=30,
            what="every connection to the removed cluster to close",
        )
        assert query.exception() is None
    finally:
        query.stop()
