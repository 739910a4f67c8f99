"""failOnDataLoss on real brokers: a topic deleted while the metadata lists it fails the query;
with failOnDataLoss=false a topic recreated with fewer partitions (offsets went back, a partition
vanished) is skipped to its earliest offsets and the query keeps reading.

Offsets that went back are told apart by topic id (KIP-516): a topic recreated while the query
was stopped, whose new end is already past the checkpointed offset, is read from its earliest
offset; a log truncated by an unclean leader election (Apache Kafka, three brokers) continues
from its new end, nothing read twice. Both fail the query under failOnDataLoss=true first,
naming the partition, both offsets and what happened, then resume from the same checkpoint.

Records deleted under a range (retention, DeleteRecords) are reported exactly on both readers:
test_read.py::test_offsets_out_of_range_fail_or_resume.

Removal through the metadata is never data loss: see test_streaming_core.py, whose topic and
cluster removals run with the default failOnDataLoss=true.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient
from tests.integration import helpers, queries

from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.kafka.admin import ClusterAdmin
from pyspark_dynamic_kafka.monitoring.progress import offset_document
from pyspark_dynamic_kafka.offset_spec import PositionKind
from pyspark_dynamic_kafka.testing import BaseKafkaCluster
from pyspark_dynamic_kafka.testing.apache_kafka import ApacheKafkaCluster

#: The readers a task can use: the compiled core only where it is installed (make setup NATIVE=1).
READERS = ["python", *(["native"] if core() is not None else [])]


@contextlib.contextmanager
def _read_then_delete(
    spark: Any, estate: helpers.EstateFactory, partitions: int, values: list[str], **options: str
) -> Iterator[tuple[BaseKafkaCluster, queries.MemoryQuery, list[str]]]:
    """A query on east that read ``values``, then its topic deleted."""
    setup = estate("east", partitions=partitions)
    east = setup["east"]
    expected = helpers.produce(east, "orders", values, partitions)
    with queries.memory_query(spark, setup.options(**options), "loss") as query:
        query.expect(expected)
        east.delete_topic("orders")
        yield east, query, expected


def test_deleted_topic_fails_the_query_naming_partitions_and_offsets(
    spark: Any, estate: helpers.EstateFactory
) -> None:
    # The topic is deleted while the metadata still lists it.
    with _read_then_delete(spark, estate, 2, helpers.numbered("x", 10)) as (_, query, _):
        with pytest.raises(Exception) as info:
            query.query.awaitTermination(helpers.DEADLINE)
        message = str(info.value)
        assert "DataLossError" in message and "Data loss" in message
        for partition in (0, 1):  # deleted, or already recreated empty by the broker
            assert f"east/orders/{partition}: " in message
            assert "next offset to read 5" in message
        assert "failOnDataLoss=false" in message


def test_recreated_topic_with_fewer_partitions_is_skipped_without_fail(
    spark: Any, estate: helpers.EstateFactory
) -> None:
    # Partitions 0 and 1 come back with fewer records (their offsets go back from 4 to 2);
    # partition 2 vanishes. Everything the new topic holds is read, from its earliest offset.
    options = {"failOnDataLoss": "false"}
    with _read_then_delete(spark, estate, 3, helpers.numbered("a", 12), **options) as deleted:
        east, query, expected = deleted
        east.create_topic("orders", partitions=2)
        expected += helpers.produce(east, "orders", helpers.numbered("b", 4), 2)
        query.expect(expected)
        expected += helpers.produce(east, "orders", helpers.numbered("c", 6), 2)
        query.expect(expected)
        helpers.wait_until(
            lambda: query.offsets()["clusters"]["east"]["orders"] == {"0": 5, "1": 5},
            what="the offset of the recreated topic",
        )
        assert query.query.isActive and query.query.exception() is None


def _topic_id(cluster: BaseKafkaCluster, topic: str) -> str:
    admin = AdminClient(cluster.client_properties())
    return str(admin.describe_topics(TopicCollection([topic]))[topic].result(timeout=60).topic_id)


def _losses(query: Any) -> list[dict[str, Any]]:
    """The data losses the source's progress named (``dataLoss`` of its status)."""
    found: list[dict[str, Any]] = []
    for report in query.recentProgress:
        latest = report["sources"][0].get("latestOffset") or {}
        latest = offset_document(latest) or {}
        found += [
            loss for loss in latest.get("dynamicKafka", {}).get("dataLoss", []) if loss not in found
        ]
    return found


def _failure(query: Any) -> str:
    helpers.wait_until(lambda: query.exception() is not None, what="the query to fail")
    return str(query.exception())


def _stream(spark: Any, options: dict[str, str], where: Path) -> Any:
    return queries.parquet_query(spark, options, where)


