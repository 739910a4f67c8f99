"""Helpers shared by the integration tests: metadata files, producing, waiting, child processes
(the running queries are in :mod:`tests.integration.queries`).

Every wait polls for what it needs (rows in a table, a line from a process, a failure) and gives
up only at a generous deadline (:data:`DEADLINE`): the deadline bounds a failure, it is never
part of a passing run, so a loaded machine makes tests slower, not red.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyspark_dynamic_kafka.testing import (
    BROKER_ENV_VAR,
    DEFAULT_BROKER,
    ENV_VAR,
    ApacheKafkaCluster,
    BaseKafkaCluster,
)
from pyspark_dynamic_kafka.testing.kafka_jars import tooling_problem

DEADLINE = 300.0
"""Seconds after which a wait fails: Spark starts slowly on a loaded two-core machine."""
READER_ENV_VAR = "DYNAMIC_KAFKA_TEST_READER"
"""When set (``python``, ``native``, ``auto``), the option ``reader`` of every query built from
:func:`source_options`, and the only reader the ``reader`` fixture runs."""

Row = tuple[str, str, int, int, str]  # cluster, topic, partition, offset, value
Streams = Mapping[str, Sequence[tuple[str, Sequence[str]]]]


def wait_until(
    condition: Callable[[], bool], timeout: float = DEADLINE, what: str = "condition"
) -> None:
    """Poll ``condition`` until it holds; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.25)


def on_tansu(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the suite's clusters are embedded Tansu brokers (not Apache Kafka, not the
    existing brokers of ``DYNAMIC_KAFKA_TEST_BROKERS``, taken to be real Kafka)."""
    if environ.get(ENV_VAR, "").strip():
        return False
    return (environ.get(BROKER_ENV_VAR, "").strip() or DEFAULT_BROKER) == "tansu"


def local_kafka_problem(environ: Mapping[str, str] = os.environ) -> str | None:
    """Why the suite cannot start Apache Kafka brokers of its own (to stop, kill or give several
    brokers), or ``None`` when it can."""
    if environ.get(ENV_VAR, "").strip():
        return f"{ENV_VAR} names existing brokers, which the tests cannot stop or kill"
    kind = environ.get(BROKER_ENV_VAR, "").strip() or DEFAULT_BROKER
    if kind != "kafka":
        return f"{BROKER_ENV_VAR}={kind}: needs Apache Kafka brokers ({BROKER_ENV_VAR}=kafka)"
    return None


def skip_without_local_kafka(what: str) -> None:
    """Skip the test, with the reason, where the suite cannot start Apache Kafka brokers of its
    own (``what``: what the test needs them for)."""
    problem = local_kafka_problem() or tooling_problem()
    if problem is not None:
        pytest.skip(f"needs {what}: {problem}")


def secured_cluster(kafka_clusters: Callable[..., dict[str, Any]]) -> Any:
    """Cluster ``east`` (Apache Kafka) with its SASL_PLAINTEXT, SSL and SASL_SSL listeners."""
    skip_without_local_kafka("an Apache Kafka cluster with TLS and SASL listeners")
    return kafka_clusters("east", scram=True, tls=True)["east"]


def requires_kafka(gap: str) -> pytest.MarkDecorator:
    """Skip a test on Tansu, which lacks the Kafka behaviour it checks; ``gap`` says what
    Tansu does instead (the skip reason)."""
    return pytest.mark.skipif(
        on_tansu(),
        reason=f"needs Apache Kafka ({BROKER_ENV_VAR}=kafka or {ENV_VAR}): {gap}",
    )


# -- metadata and records ---------------------------------------------------------------------


def write_metadata(
    path: Path,
    clusters: Mapping[str, Any],
    streams: Streams,
    extra: Mapping[str, Mapping[str, str]] | None = None,
    starting: Mapping[tuple[str, str], Any] | None = None,
) -> None:
    """Write a metadata file atomically (temp + rename), as an operator's tool would.

    ``starting`` gives a stream entry's ``startingOffsets`` by (stream id, cluster id).
    """

    def entry(sid: str, cluster: str, topics: Sequence[str]) -> dict[str, Any]:
        item: dict[str, Any] = {"cluster": cluster, "topics": list(topics)}
        if starting and (sid, cluster) in starting:
            item["startingOffsets"] = starting[(sid, cluster)]
        return item

    document = {
        "clusters": {
            name: {**c.connection_properties(), **(extra or {}).get(name, {})}
            for name, c in clusters.items()
        },
        "streams": {
            sid: [entry(sid, cl, topics) for cl, topics in entries]
            for sid, entries in streams.items()
        },
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(document))
    os.replace(tmp, path)


def source_options(metadata_path: Path, **extra: str) -> dict[str, str]:
    """Options of a file-backed dynamic_kafka source with fast discovery for tests."""
    options = {
        "metadataService": "file",
        "metadataService.path": str(metadata_path),
        "startingOffsets": "earliest",
        "metadataDiscoveryIntervalMs": "0",
        "kafkaConsumer.cacheTimeoutMs": "2000",
    }
    if os.environ.get(READER_ENV_VAR, "").strip():
        options["reader"] = os.environ[READER_ENV_VAR].strip()
    options.update(extra)
    return options


@dataclass
class Estate:
    """Clusters and the metadata file that maps streams onto them (see the ``estate`` fixture)."""

    clusters: dict[str, BaseKafkaCluster]
    meta: Path

    def __getitem__(self, name: str) -> BaseKafkaCluster:
        return self.clusters[name]

    def write(
        self, streams: Streams, starting: Mapping[tuple[str, str], Any] | None = None
    ) -> None:
        """Rewrite the metadata file with ``streams``."""
        write_metadata(self.meta, self.clusters, streams, starting=starting)

    def route(self, *names: str) -> None:
        """Map stream ``orders`` to topic ``orders`` on the clusters ``names``, only."""
        self.write({"orders": [(name, ["orders"]) for name in names]})

    def options(self, **extra: str) -> dict[str, str]:
        """:func:`source_options` of this metadata file, reading stream ``orders`` by default."""
        return source_options(self.meta, **{"streamIds": "orders", **extra})


EstateFactory = Callable[..., Estate]
"""The ``estate`` fixture: ``estate("east", "west", partitions=2, listed=None)``."""


def plaintext_servers(cluster: BaseKafkaCluster) -> str:
    """The cluster's PLAINTEXT listener, whatever listener its clients use: for helpers that
    speak neither TLS nor SASL (raw Produce requests, the Java consumer of the oracle)."""
    if isinstance(cluster, ApacheKafkaCluster):
        return cluster.listener_servers("PLAINTEXT")
    return cluster.bootstrap_servers


def numbered(prefix: str, count: int, start: int = 0) -> list[str]:
    """``[prefix0, prefix1, ...]``: values whose origin a test can tell apart."""
    return [f"{prefix}{i}" for i in range(start, start + count)]


def produce(
    cluster: BaseKafkaCluster,
    topic: str,
    values: Sequence[str],
    partitions: int = 1,
    first: int = 0,
    key: bool = True,
) -> list[str]:
    """Produce one record per value, round-robin over partitions ``first..first+partitions-1``.

    The key is the value (``key=False``: no key). Returns ``values``.
    """
    cluster.produce(
        topic,
        [
            {"key": value if key else None, "value": value, "partition": first + i % partitions}
            for i, value in enumerate(values)
        ],
    )
    return list(values)


def delete_records(cluster: BaseKafkaCluster, topic: str, before: Mapping[int, int]) -> None:
    """DeleteRecords (Apache Kafka): remove every record of ``topic`` below ``before[partition]``,
    as retention does; checks the new earliest offsets."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(cluster.client_properties())
    request = [TopicPartition(topic, p, offset) for p, offset in before.items()]
    for future in admin.delete_records(request, operation_timeout=30).values():
        future.result(timeout=60)
    lows = {p: low for p, (low, _) in cluster.watermarks(topic).items() if p in before}
    assert lows == dict(before)


