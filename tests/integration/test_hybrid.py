"""Hybrid reads (issue 13): a Parquet archive written by a real archiving job, then live Apache
Kafka, switching per partition at the largest archived offset + 1.

Every record's value is ``cluster/partition/offset``, so a row proves where it came from; every
test asserts the exact set of (cluster, partition, offset) read, once each. Kafka has lost
(DeleteRecords) what the archive holds, so a record can only come from the side that still has it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.integration.helpers import (
    DEADLINE,
    Estate,
    EstateFactory,
    delete_records,
    pause_for_a_timestamp,
    wait_for_line,
    wait_until,
)
from tests.integration.queries import batch_read, keyed_rows, memory_query
from tests.integration.query_app import parquet_query

from pyspark_dynamic_kafka.monitoring.progress import offset_document
from pyspark_dynamic_kafka.testing import BaseKafkaCluster

ROOT = Path(__file__).resolve().parents[2]
TOPIC = "orders"
Key = tuple[str, int]  # (cluster, partition)


def _value(cluster: str, partition: int, offset: int) -> str:
    return f"{cluster}/{partition}/{offset}"


def _load(
    cluster: BaseKafkaCluster, produced: dict[Key, int], per_partition: Mapping[int, int]
) -> None:
    """Append ``per_partition[p]`` records to each partition; ``produced`` counts them."""
    name = cluster.name

    def records() -> Iterable[dict[str, Any]]:
        for partition, count in per_partition.items():
            first = produced.get((name, partition), 0)
            for offset in range(first, first + count):
                value = _value(name, partition, offset)
                yield {"key": value, "value": value, "partition": partition}

    cluster.produce_bulk(TOPIC, records())
    for partition, count in per_partition.items():
        produced[(name, partition)] = produced.get((name, partition), 0) + count


def _loaded(
    kafka_estate: EstateFactory, *names: str, partitions: int, count: int
) -> tuple[Estate, dict[Key, int]]:
    """Apache Kafka clusters with ``orders`` mapped to them and ``count`` records in each of
    their ``partitions``; returns the estate and the produced counts."""
    setup = kafka_estate(*names, partitions=partitions)
    produced: dict[Key, int] = {}
    for cluster in setup.clusters.values():
        _load(cluster, produced, dict.fromkeys(range(partitions), count))
    return setup, produced


def _archive(
    spark: Any,
    setup: Estate,
    path: Path,
    ends: Mapping[Key, int],
    files: int,
    drop: Sequence[str] = (),
) -> int:
    """The archiving job: a dynamic_kafka batch read up to ``ends`` in ``files`` tasks (each a
    run of offsets), written as Parquet files partitioned by cluster and topic, one pass without
    a shuffle. Returns the number of data files."""
    ending: dict[str, dict[str, dict[str, int]]] = {}
    for (cluster, partition), end in ends.items():
        ending.setdefault(cluster, {}).setdefault(TOPIC, {})[str(partition)] = end
    options = setup.options(endingOffsets=json.dumps(ending), minPartitions=str(files))
    df = batch_read(spark, options)
    df = df.sortWithinPartitions("cluster", "topic", "partition", "offset").drop(*drop)
    df.write.mode("append").partitionBy("cluster", "topic").parquet(str(path))
    return len(list(path.rglob("*.parquet")))


def _expected(produced: Mapping[Key, int]) -> set[tuple[str, int, int]]:
    return {(c, p, o) for (c, p), n in produced.items() for o in range(n)}


def _check_exact(rows: Sequence[tuple[Any, ...]], produced: Mapping[Key, int]) -> None:
    """Every produced record exactly once, each row's value matching its coordinates."""
    keys = [(c, p, o) for c, _, p, o, _ in rows]
    assert [r for r in rows if r[4] != _value(r[0], r[2], r[3])] == []
    assert [k for k, n in Counter(keys).items() if n > 1] == [], "read twice"
    assert sorted(_expected(produced) - set(keys)) == [], "lost"
    assert sorted(set(keys) - _expected(produced)) == [], "unexpected"


def _check_offset_order(rows: Sequence[tuple[Any, ...]]) -> None:
    """Rows in output order: each partition's offsets only go up."""
    last: dict[Key, int] = {}
    for cluster, _, partition, offset, _ in rows:
        assert offset > last.get((cluster, partition), -1), (cluster, partition, offset)
        last[(cluster, partition)] = offset


def _phases(query: Any) -> list[tuple[str, dict[str, Any]]]:
    """(phase, end offset) of every micro-batch in the query's recent progress."""
    ends = [offset_document(p["sources"][0]["endOffset"]) for p in query.recentProgress]
    return [(end.get("phase", "live"), end) for end in ends]


def _wait_rows(query: Any, count: int) -> None:
    """Wait until a :class:`MemoryQuery`'s table has ``count`` rows (failing at once when the
    query failed); counted by Spark, not collected, so waiting costs little."""

    def enough() -> bool:
        if query.query.exception() is not None:
            raise AssertionError(f"query failed: {query.query.exception()}")
        found = query.spark.sql(f"select count(*) from {query.table}").collect()[0][0]
        return int(found) >= count

    wait_until(enough, what=f"{count} rows")