def test_a_topic_recreated_while_stopped_is_read_from_its_earliest_offset(
    spark: Any, estate: helpers.EstateFactory, tmp_path: Path
) -> None:
    # The new topic's end (6) is past the checkpointed offset (4): without topic ids the query
    # would go on from 4 and skip c0..c3 of the new topic.
    setup = estate("east", partitions=1)
    east = setup["east"]
    first = helpers.produce(east, "orders", helpers.numbered("a", 4))
    old = _topic_id(east, "orders")
    query = _stream(spark, setup.options(), tmp_path)
    queries.wait_parquet(spark, tmp_path / "out", 4)
    query.processAllAvailable()
    query.stop()
    east.delete_topic("orders")
    east.create_topic("orders", partitions=1)
    new = _topic_id(east, "orders")
    assert new != old
    recreated = helpers.produce(east, "orders", helpers.numbered("c", 6))
    failing = _stream(spark, setup.options(), tmp_path)
    message = _failure(failing)
    assert "DataLossError" in message
    assert (
        f"east/orders/0: the topic was recreated (topic id {old}, now {new}): read from its "
        "earliest offset (next offset to read 4, latest offset now 6)"
    ) in message
    query = _stream(spark, setup.options(failOnDataLoss="false"), tmp_path)
    try:
        queries.wait_parquet(spark, tmp_path / "out", 10)
        query.processAllAvailable()
        assert sorted(queries.parquet_values(spark, tmp_path / "out")) == sorted(first + recreated)
        assert {k: v for k, v in _losses(query)[0].items() if k != "what"} == {
            "partition": "east/orders/0",
            "nextOffset": 4,
            "latestOffset": 6,
        }
        assert _losses(query)[0]["what"].startswith(f"the topic was recreated (topic id {old}")
    finally:
        query.stop()


def test_a_log_truncated_by_an_unclean_leader_election_is_not_read_again(
    spark: Any, kafka_estate: helpers.EstateFactory, tmp_path: Path
) -> None:
    # Two replicas of three brokers, unclean leader election allowed: the follower is stopped,
    # b0..b2 are written to the leader alone and read, the leader is stopped, the follower
    # comes back and is elected without them: the log ends at 5 again, under the same topic id.
    config = {"unclean.leader.election.enable": "true", "min.insync.replicas": "1"}
    setup = kafka_estate("east", brokers=3, partitions=1, replication_factor=2, config=config)
    east = setup["east"]
    assert isinstance(east, ApacheKafkaCluster)
    admin = AdminClient(east.client_properties())

    def replicas() -> tuple[int, list[int]]:
        # Metadata from any broker (librdkafka sends describe_topics to a controller it may
        # still take a stopped broker for)
        metadata = admin.list_topics("orders", timeout=60).topics["orders"].partitions[0]
        return metadata.leader, list(metadata.replicas)

    def elected() -> int:
        # No answer while no broker is up; a leader of -1 while the controller quorum is not back
        try:
            return replicas()[0]
        except KafkaException:
            return -1

    leader, both = replicas()
    follower = next(r for r in both if r != leader)
    topic_id = _topic_id(east, "orders")
    first = helpers.produce(east, "orders", helpers.numbered("a", 5))
    failing = _stream(spark, setup.options(), tmp_path)
    queries.wait_parquet(spark, tmp_path / "out", 5)
    east.stop_broker(follower)
    first += helpers.produce(east, "orders", helpers.numbered("b", 3))  # on the leader only
    queries.wait_parquet(spark, tmp_path / "out", 8)
    failing.processAllAvailable()
    # An admin client that knew the old leader: librdkafka's answered -1001 after its whole
    # timeout, every attempt, until a new client was made for the next attempt (1 retry here)
    properties = {k: str(v) for k, v in east.client_properties().items()}
    knew = ClusterAdmin("east", properties, timeout_ms=5_000, retries=1)
    assert knew.list_offsets([("orders", 0)], PositionKind.LATEST) == {("orders", 0): 8}
    east.kill_broker(leader)  # a graceful stop would wait for a controller quorum it has not
    east.start_broker(follower)  # elected unclean: the partition had no other replica left
    helpers.wait_until(lambda: elected() == follower, what="the follower elected")
    assert east.watermarks("orders")[0][1] == 5 and _topic_id(east, "orders") == topic_id
    assert knew.list_offsets([("orders", 0)], PositionKind.LATEST) == {("orders", 0): 5}
    message = _failure(failing)
    assert (
        f"east/orders/0: the log was truncated (same topic id {topic_id}): continuing from its "
        "new end, the records left were read already (next offset to read 8, latest offset "
        "now 5)"
    ) in message
    query = _stream(spark, setup.options(failOnDataLoss="false"), tmp_path)
    try:
        helpers.wait_until(lambda: _losses(query) != [], what="the truncation reported")
        assert _losses(query)[0]["what"].startswith("the log was truncated")
        later = helpers.produce(east, "orders", helpers.numbered("d", 4))
        queries.wait_parquet(spark, tmp_path / "out", 12)
        query.processAllAvailable()
        # a0..a4 and b0..b2 once (b0..b2 were read before they were lost), d0..d3 once
        assert sorted(queries.parquet_values(spark, tmp_path / "out")) == sorted(first + later)
    finally:
        query.stop()
