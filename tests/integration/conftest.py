"""Fixtures of the integration tests: clusters with their metadata file, metadata servers."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from tests.integration.helpers import Estate, EstateFactory, local_kafka_problem, produce
from tests.integration.metadata_server import READ_TOKEN, WRITE_TOKEN, MetadataServer, token_file

from pyspark_dynamic_kafka.kafka.pool import consumer_pool
from pyspark_dynamic_kafka.testing.kafka_jars import tooling_problem


@pytest.fixture
def estate(kafka_clusters: Any, tmp_path: Path) -> EstateFactory:
    """Start clusters, give each a topic ``orders`` and map stream ``orders`` onto it.

    ``estate("east", "west", partitions=3)`` maps the stream to both clusters;
    ``listed=["east"]`` to east only; ``partitions=0`` creates no topic and maps nothing. The
    metadata file is ``tmp_path / "streams.yaml"``.
    """

    return _estate_factory(kafka_clusters, tmp_path / "streams.yaml")


def _estate_factory(start: Callable[..., dict[str, Any]], meta: Path) -> EstateFactory:
    """The ``estate`` fixture's factory over clusters started by ``start(*names)``; ``topic``
    keywords (``replication_factor``, ``config``) go to the creation of ``orders``."""

    def make(
        *names: str, partitions: int = 1, listed: Sequence[str] | None = None, **topic: Any
    ) -> Estate:
        made = Estate(start(*names), meta)
        if partitions:
            for cluster in made.clusters.values():
                cluster.create_topic("orders", partitions=partitions, **topic)
            made.route(*(names if listed is None else listed))
        return made

    return make


@pytest.fixture
def metadata_server(tmp_path: Path) -> Iterator[Callable[..., MetadataServer]]:
    """Start ``dynamic-kafka serve`` subprocesses: ``metadata_server(path, token_file=None,
    read_token_file=None)``; all stop after the test."""
    servers: list[MetadataServer] = []

    def start(
        metadata: Path, token_file: Path | None = None, read_token_file: Path | None = None
    ) -> MetadataServer:
        log = tmp_path / f"server{len(servers)}.log"
        server = MetadataServer(metadata, log, token_file, read_token_file)
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def billing(estate: EstateFactory) -> dict[str, Any]:
    """east: orders (p0: 7 records, p1: 3); west: orders (1 partition, 2), payments (4).

    Group ``billing`` committed orders/0 at 4 on east and orders/0 at 2 on west. Returns the
    metadata file (``meta``) and the clusters (``east``, ``west``).
    """
    setup = estate("east", "west", partitions=0)
    east, west = setup["east"], setup["west"]
    east.create_topic("orders", partitions=2)
    west.create_topic("orders", partitions=1)
    west.create_topic("payments", partitions=1)
    produce(east, "orders", [f"e{i}" for i in range(7)], key=False)
    produce(east, "orders", [f"f{i}" for i in range(3)], first=1, key=False)
    produce(west, "orders", [f"w{i}" for i in range(2)], key=False)
    produce(west, "payments", [f"p{i}" for i in range(4)], key=False)
    for cluster, offset in ((east, 4), (west, 2)):
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "billing"})
        consumer.commit(offsets=[TopicPartition("orders", 0, offset)], asynchronous=False)
        consumer.close()
    setup.write(
        {
            "orders": [("east", ["orders"]), ("west", ["orders"])],
            "payments": [("west", ["payments"])],
        }
    )
    return {"meta": setup.meta, "east": east, "west": west}


@pytest.fixture
def cli_server(
    tmp_path: Path, billing: dict[str, Any], metadata_server: Callable[..., MetadataServer]
) -> MetadataServer:
    """The reference server on ``billing``'s metadata, with write token ``WRITE_TOKEN`` (file
    ``tmp_path / "token"``) and read token ``READ_TOKEN`` (``tmp_path / "read-token"``)."""
    write = token_file(tmp_path / "token", WRITE_TOKEN)
    read = token_file(tmp_path / "read-token", READ_TOKEN)
    return metadata_server(billing["meta"], write, read)


@pytest.fixture
def empty_consumer_pool(kafka_clusters: Any) -> Iterator[None]:
    """Pooled consumers of a test's clusters do not outlive the test: they close before the
    clusters stop (this fixture depends on ``kafka_clusters``, so it is torn down first; an
    external cluster's topics are deleted at that stop, under a pooled consumer's feet
    otherwise, which crashed librdkafka now and then)."""
    yield
    consumer_pool().close_all()


# -- Apache Kafka clusters of the run's own, with several brokers (broker faults, racks) ----------


@pytest.fixture
def kafka_estate(kafka_clusters: Any, tmp_path: Path) -> EstateFactory:
    """The ``estate`` fixture on Apache Kafka clusters this run starts, with ``brokers`` and
    ``racks`` per cluster: ``kafka_estate("east", brokers=3, partitions=3, replication_factor=3)``.

    Skipped, with the reason, when the suite runs on Tansu or on existing brokers, or when java
    or mvn is missing.
    """
    problem = local_kafka_problem() or tooling_problem()
    if problem is not None:
        pytest.skip(f"needs Apache Kafka brokers of its own: {problem}")

    def make(
        *names: str, brokers: int = 1, racks: list[str] | None = None, **layout: Any
    ) -> Estate:
        def start(*names: str) -> dict[str, Any]:
            return kafka_clusters(*names, brokers_per_cluster=brokers, racks=racks)  # type: ignore[no-any-return]

        return _estate_factory(start, tmp_path / "streams.yaml")(*names, **layout)

    return make
