"""A whole cluster down under a running query, on Apache Kafka clusters of the run's own.

While the metadata lists it, the query keeps its offsets and reads the other cluster, tries it
again every micro-batch, and fails naming it once it has failed for longer than
``unreachableClusterTimeoutMs``. Removed from the metadata first, it is no longer waited for: the
query goes on with the other cluster. Both tests share two single-broker clusters (each test has
topics of its own); the one that leaves east down runs last.

Each test runs once per reader (the ``reader`` fixture, as option ``reader``): the Python reader,
then the compiled core. With ``reader=native`` a query that cannot read natively fails at start,
and the run also checks, before the outage, that each cluster was read natively: a task worker
of this session's Spark (a child of this process) with a connection to the cluster's broker
(its pooled consumer) has the compiled core mapped, which a worker loads only to read natively.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.integration.faults import reading_with_core
from tests.integration.helpers import Estate, local_kafka_problem, numbered, produce, wait_until
from tests.integration.queries import memory_query

from pyspark_dynamic_kafka.testing import ApacheKafkaCluster, open_clusters
from pyspark_dynamic_kafka.testing.kafka_jars import tooling_problem

TIMEOUT_MS = 4000
"""``unreachableClusterTimeoutMs`` of the tests: two failed listings of ``kafkaAdmin.
requestTimeoutMs`` (2 s) each."""


@pytest.fixture(scope="module")
def clusters() -> Iterator[dict[str, ApacheKafkaCluster]]:
    """east and west, one Apache Kafka broker each, for the whole module."""
    problem = local_kafka_problem() or tooling_problem()
    if problem is not None:
        pytest.skip(f"needs Apache Kafka brokers of its own to kill: {problem}")
    with open_clusters(["east", "west"], broker="kafka") as started:
        yield started  # type: ignore[misc]


def _estate(clusters: dict[str, ApacheKafkaCluster], tmp_path: Path, topic: str) -> Estate:
    """Both clusters running, each with ``topic`` holding 5 records, stream ``orders`` on both."""
    if not clusters["east"].broker_running(0):  # left down by a test that ran before
        clusters["east"].start_broker(0)
    setup = Estate(dict(clusters), tmp_path / "streams.yaml")
    for cluster in clusters.values():
        cluster.create_topic(topic)
    setup.write({"orders": [("east", [topic]), ("west", [topic])]})
    return setup


def _options(setup: Estate, reader: str) -> dict[str, str]:
    timeouts = {
        "unreachableClusterTimeoutMs": str(TIMEOUT_MS),
        "kafkaAdmin.requestTimeoutMs": "2000",
    }
    # Pooled consumers stay connected between micro-batches (the option's default, not the
    # suite's 2 s), so that the reading worker can be seen after the records arrived.
    return setup.options(reader=reader, **timeouts, **{"kafkaConsumer.cacheTimeoutMs": "60000"})


def _check_reader(reader: str, clusters: list[ApacheKafkaCluster]) -> None:
    """With ``reader=native``: wait until each cluster is seen read by the compiled core."""
    if reader != "native":
        return
    for cluster in clusters:
        read_natively = functools.partial(reading_with_core, os.getpid(), cluster)
        wait_until(read_natively, what=f"a Python worker reading {cluster.name} natively")


@contextlib.contextmanager
def _reading_both(
    spark: Any, clusters: dict[str, ApacheKafkaCluster], tmp_path: Path, topic: str, reader: str
) -> Iterator[tuple[Estate, Any, list[Any]]]:
    """A query with ``reader`` of ``topic`` on both clusters, 5 records on each, every one read
    and each cluster seen read by that reader: (the estate, the query, the records expected)."""
    setup = _estate(clusters, tmp_path, topic)
    east, west = clusters["east"], clusters["west"]
    expected = produce(east, topic, numbered("e", 5)) + produce(west, topic, numbered("w", 5))
    with memory_query(spark, _options(setup, reader)) as query:
        query.expect(expected)
        _check_reader(reader, [east, west])
        path = "direct" if reader == "native" else "python"
        assert query.read_paths() == {"east": {path}, "west": {path}}
        yield setup, query, expected


def test_a_cluster_removed_from_the_metadata_then_down_is_not_waited_for(
    spark: Any, clusters: dict[str, ApacheKafkaCluster], tmp_path: Path, reader: str
) -> None:
    topic, east, west = f"removed-{reader}", clusters["east"], clusters["west"]
    with _reading_both(spark, clusters, tmp_path, topic, reader) as (setup, query, expected):
        setup.write({"orders": [("west", [topic])]})
        wait_until(
            lambda: set(query.offsets().get("clusters", {})) == {"west"},
            what="east to leave the offset",
        )
        east.kill_broker(0)
        killed = time.monotonic()
        expected += produce(west, topic, numbered("x", 5))
        query.expect(expected)
        # A listed cluster would have been given up by now (see the next test); east is not.
        wait_until(
            lambda: time.monotonic() - killed > 2 * TIMEOUT_MS / 1000,
            what="twice unreachableClusterTimeoutMs after east went down",
        )
        expected += produce(west, topic, numbered("y", 5))
        query.expect(expected)
        assert query.query.isActive and query.query.exception() is None


def test_a_cluster_down_while_listed_fails_the_query_naming_it(
    spark: Any, clusters: dict[str, ApacheKafkaCluster], tmp_path: Path, reader: str
) -> None:
    topic = f"listed-{reader}"
    with _reading_both(spark, clusters, tmp_path, topic, reader) as (_, query, expected):
        east, west = clusters["east"], clusters["west"]
        # Acknowledged before east goes down, so listed by the first micro-batch that cannot list
        # east: read before the query gives up, which takes another, later micro-batch.
        expected += produce(west, topic, numbered("x", 5))
        servers = east.bootstrap_servers
        east.kill_broker(0)
        message = query.failure()
        assert query.values() == sorted(expected)
    assert "Cluster 'east' could not be listed for " in message
    assert (
        f" s, longer than unreachableClusterTimeoutMs={TIMEOUT_MS} (its offsets were kept"
        in message
    )
    assert f"Last error: Cluster 'east' ({servers}): could not list topics" in message
    assert "remove the cluster from the metadata to go on without it" in message
