"""Fixtures of the integration tests: clusters with their metadata file, metadata servers, a
standalone Spark cluster and a Spark Connect server."""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from tests.engine_roles import EXACTLY_ONCE_PRODUCERS, PRODUCERS, READERS
from tests.integration.helpers import (
    READER_ENV_VAR,
    Estate,
    EstateFactory,
    local_kafka_problem,
    produce,
)
from tests.integration.metadata_server import READ_TOKEN, WRITE_TOKEN, MetadataServer, token_file
from tests.integration.worker_python import make_worker_python

from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.kafka.pool import consumer_pool, producer_pool
from pyspark_dynamic_kafka.testing import (
    SparkConnectServer,
    SparkStandalone,
    start_spark_connect,
    start_spark_standalone,
)
from pyspark_dynamic_kafka.testing.kafka_jars import tooling_problem

_log = logging.getLogger(__name__)


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


@pytest.fixture(autouse=True)
def empty_producer_pool() -> Iterator[None]:
    """The sink's pooled producers in this process (tasks run here, without Spark) do not outlive
    the test that made them: closed after it, not after a minute idle, reconnecting to a stopped
    cluster meanwhile."""
    yield
    producer_pool().close_all()


# -- the two readers of the executor read path ---------------------------------------------------
#
# Where the matrix runs: the executor-level read-path tests (test_read.py, without Spark, and
# test_native_security.py over TLS and SASL) take the ``reader`` fixture and run once per reader:
# they hold every semantic of a read (exact ranges, keys, headers, timestamps, markers, aborted
# records, compaction gaps, data loss, a deleted topic, the "stuck" message, the byte bound) and
# cost seconds each (the matrix adds about a minute to make test on a loaded machine). Also on
# both readers: test_rack_fetching.py (follower fetching, measured with librdkafka's statistics)
# and test_cluster_outage.py (a whole cluster down under a Spark query). The other Spark
# tests run the option's default, reader=auto, which is the compiled core wherever it is
# installed (make setup installs it): running each of them twice would add ~20 minutes to make
# test for what the executor tests already show. DYNAMIC_KAFKA_TEST_READER=python (or native)
# runs the whole suite on one reader: the executor tests on that one only, and every Spark query
# built from helpers.source_options() with option reader=<it>.


@pytest.fixture(params=READERS)
def reader(request: pytest.FixtureRequest) -> str:
    """The reader of an executor-level read-path test: ``"python"``, then ``"native"`` (the
    compiled core; skipped, with the reason, when it is not installed or when
    ``DYNAMIC_KAFKA_TEST_READER`` names the other one)."""
    name: str = request.param
    only = os.environ.get(READER_ENV_VAR, "").strip()
    if only and only not in ("auto", name):
        pytest.skip(f"{READER_ENV_VAR}={only}")
    if name == "native" and core() is None:
        pytest.skip("the compiled core is not installed (make setup NATIVE=0)")
    return name


@pytest.fixture(params=EXACTLY_ONCE_PRODUCERS)
def transact(request: pytest.FixtureRequest) -> Any:
    """One sink task's exactlyOnce write
    (:func:`~pyspark_dynamic_kafka.sink.executor.transaction.produce_transaction`) with each
    producer (the task planned on its engine): confluent-kafka's, then the compiled core's
    librdkafka producer and its direct produce path (skipped when it is not installed)."""
    from pyspark_dynamic_kafka.sink.executor.transaction import produce_transaction

    if request.param in ("native", "direct") and core() is None:
        pytest.skip("the compiled core is not installed (make setup NATIVE=0)")
    engine = PRODUCERS[request.param]

    def transact(task: Any, *args: Any, **kwargs: Any) -> Any:
        return produce_transaction(dataclasses.replace(task, engine=engine), *args, **kwargs)

    return transact


# -- Apache Kafka clusters of the run's own, with several brokers (broker faults, racks) ----------


