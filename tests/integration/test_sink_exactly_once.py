"""The sink, exactlyOnce, on Apache Kafka and real Spark with exact record sets read with
``isolation.level=read_committed``: task retries (a task failing part-way through its
transaction), a micro-batch replayed after its tasks committed (Spark's commit log lost, as when
the driver dies between the two), and zombie fencing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import KafkaException
from tests.integration.helpers import DEADLINE, EstateFactory, requires_kafka
from tests.integration.sink_records import read_topic, sink_options, write_routes

from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.sink.executor.task import MarkerCluster, WriteTask
from pyspark_dynamic_kafka.sink.executor.transaction import (
    committed_batch,
    open_transaction,
    produce_transaction,
)
from pyspark_dynamic_kafka.sink.route import WriteRoute

pytestmark = requires_kafka("Kafka transactions (Tansu's are not what this test checks)")

APP = Path(__file__).with_name("sink_app.py")


def _files(incoming: Path, staging: Path, sizes: list[int]) -> list[int]:
    """One text file per micro-batch with consecutive ids; returns every id."""
    ids: list[int] = []
    for index, size in enumerate(sizes):
        batch = list(range(len(ids), len(ids) + size))
        path = staging / f"f{index:03d}.txt"
        path.write_text("".join(f"{i}\n" for i in batch))
        shutil.move(path, incoming / path.name)
        ids += batch
    return ids


def _run_app(tmp_path: Path, config: dict[str, Any]) -> str:
    path = tmp_path / f"app{len(list(tmp_path.glob('app*.json')))}.json"
    path.write_text(json.dumps(config))
    done = subprocess.run(
        [sys.executable, str(APP), str(path)],
        capture_output=True,
        text=True,
        timeout=DEADLINE * 2,
        check=True,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("ERROR ")]
    assert lines, done.stdout[-2000:] + done.stderr[-4000:]
    return lines[-1].removeprefix("ERROR ")


def test_task_retries_and_a_replayed_micro_batch_write_each_row_once(
    estate: EstateFactory, tmp_path: Path
) -> None:
    setup = estate("east", "west", partitions=2)
    write_routes(
        setup.meta, setup.clusters, [("east", ["orders"], True), ("west", ["orders"], False)]
    )
    incoming, staging, fails = tmp_path / "in", tmp_path / "staging", tmp_path / "fails"
    for folder in (incoming, staging, fails):
        folder.mkdir()
    ids = _files(incoming, staging, [300, 450, 250])
    fail_values = ["225", "650"]  # late rows of micro-batches 0 and 1: records were sent first
    config = {
        "input": str(incoming),
        "checkpoint": str(tmp_path / "chk"),
        "fail_dir": str(fails),
        "fail_values": fail_values,
        "options": sink_options(
            setup.meta, deliveryGuarantee="exactlyOnce", sinkId="orders-writer"
        ),
    }
    assert _run_app(tmp_path, config) == "none"
    assert sorted(p.name for p in fails.iterdir()) == sorted(fail_values)  # the faults happened
    committed = sorted(int(r.value) for r in read_topic(setup["east"], "orders"))
    assert committed == ids
    assert read_topic(setup["west"], "orders") == []

    # Spark's commit log loses the last micro-batch (the driver died after its tasks committed,
    # before Spark recorded it), and the route moved to west meanwhile: the restarted query
    # replays micro-batch 2 (same rows), whose markers on east say it is committed; the next
    # micro-batch (a new file) goes to west, once. One restart shows both (a Spark driver less).
    commits = tmp_path / "chk" / "commits"
    last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    assert last == 2
    (commits / str(last)).unlink()
    (commits / f".{last}.crc").unlink(missing_ok=True)  # else Spark cannot write it again
    write_routes(
        setup.meta, setup.clusters, [("east", ["orders"], False), ("west", ["orders"], True)]
    )
    more = [i + len(ids) for i in range(150)]
    (staging / "f003.txt").write_text("".join(f"{i}\n" for i in more))
    shutil.move(staging / "f003.txt", incoming / "f003.txt")
    assert _run_app(tmp_path, config) == "none"
    assert (commits / str(last)).exists()  # the micro-batch ran again
    assert (commits / str(last + 1)).exists()  # then the next one
    assert sorted(int(r.value) for r in read_topic(setup["east"], "orders")) == ids
    assert sorted(int(r.value) for r in read_topic(setup["west"], "orders")) == more


def _task(cluster: Any, sink_id: str = "zombie-test") -> WriteTask:
    properties = FrozenProperties({"bootstrap.servers": cluster.bootstrap_servers})
    route = WriteRoute("orders", "east", frozenset({"orders"}), properties)
    return WriteTask(
        route,
        flush_timeout_ms=60_000,
        exactly_once=True,
        sink_id=sink_id,
        marker_clusters=(MarkerCluster("east", properties, "orders"),),
    )


def _batch(values: list[str]) -> pa.RecordBatch:
    return pa.record_batch([pa.array(values)], names=["value"])


def test_a_zombie_attempt_cannot_commit_after_a_newer_one_started(
    estate: EstateFactory,
) -> None:
    setup = estate("east", partitions=1)
    task = _task(setup["east"])
    zombie = open_transaction(task, 0)
    zombie.begin_transaction()
    for value in ("z0", "z1", "z2"):
        zombie.produce("orders", value=value)
    assert zombie.flush(60) == 0

    report = produce_transaction(task, [_batch(["n0", "n1"])], batch_id=5, partition=0)
    assert (report.rows, report.skipped) == ({"orders": 2}, False)
    with pytest.raises(KafkaException) as caught:
        zombie.commit_transaction(60)
    assert caught.value.args[0].fatal() or "fenced" in str(caught.value).lower()

    assert sorted(r.value for r in read_topic(setup["east"], "orders")) == ["n0", "n1"]
    # The zombie's records did reach the cluster: only read_uncommitted readers see them.
    everything = read_topic(setup["east"], "orders", "read_uncommitted")
    assert sorted(r.value for r in everything) == ["n0", "n1", "z0", "z1", "z2"]
    assert committed_batch(task, task.marker_clusters[0], 5) is None  # no such partition yet
    assert committed_batch(task, task.marker_clusters[0], 0) == 5
    # The same partition of the same micro-batch again (a retry): skipped, nothing written.
    again = produce_transaction(task, [_batch(["n0", "n1"])], batch_id=5, partition=0)
    assert (again.rows, again.skipped) == ({}, True)
    assert sorted(r.value for r in read_topic(setup["east"], "orders")) == ["n0", "n1"]