def _live(query: Any) -> bool:
    """Whether a running query (a :class:`MemoryQuery`) reached the live phase; fails at once
    when it failed."""
    if query.query.exception() is not None:
        raise AssertionError(f"query failed: {query.query.exception()}")
    return any(phase == "live" for phase, _ in _phases(query.query))


def _delete_archived(setup: Estate, ends: Mapping[Key, int]) -> None:
    """Kafka loses what the archive holds (the seam exactly: earliest = the switch offset)."""
    for name, cluster in setup.clusters.items():
        before = {p: end for (c, p), end in ends.items() if c == name and end > 0}
        if before:
            delete_records(cluster, TOPIC, before)


def test_archive_then_kafka_switches_per_partition_exactly_once(
    spark: Any, kafka_estate: EstateFactory, tmp_path: Path
) -> None:
    setup, produced = _loaded(kafka_estate, "east", "west", partitions=8, count=1500)
    # Each partition's archive ends elsewhere; west/7 is not in the archive at all.
    ends = {
        (c, p): 500 + 60 * p + (40 if c == "west" else 0)
        for c in ("east", "west")
        for p in range(8)
    }
    ends[("west", 7)] = 0
    archive = tmp_path / "archive"
    assert _archive(spark, setup, archive, ends, files=24) >= 20
    _delete_archived(setup, ends)
    for cluster in setup.clusters.values():
        _load(cluster, produced, dict.fromkeys(range(8), 100))

    options = setup.options(**{"archive.path": str(archive), "archive.maxFilesPerTrigger": "4"})
    with memory_query(spark, options, "hybrid") as query:
        wait_until(lambda: _live(query), what="the switch to Kafka")
        for cluster in setup.clusters.values():  # produced while the query reads Kafka
            _load(cluster, produced, dict.fromkeys(range(8), 100))
        _wait_rows(query, sum(produced.values()))
        query.query.processAllAvailable()
        rows = query.rows()
        phases = _phases(query.query)

    _check_exact(rows, produced)
    _check_offset_order(rows)
    names = [p for p, _ in phases]
    assert names.count("archive") >= 5, names  # 20+ files, at most 4 per micro-batch
    assert names == sorted(names), names  # archive, ..., archive, live, ...: never back
    # Kafka starts where the archive ends, per partition; west/7 at its start (earliest).
    starts = phases[0][1]["clusters"]
    assert {(c, int(p)): o for c, t in starts.items() for p, o in t[TOPIC].items()} == ends
    first = phases[0][1]["archive"]
    assert first["files"] >= 20 and 0 < first["done"] <= 4