@pytest.fixture
def kafka_estate(kafka_clusters: Any, tmp_path: Path) -> EstateFactory:
    """The ``estate`` fixture on Apache Kafka clusters this run starts, with ``brokers`` and
    ``racks`` per cluster: ``kafka_estate("east", brokers=3, partitions=3, replication_factor=3)``.

    Skipped, with the reason, when the suite runs on Tansu or on existing brokers, or when java
    is missing.
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


# -- Spark where users run it: a standalone cluster, a Spark Connect server (test_deploy.py) ----


@pytest.fixture(scope="session")
def worker_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``python`` of the Spark workers' own environment, which has the package (see
    worker_python.py)."""
    return make_worker_python(tmp_path_factory.mktemp("worker-python") / "venv")


@pytest.fixture(scope="module")
def spark_standalone(
    request: pytest.FixtureRequest, worker_python: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SparkStandalone]:
    """A standalone Spark cluster, a master and two workers (2 cores each), whose executors run
    ``worker_python``; one per test module. Logs the processes' log tails after a failure."""
    yield from _standalone(
        request,
        env={"PYSPARK_PYTHON": str(worker_python)},
        log_dir=tmp_path_factory.mktemp("standalone"),
    )


@pytest.fixture(scope="module")
def two_host_standalone(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SparkStandalone]:
    """A standalone Spark cluster whose two workers (1 core each) are two hosts, 127.0.0.1 and
    127.0.0.2: a speculative copy of a task runs only on a host without an attempt of it
    (test_sink_speculation.py). Executors run this test venv's Python."""
    yield from _standalone(
        request,
        cores=1,
        memory="1g",
        hosts=("127.0.0.1", "127.0.0.2"),
        env={"PYSPARK_PYTHON": sys.executable},
        log_dir=tmp_path_factory.mktemp("two-hosts"),
    )


def _standalone(request: pytest.FixtureRequest, **options: Any) -> Iterator[SparkStandalone]:
    """A two-worker standalone cluster (:func:`start_spark_standalone` with ``options``) for a
    module; logs the processes' log tails after a failure."""
    failed_before = request.session.testsfailed
    with start_spark_standalone(workers=2, **options) as cluster:
        yield cluster
        if request.session.testsfailed > failed_before:
            for process in [cluster.master] + [w.process for w in cluster.workers]:
                _log.error("%s, log tail:\n%s", process.name, process.log_tail())


@pytest.fixture(scope="module")
def connect_server(
    request: pytest.FixtureRequest,
    spark_standalone: SparkStandalone,
    worker_python: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[SparkConnectServer]:
    """A Spark Connect server whose driver runs on ``spark_standalone`` with one 1-core
    executor per worker (half the cluster: a ``spark-submit`` application gets the rest), its
    own and its executors' Python being ``worker_python``."""
    failed_before = request.session.testsfailed
    conf = {
        "spark.cores.max": "2",
        "spark.executor.cores": "1",
        "spark.executor.memory": "768m",
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.streaming.stopTimeout": "300s",
    }
    with start_spark_connect(
        spark_standalone.master_url,
        python=str(worker_python),
        conf=conf,
        log_dir=tmp_path_factory.mktemp("connect"),
    ) as server:
        yield server
        if request.session.testsfailed > failed_before:
            _log.error("connect server, log tail:\n%s", server.process.log_tail())


@pytest.fixture(scope="module")
def connect_spark(connect_server: SparkConnectServer) -> Iterator[Any]:
    """A remote PySpark session (Spark Connect client) of ``connect_server``.

    Creating it marks this process as a Connect client (``SPARK_CONNECT_MODE_ENABLED``), which
    would route the classic ``spark`` fixture's API to Connect in later tests: the mark is
    removed when the module is done.
    """
    from pyspark.sql import SparkSession

    marked = "SPARK_CONNECT_MODE_ENABLED" in os.environ
    session = SparkSession.builder.remote(connect_server.url).create()
    try:
        yield session
    finally:
        session.stop()
        if not marked:
            os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
