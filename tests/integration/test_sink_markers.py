"""Issue 41, findings 3 and 4, on Apache Kafka and real Spark: exactlyOnce progress markers
name the streaming query that wrote them and are found wherever they were written.

- Two queries with one ``sinkId`` and two checkpoints: the second fails at its first
  micro-batch naming the ``sinkId``, both query ids and the fix, having written nothing; with
  ``sinkIdTakeover=true`` it writes all of its rows, and the first query, restarted, is now the
  one refused. Read back with read_committed, exact id sets, the default writer.
- Task-level, both writers: a topic that sorts first joins the route, then the route's first
  topic leaves, between attempts and their replays; a take-over's own restarts are replays; a
  marker of today's release (no query id) still skips a replay.
- The direct path's producer reads the markers itself: what a consumer of the group reads, and
  not while a transaction is committing newer ones (require_stable).

The driver killed after a micro-batch's transactions committed, with a topic that sorts first
added to the stream before the restart, is test_sink_faults.py's killed-driver test (one Spark
app run less than a test of its own: each costs minutes on a loaded machine).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from tests.engine_roles import skip_without_core
from tests.integration.helpers import EstateFactory, requires_kafka
from tests.integration.sink_records import (
    drop_files,
    read_topic,
    sink_options,
)

from pyspark_dynamic_kafka.engines.roles import ProduceFailure
from pyspark_dynamic_kafka.errors import SinkIdInUseError
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.sink.executor.markers import (
    MARKER,
    Marker,
    committed_markers,
    marker_metadata,
    progress_group,
)
from pyspark_dynamic_kafka.sink.executor.task import MarkerCluster, WriteTask
from pyspark_dynamic_kafka.sink.executor.transaction import (
    ProducerTransaction,
    produce_transaction,
)
from pyspark_dynamic_kafka.sink.route import WriteRoute

pytestmark = requires_kafka("Kafka transactions (Tansu's are not what these tests check)")

Q1 = "0d6e2f4a-1111-4a4a-8a8a-000000000001"
Q2 = "0d6e2f4a-2222-4a4a-8a8a-000000000002"


def _cluster(cluster: Any, topics: tuple[str, ...] = ("orders",)) -> MarkerCluster:
    """Where the tests look the markers up: ``topics`` of cluster east."""
    properties = FrozenProperties({"bootstrap.servers": cluster.bootstrap_servers})
    return MarkerCluster("east", properties, topics)


def _ids(cluster: Any, topic: str = "orders") -> list[int]:
    return sorted(int(r.value) for r in read_topic(cluster, topic))


def _commits(checkpoint: Path) -> list[str]:
    commits = checkpoint / "commits"
    return sorted(p.name for p in commits.iterdir() if p.name.isdigit()) if commits.exists() else []


def _run(spark: Any, source: Path, options: dict[str, str], checkpoint: Path) -> tuple[str, str]:
    """Stream the text files of ``source`` (one micro-batch each) to the sink until all are
    written; the query's id and its error (``"none"`` when it ended well)."""
    query = (
        spark.readStream.format("text")
        .option("maxFilesPerTrigger", "1")
        .load(str(source))
        .repartition(2)
        .selectExpr("value AS key", "value")
        .writeStream.format("dynamic_kafka")
        .options(**options)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination()
    except Exception as exc:
        return str(query.id), " ".join(str(exc).split())
    return str(query.id), "none"


def test_a_second_query_with_the_same_sink_id_fails_until_it_takes_the_sink_id_over(
    spark: Any, estate: EstateFactory, tmp_path: Path
) -> None:
    # The default writer (writer=auto); the task-level tests below run the markers' rules on
    # both writers, with query ids as the driver hands them to the executors.
    setup = estate("east", partitions=2)  # metadata: orders -> east/orders
    folders = {name: tmp_path / name for name in ("in1", "in2", "staging")}
    for folder in folders.values():
        folder.mkdir()
    first = drop_files(folders["in1"], folders["staging"], [100, 100, 100])
    second = drop_files(folders["in2"], folders["staging"], [100, 100, 100], first=300)
    options = sink_options(setup.meta, deliveryGuarantee="exactlyOnce", sinkId="shared")
    chk1, chk2 = tmp_path / "chk1", tmp_path / "chk2"

    q1, error = _run(spark, folders["in1"], options, chk1)
    assert (error, _commits(chk1)) == ("none", ["0", "1", "2"])
    assert _ids(setup["east"]) == first

    # A new checkpoint under the same sinkId: Spark numbers its micro-batches from 0 again.
    q2, error = _run(spark, folders["in2"], options, chk2)
    assert q2 != q1
    assert "SinkIdInUseError: sinkId 'shared' is in use by another streaming query" in error
    assert f"written by query {q1}, and this query is {q2} (at micro-batch 0)" in error
    assert "Give this query its own sinkId" in error
    assert "set the option sinkIdTakeover=true" in error
    assert _commits(chk2) == []
    assert _ids(setup["east"]) == first  # nothing of the first lost, nothing doubled

    # The same query (its checkpoint) with the take-over option: every row of it, once.
    taking_over = {**options, "sinkIdTakeover": "true"}
    again, error = _run(spark, folders["in2"], taking_over, chk2)
    assert again == q2  # the checkpoint keeps the query id; the executors saw the same one
    assert (error, _commits(chk2)) == ("none", ["0", "1", "2"])
    assert _ids(setup["east"]) == first + second

    # The first query, restarted with a new file, now finds the second's markers.
    drop_files(folders["in1"], folders["staging"], [50], first=600)
    old, error = _run(spark, folders["in1"], options, chk1)
    assert old == q1
    assert f"written by query {q2}, and this query is {q1} (at micro-batch 3)" in error
    assert _commits(chk1) == ["0", "1", "2"]
    assert _ids(setup["east"]) == first + second
    markers = [committed_markers(_cluster(setup["east"]), "shared", p, 60_000) for p in (0, 1)]
    assert markers == [[Marker(2, q2, 1, "east/orders-0")]] * 2


# -- one task at a time, both writers ---------------------------------------------------------


def _task(cluster: Any, topics: set[str], takeover: bool = False) -> WriteTask:
    where = _cluster(cluster, tuple(sorted(topics)))
    return WriteTask(
        WriteRoute("orders", "east", frozenset(topics), where.properties),
        topic="orders",
        flush_timeout_ms=60_000,
        exactly_once=True,
        sink_id="tasks",
        marker_clusters=(where,),
        sink_id_takeover=takeover,
    )


def _batch(values: list[str]) -> list[pa.RecordBatch]:
    return [pa.record_batch([pa.array(values)], names=["value"])]


def _values(cluster: Any) -> list[str]:
    return sorted(r.value for r in read_topic(cluster, "orders"))


def test_a_replay_finds_its_marker_when_a_topic_joins_or_the_first_leaves_the_route(
    transact: Any, estate: EstateFactory
) -> None:
    setup = estate("east", partitions=1)
    east = setup["east"]
    east.create_topic("aaa", partitions=1)  # sorts before 'orders'
    alone, both = _task(east, {"orders"}), _task(east, {"aaa", "orders"})

    def write(task: WriteTask, values: list[str], batch_id: int) -> tuple[Any, bool]:
        report = transact(task, _batch(values), batch_id=batch_id, partition=0, query_id=Q1)
        return report.rows, report.skipped

    assert write(alone, ["a", "b"], 3) == ({"orders": 2}, False)
    # 'aaa' joined the stream before micro-batch 3 was replayed: its marker is on orders-0.
    assert write(both, ["a", "b"], 3) == ({}, True)
    assert write(both, ["c"], 4) == ({"orders": 1}, False)
    # 'aaa' left again before micro-batch 4 was replayed.
    assert write(alone, ["c"], 4) == ({}, True)
    assert write(alone, ["d"], 5) == ({"orders": 1}, False)
    assert _values(east) == ["a", "b", "c", "d"]
    found = sorted(committed_markers(both.marker_clusters[0], "tasks", 0, 60_000), key=str)
    assert found == [Marker(4, Q1, 0, "east/aaa-0"), Marker(5, Q1, 0, "east/orders-0")]


def test_a_take_over_writes_afresh_and_its_own_restarts_are_replays(
    transact: Any, estate: EstateFactory
) -> None:
    setup = estate("east", partitions=1)
    east = setup["east"]
    task, taking_over = _task(east, {"orders"}), _task(east, {"orders"}, takeover=True)
    transact(task, _batch(["q1-5"]), batch_id=5, partition=0, query_id=Q1)
    with pytest.raises(SinkIdInUseError, match=f"written by query {Q1}, and this query is {Q2}"):
        transact(task, _batch(["q2-0"]), batch_id=0, partition=0, query_id=Q2)
    assert _values(east) == ["q1-5"]

    report = transact(taking_over, _batch(["q2-0"]), batch_id=0, partition=0, query_id=Q2)
    assert (report.rows, report.skipped) == ({"orders": 1}, False)
    # Restarted from its checkpoint, with or without the option: its replay is skipped.
    for again in (taking_over, task):
        replay = transact(again, _batch(["q2-0"]), batch_id=0, partition=0, query_id=Q2)
        assert (replay.rows, replay.skipped) == ({}, True)
    transact(task, _batch(["q2-1"]), batch_id=1, partition=0, query_id=Q2)
    # The old query is the one refused now.
    with pytest.raises(SinkIdInUseError, match=f"written by query {Q2}, and this query is {Q1}"):
        transact(task, _batch(["q1-6"]), batch_id=6, partition=0, query_id=Q1)
    assert _values(east) == ["q1-5", "q2-0", "q2-1"]
    (marker,) = committed_markers(task.marker_clusters[0], "tasks", 0, 60_000)
    assert marker == Marker(1, Q2, 1, "east/orders-0")


def test_a_marker_of_todays_release_still_skips_the_replay(
    transact: Any, estate: EstateFactory
) -> None:
    """A marker without a query id (query_id=None writes exactly today's metadata) is taken as
    the restarted query's own."""
    setup = estate("east", partitions=1)
    east = setup["east"]
    task = _task(east, {"orders"})
    transact(task, _batch(["old-7"]), batch_id=7, partition=0)
    (legacy,) = committed_markers(task.marker_clusters[0], "tasks", 0, 60_000)
    assert legacy == Marker(7, None, 0, "east/orders-0")
    assert legacy.query_id is None and MARKER == "dynamic_kafka.sink.batch"
    replay = transact(task, _batch(["old-7"]), batch_id=7, partition=0, query_id=Q1)
    assert (replay.rows, replay.skipped) == ({}, True)
    transact(task, _batch(["new-8"]), batch_id=8, partition=0, query_id=Q1)
    assert _values(east) == ["new-8", "old-7"]
    (marker,) = committed_markers(task.marker_clusters[0], "tasks", 0, 60_000)
    assert marker == Marker(8, Q1, 0, "east/orders-0")


def test_the_direct_producer_reads_the_markers_a_consumer_reads_and_waits_for_a_commit(
    estate: EstateFactory,
) -> None:
    """The direct path's transactional producer asks the group's coordinator itself
    (OffsetFetch v7 over its own connections: no consumer made per task, which costs ~50 ms to
    find the coordinator): the markers a consumer of the group reads, place by place. As
    require_stable asks, a transaction committing a newer marker is waited for
    (UNSTABLE_OFFSET_COMMIT), never answered with the marker before it: the ask fails at its
    timeout while that transaction stays open, and reads the new marker once it committed."""
    skip_without_core("direct")
    east = estate("east", partitions=1)["east"]
    east.create_topic("aaa", partitions=1)
    task = dataclasses.replace(_task(east, {"aaa", "orders"}), engine="direct")
    for batch_id, value in ((3, "a"), (4, "b")):
        produce_transaction(task, _batch([value]), batch_id=batch_id, partition=0, query_id=Q1)
    where = task.marker_clusters[0]
    # Spark partition 5's transactional id: it only asks.
    asker = ProducerTransaction(dataclasses.replace(task, flush_timeout_ms=3_000), 5, None)
    try:
        by_producer = committed_markers(where, "tasks", 0, 60_000, asker.committed)
        by_consumer = committed_markers(where, "tasks", 0, 60_000)
        expected = [Marker(4, Q1, 0, "east/aaa-0"), Marker(4, Q1, 0, "east/orders-0")]
        assert sorted(by_producer, key=str) == sorted(by_consumer, key=str) == expected
        nothing = asker.committed(progress_group("tasks", 7), [("orders", 0)])
        assert [(t, p, o) for t, p, o, _ in nothing or []] == [("orders", 0, -1)]

        group = progress_group("tasks", 1)
        pending = ProducerTransaction(task, 1, None)
        try:
            pending.begin()
            assert pending.write(_batch(["c"])).rows == {"orders": 1}
            metadata = marker_metadata(Q1, 0)
            pending.producer.send_offset(group, ("orders", 0, 9), metadata, 60_000)
            with pytest.raises(ProduceFailure, match="timed out: UNSTABLE_OFFSET_COMMIT"):
                asker.committed(group, [("orders", 0)])
            pending.producer.commit_transaction(60_000)
        finally:
            pending.close()
        assert committed_markers(where, "tasks", 1, 60_000, asker.committed) == [
            Marker(9, Q1, 0, "east/orders-0")
        ]
    finally:
        asker.close()
    assert _values(east) == ["a", "b", "c"]