def test_killed_driver_mid_archive_and_mid_live_restarts_exactly_once(
    spark: Any, kafka_estate: EstateFactory, tmp_path: Path
) -> None:
    setup, produced = _loaded(kafka_estate, "east", partitions=4, count=500)
    east = setup["east"]
    ends = {("east", p): 250 + 25 * p for p in range(4)}
    archive = tmp_path / "archive"
    files = _archive(spark, setup, archive, ends, files=10)  # 5 archive micro-batches
    _delete_archived(setup, ends)
    _load(east, produced, dict.fromkeys(range(4), 100))

    checkpoint, output, log = tmp_path / "ckpt", tmp_path / "out", tmp_path / "app.log"
    extra = {"archive.path": str(archive), "archive.maxFilesPerTrigger": "2"}
    app = [sys.executable, str(ROOT / "tests/integration/query_app.py"), str(setup.meta)]
    app += [str(checkpoint), str(output), "orders"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def run(until: Any) -> None:
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [*app, "run", json.dumps(extra)],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            wait_for_line(process, log, "COMMITTED")
            until()
        finally:
            os.killpg(process.pid, signal.SIGKILL)  # the driver and its Python workers
            process.wait(DEADLINE)

    # 1. Killed in the archive phase (two files per micro-batch) right after a committed one.
    run(lambda: None)
    phase, end = _last_offset(checkpoint)
    assert phase == "archive" and end["archive"]["done"] < files, end["archive"]
    # 2. Restarted, killed in the live phase while records keep coming.
    archived = sum(ends.values())

    def live_then_more() -> None:
        wait_until(lambda: _last_offset(checkpoint)[0] == "live", what="the live phase")
        wait_until(lambda: len(_output_rows(spark, output)) > archived, what="live rows")
        _load(east, produced, dict.fromkeys(range(4), 150))

    run(live_then_more)
    assert _last_offset(checkpoint)[0] == "live"
    # 3. Drained from the checkpoint by the same query in this test's own driver (a third
    # Spark driver, without a third JVM start).
    query = parquet_query(spark, str(setup.meta), str(checkpoint), str(output), "orders", extra)
    drain = query.trigger(availableNow=True).start()
    try:
        assert drain.awaitTermination(2 * DEADLINE), "the drain did not end"
    finally:
        drain.stop()
    _check_exact(_output_rows(spark, output), produced)


def _last_offset(checkpoint: Path) -> tuple[str, dict[str, Any]]:
    """The phase and source offset of the newest micro-batch in a checkpoint's offset log."""
    logs = [p for p in (checkpoint / "offsets").glob("*") if p.name.isdigit()]
    if not logs:
        return "", {}
    newest = max(logs, key=lambda p: int(p.name))
    end = json.loads(newest.read_text().splitlines()[-1])
    return end.get("phase", "live"), end


def _output_rows(spark: Any, output: Path) -> list[tuple[Any, ...]]:
    """(cluster, topic, partition, offset, value) committed by the query app's Parquet sink."""
    if not (output / "_spark_metadata").exists():
        return []
    schema = "cluster string, topic string, partition int, offset long, value string"
    table = spark.read.schema(schema).parquet(str(output))
    return [
        tuple(r) for r in table.select("cluster", "topic", "partition", "offset", "value").collect()
    ]


def test_batch_read_is_archive_and_kafka_without_overlap(
    spark: Any, kafka_estate: EstateFactory, tmp_path: Path
) -> None:
    setup, produced = _loaded(kafka_estate, "east", partitions=3, count=300)
    east = setup["east"]
    ends = {("east", 0): 100, ("east", 1): 250, ("east", 2): 0}
    archive = tmp_path / "archive"
    _archive(spark, setup, archive, ends, files=4)
    _delete_archived(setup, ends)
    _load(east, produced, dict.fromkeys(range(3), 50))
    options = setup.options(**{"archive.path": str(archive)})

    rows = keyed_rows(batch_read(spark, options))
    _check_exact([(c, t, p, o, v) for c, t, p, o, v in rows], produced)

    # endingOffsets below where the archive ends: the archive is read whole, Kafka not there.
    ending = json.dumps({"east": {TOPIC: {"0": 50, "1": 300, "2": 20}}})
    rows = keyed_rows(batch_read(spark, {**options, "endingOffsets": ending}))
    bounded = {("east", 0): 100, ("east", 1): 300, ("east", 2): 20}
    _check_exact(rows, bounded)


def test_migration_in_the_live_phase_and_archived_partitions_assigned_later(
    spark: Any, kafka_estate: EstateFactory, tmp_path: Path
) -> None:
    setup, produced = _loaded(kafka_estate, "east", "west", partitions=2, count=400)
    ends = {("east", 0): 200, ("east", 1): 150, ("west", 0): 100, ("west", 1): 120}
    archive = tmp_path / "archive"
    _archive(spark, setup, archive, ends, files=4)
    _delete_archived(setup, {k: v for k, v in ends.items() if k[0] == "east"})
    setup.route("east")  # west's archived history is read, west itself is not mapped yet

    options = setup.options(**{"archive.path": str(archive), "archive.maxFilesPerTrigger": "2"})
    with memory_query(spark, options, "migrate") as query:
        east_now = {k: v for k, v in produced.items() if k[0] == "east"}
        _wait_rows(query, sum(east_now.values()) + ends[("west", 0)] + ends[("west", 1)])
        _load(setup["east"], produced, dict.fromkeys(range(2), 50))
        # The producers move to west, then the stream: west continues where its archive ends.
        setup.route("east", "west")
        _load(setup["west"], produced, dict.fromkeys(range(2), 60))
        _wait_rows(query, sum(produced.values()))
        setup.route("west")
        wait_until(
            lambda: set(query.offsets().get("clusters", {})) == {"west"}, what="east to leave"
        )
        _load(setup["west"], produced, dict.fromkeys(range(2), 40))
        _wait_rows(query, sum(produced.values()))
        query.query.processAllAvailable()
        rows = query.rows()
    _check_exact(rows, produced)
    _check_offset_order(rows)


def test_timestamp_switch_for_an_archive_without_offsets(
    spark: Any, kafka_estate: EstateFactory, tmp_path: Path
) -> None:
    setup, produced = _loaded(kafka_estate, "east", partitions=2, count=100)
    east = setup["east"]
    switch = pause_for_a_timestamp()
    _load(east, produced, dict.fromkeys(range(2), 30))
    archive = tmp_path / "archive"  # every record so far, without the offset column
    _archive(spark, setup, archive, {("east", 0): 130, ("east", 1): 130}, 3, drop=["offset"])
    _load(east, produced, dict.fromkeys(range(2), 20))

    with pytest.raises(Exception, match=r"archive\.switchTimestamp"):
        batch_read(spark, setup.options(**{"archive.path": str(archive)})).collect()

    options = setup.options(
        **{"archive.path": str(archive), "archive.switchTimestamp": str(switch)}
    )
    df = batch_read(spark, options).selectExpr("partition", "offset", "cast(value as string)")
    rows = [tuple(r) for r in df.collect()]
    archived = [r for r in rows if r[1] is None]
    assert sorted(r[2] for r in archived) == sorted(
        _value("east", p, o) for p in range(2) for o in range(100)
    )
    from_kafka = [r for r in rows if r[1] is not None]
    assert sorted((r[0], r[1]) for r in from_kafka) == [
        (p, o) for p in range(2) for o in range(100, 150)
    ]
