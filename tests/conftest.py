"""Shared fixtures: a real local SparkSession and real Kafka-protocol clusters on free ports.

Clusters are started per test so every test sees empty clusters: Apache Kafka clusters (the
testing kit's default; ``make test`` sets ``DYNAMIC_KAFKA_TEST_BROKER=kafka``), local Tansu
brokers (one process per cluster) with ``DYNAMIC_KAFKA_TEST_BROKER=tansu``, or the brokers named
by ``DYNAMIC_KAFKA_TEST_BROKERS`` when it is set.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from tests import query_start
from tests.spares import ClusterSpares

from pyspark_dynamic_kafka.testing import (
    BROKER_ENV_VAR,
    DEFAULT_BROKER,
    ENV_VAR,
    BaseKafkaCluster,
    local_spark_session,
    open_clusters,
)

ROOT = Path(__file__).resolve().parents[1]
_log = logging.getLogger(__name__)

# Property-based tests (tests/unit/test_fuzz_*.py): 300 cases per property, the same ones on
# every run (derandomized, no example database), so a CI failure reproduces locally as it is.
# HYPOTHESIS_PROFILE=fuzz-deep (make fuzz) explores further: more cases, new ones on every run.
_FUZZ_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
settings.register_profile(
    "fuzz",
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=_FUZZ_HEALTH,
)
settings.register_profile(
    "fuzz-deep",
    max_examples=20000,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=_FUZZ_HEALTH,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fuzz"))

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
# Python workers import the tests' helper modules (e.g. a metadata service of the tests' own).
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
)
# A query whose Python source worker connected back too late is started again (see the module).
query_start.install()


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local[2] SparkSession for the whole run, bound to loopback."""
    session = local_spark_session(
        "pyspark-dynamic-kafka-tests", **{"spark.sql.streaming.stopTimeout": "300s"}
    )
    session.sparkContext.setLogLevel("WARN")
    try:
        yield session
    finally:
        session.stop()


ClusterFactory = Callable[..., dict[str, BaseKafkaCluster]]


@pytest.fixture(scope="session")
def cluster_spares() -> Iterator[ClusterSpares | None]:
    """Default Apache Kafka clusters started ahead of the tests (see :mod:`tests.spares`);
    ``None`` on other broker kinds (a Tansu broker starts in a fraction of a second and takes
    its cluster id from its name) and on the existing brokers of ``DYNAMIC_KAFKA_TEST_BROKERS``."""
    kind = os.environ.get(BROKER_ENV_VAR, "").strip() or DEFAULT_BROKER
    if kind != "kafka" or os.environ.get(ENV_VAR, "").strip():
        yield None
        return
    spares = ClusterSpares(kind)
    try:
        yield spares
    finally:
        spares.close()


@pytest.fixture
def kafka_clusters(
    request: pytest.FixtureRequest, cluster_spares: ClusterSpares | None
) -> Iterator[ClusterFactory]:
    """Start clusters by name: ``kafka_clusters("east", "west")``; all stop after the test.

    Keyword arguments go to :func:`~pyspark_dynamic_kafka.testing.start_clusters`
    (``brokers_per_cluster``, ``racks``); external clusters ignore them. Without keywords the
    clusters are :mod:`tests.spares`' (fresh, started ahead of the test).

    The broker kind is ``DYNAMIC_KAFKA_TEST_BROKER``'s (``kafka`` unless set). After a failed
    test the end of every broker's log is logged (shown in pytest's report).
    """
    failed_before = request.session.testsfailed
    opened: list[BaseKafkaCluster] = []
    with contextlib.ExitStack() as stack:

        def start(*names: str, **options: Any) -> dict[str, BaseKafkaCluster]:
            if cluster_spares is None or options:
                started = open_clusters(list(names), **options)
            else:
                started = cluster_spares.clusters(list(names))
            clusters = stack.enter_context(started)
            opened.extend(clusters.values())
            return clusters

        yield start
        if request.session.testsfailed > failed_before:
            for cluster in opened:
                for broker, tail in cluster.log_tails().items():
                    _log.error("cluster %s, %s, log tail:\n%s", cluster.name, broker, tail)