def pause_for_a_timestamp() -> int:
    """A timestamp strictly between what was produced before and what is produced after.

    The brokers stamp records with their producer's clock (CreateTime), so a second or more on
    each side separates the two groups whatever the machine's load.
    """
    time.sleep(1.2)
    stamp = int(time.time() * 1000)
    time.sleep(1.2)
    return stamp


def transactions(
    cluster: BaseKafkaCluster,
    topic: str,
    batches: Sequence[tuple[Sequence[str], bool]],
    tx: str = "test-tx",
) -> None:
    """Produce each batch of values to partition 0 in a transaction, committed or aborted."""
    from confluent_kafka import Producer

    producer = Producer(
        cluster.client_properties(
            **{"transactional.id": tx, "linger.ms": 0, "batch.num.messages": 1}
        )
    )
    producer.init_transactions(30)
    for values, commit in batches:
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value=value, partition=0)
        producer.flush(30)  # abort_transaction() would purge records not sent yet
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    producer.flush(30)
    producer.close()


# -- processes --------------------------------------------------------------------------------


def wait_for_line(process: subprocess.Popen[Any], log: Path, line: str) -> None:
    """Wait until a child process writes ``line`` (a line of its own) to its ``log``.

    Fails at once, with the log's tail, when the process exits first.
    """

    def written() -> bool:
        text = log.read_text(errors="replace") if log.exists() else ""
        if line in text.splitlines():
            return True
        if process.poll() is not None:
            raise AssertionError(
                f"the process exited with code {process.returncode} before writing {line!r}; "
                f"log {log}:\n{text[-3000:]}"
            )
        return False

    wait_until(written, what=f"{line!r} in {log}")
