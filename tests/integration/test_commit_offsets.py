"""commitOffsetsToKafka: the query's position reaches its consumer group on every cluster.

Kafka's own view is read back with the admin API (``list_consumer_group_offsets``) and with
``dynamic-kafka describe --group`` (lag 0 after a drain).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from tests.integration.helpers import EstateFactory, numbered, produce, wait_until
from tests.integration.queries import memory_query

from pyspark_dynamic_kafka.cli import main
from pyspark_dynamic_kafka.source.group.admin_offsets import committed_offsets


def _group_offsets(
    setup: Any, group: str, names: tuple[str, ...] = ("east", "west")
) -> dict[str, dict[str, dict[str, int]]]:
    """What the group committed on each of the clusters ``names``, in the offset JSON's shape."""
    result: dict[str, dict[str, dict[str, int]]] = {}
    for name in names:
        cluster = setup[name]
        props = {"bootstrap.servers": cluster.bootstrap_servers}
        pairs = [("orders", p) for p in range(2)]
        committed = committed_offsets(name, props, group, pairs, 10_000)
        if committed:
            result[name] = {"orders": {str(p): o for (_, p), o in sorted(committed.items())}}
    return result


def test_group_offsets_equal_the_last_end_offsets(
    spark: Any, estate: EstateFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    setup = estate("east", "west", partitions=2)
    values = produce(setup["east"], "orders", numbered("e", 12), 2)
    values += produce(setup["west"], "orders", numbered("w", 7), 2)
    group = f"billing-{uuid.uuid4().hex[:8]}"
    options = setup.options(**{"kafka.group.id": group, "commitOffsetsToKafka": "true"})
    with memory_query(spark, options, processingTime="300 milliseconds") as query:
        query.expect(values)
        wait_until(
            lambda: _group_offsets(setup, group) == query.offsets()["clusters"],
            what="the group's offsets to equal the query's end offsets",
        )
        assert query.offsets()["clusters"] == {
            "east": {"orders": {"0": 6, "1": 6}},
            "west": {"orders": {"0": 4, "1": 3}},
        }
        capsys.readouterr()
        code = main(
            ["describe", "--metadata", str(setup.meta), "--streams", "orders", "--group", group,
             "--json"]
        )  # fmt: skip
        report = json.loads(capsys.readouterr().out)
    assert code == 0
    lags = [
        (cluster["cluster"], partition["partition"], partition["lag"])
        for stream in report["streams"]
        for cluster in stream["clusters"]
        for topic in cluster["topics"]
        for partition in topic["partitions"]
    ]
    assert sorted(lags) == [("east", 0, 0), ("east", 1, 0), ("west", 0, 0), ("west", 1, 0)]


def test_a_cluster_down_when_a_commit_is_due_does_not_stop_the_query(
    spark: Any, kafka_estate: EstateFactory
) -> None:
    setup = kafka_estate("east", "west", partitions=2)
    group = f"billing-{uuid.uuid4().hex[:8]}"
    options = setup.options(
        **{"kafka.group.id": group, "commitOffsetsToKafka": "true",
           "kafkaAdmin.requestTimeoutMs": "3000", "fetchOffset.numRetries": "0",
           # west is down for as long as the steps below take on a loaded machine: the query
           # must not give west up meanwhile (test_cluster_outage tests that timeout)
           "unreachableClusterTimeoutMs": "-1"}
    )  # fmt: skip
    values = produce(setup["east"], "orders", numbered("e", 6), 2)
    values += produce(setup["west"], "orders", numbered("w", 4), 2)
    with memory_query(spark, options, processingTime="300 milliseconds") as query:
        query.expect(values)
        wait_until(lambda: _group_offsets(setup, group) == query.offsets()["clusters"])
        setup["west"].stop_broker(0)  # west is down while the next commits are due
        values += produce(setup["east"], "orders", numbered("e", 8, start=6), 2)
        query.expect(values)  # the query goes on reading east
        east_only = {"east": query.offsets()["clusters"]["east"]}
        wait_until(
            lambda: _group_offsets(setup, group, ("east",)) == east_only,
            what="east's commits while west is down",
        )
        assert query.query.isActive and query.query.exception() is None
        setup["west"].start_broker(0)
        values += produce(setup["west"], "orders", numbered("w", 5, start=4), 2)
        query.expect(values)
        wait_until(  # west's commit was retried with a later micro-batch
            lambda: _group_offsets(setup, group) == query.offsets()["clusters"],
            what="west's commits after it came back",
        )
