"""A metadata service that fails again and again under a running query.

The reference HTTP server killed (SIGKILL) and restarted three times, the metadata file left
half-written three times: each time the query reads on with its last good metadata (every
micro-batch meanwhile counts a failed discovery, which its progress shows), then follows the
metadata changed meanwhile once the service answers again; the output is exact. Failures
beyond ``metadataDiscoveryFailureThreshold`` fail the query with an error naming the service
and the threshold. The tests share two clusters (of the suite's broker kind), each test with a
topic of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.integration import helpers, queries
from tests.integration.metadata_server import MetadataServer

from pyspark_dynamic_kafka.monitoring.progress import offset_document
from pyspark_dynamic_kafka.testing import BaseKafkaCluster, open_clusters

TOLERANT = "1000"
"""``metadataDiscoveryFailureThreshold`` of the flapping queries: never reached here."""

ROUTES: Sequence[tuple[str, ...]] = (("east", "west"), ("west",), ("west",))
"""The clusters of stream ``orders`` after each outage (a cluster removed is not re-added: it
would start again from ``discoveryStartingOffsets``)."""


def _discovery_failures(query: queries.MemoryQuery) -> int | None:
    """Consecutive discovery failures at the query's last progress report, if any."""
    progress = query.query.lastProgress
    if not progress:
        return None
    latest = progress["sources"][0]["latestOffset"]
    latest = offset_document(latest)
    discovery = (latest or {}).get("dynamicKafka", {}).get("discovery", {})
    failures = discovery.get("consecutiveFailures")
    return None if failures is None else int(failures)


@pytest.fixture(scope="module")
def clusters() -> Iterator[dict[str, BaseKafkaCluster]]:
    """east and west for the whole module."""
    with open_clusters(["east", "west"]) as started:
        yield started


@dataclass
class _Stream:
    """Stream ``orders`` over topic ``topic`` of some of the clusters, in metadata file ``meta``."""

    clusters: dict[str, BaseKafkaCluster]
    topic: str
    meta: Path

    def route(self, *names: str) -> None:
        """Map the stream to the topic on the clusters ``names`` (atomic rewrite)."""
        helpers.write_metadata(
            self.meta, self.clusters, {"orders": [(n, [self.topic]) for n in names]}
        )

    def produce(self, names: Sequence[str], prefix: str) -> list[str]:
        """3 records on each of the clusters ``names``, ``<prefix><cluster>-<i>``."""
        return [
            value
            for name in names
            for value in helpers.produce(
                self.clusters[name], self.topic, helpers.numbered(f"{prefix}{name}-", 3)
            )
        ]


def _stream(clusters: dict[str, BaseKafkaCluster], tmp_path: Path, topic: str) -> _Stream:
    """The topic on both clusters, the stream on east."""
    for cluster in clusters.values():
        cluster.create_topic(topic)
    stream = _Stream(clusters, topic, tmp_path / "streams.yaml")
    stream.route("east")
    return stream


def _flap(
    query: queries.MemoryQuery,
    stream: _Stream,
    expected: list[str],
    fail: Callable[[], None],
    mend: Callable[[Sequence[str]], None],
) -> list[str]:
    """Three outages of the metadata service: ``fail()`` starts one, ``mend(route)`` ends it with
    the stream on the clusters of ``route``. Returns every value expected."""
    route: Sequence[str] = ("east",)
    for cycle, after in enumerate(ROUTES):
        fail()
        # Down: the query reads on with its last good metadata, counting failed discoveries.
        expected += stream.produce(route, f"down{cycle}-")
        query.expect(expected)
        helpers.wait_until(
            lambda: (_discovery_failures(query) or 0) >= 1, what="a failed discovery"
        )
        mend(after)
        route = after
        # Back: the metadata changed meanwhile is followed.
        expected += stream.produce(route, f"up{cycle}-")
        query.expect(expected)
        helpers.wait_until(lambda: _discovery_failures(query) == 0, what="a successful discovery")
    assert query.query.isActive and query.query.exception() is None
    return expected


def test_http_metadata_server_killed_and_restarted_again_and_again(
    spark: Any,
    clusters: dict[str, BaseKafkaCluster],
    tmp_path: Path,
    metadata_server: Callable[..., MetadataServer],
) -> None:
    stream = _stream(clusters, tmp_path, "flapping-http")
    server = metadata_server(stream.meta)
    options = {
        "metadataService": "http",
        "metadataService.url": server.url,
        "metadataService.timeoutMs": "2000",
        "streamIds": "orders",
        "startingOffsets": "earliest",
        "metadataDiscoveryIntervalMs": "0",
        "metadataDiscoveryFailureThreshold": TOLERANT,
        "kafkaConsumer.cacheTimeoutMs": "2000",
    }

    def kill() -> None:
        process, server.process = server.process, None
        assert process is not None
        process.kill()
        process.wait(helpers.DEADLINE)

    def restart(route: Sequence[str]) -> None:
        stream.route(*route)  # changed while the server was down
        server.start()

    expected = stream.produce(["east"], "a")
    with queries.memory_query(spark, options, "flap") as query:
        query.expect(expected)
        _flap(query, stream, expected, kill, restart)
    assert server.log_text().count("Started server process") == 4


def test_half_written_metadata_file_again_and_again(
    spark: Any, clusters: dict[str, BaseKafkaCluster], tmp_path: Path
) -> None:
    stream = _stream(clusters, tmp_path, "flapping-file")

    def half_write() -> None:
        good = stream.meta.read_bytes()
        stream.meta.write_bytes(good[: len(good) // 2])  # in place: a writer that died halfway

    def options(threshold: str) -> dict[str, str]:
        return helpers.source_options(
            stream.meta, streamIds="orders", metadataDiscoveryFailureThreshold=threshold
        )

    expected = stream.produce(["east"], "a")
    with queries.memory_query(spark, options(TOLERANT), "flap") as query:
        query.expect(expected)
        _flap(query, stream, expected, half_write, lambda route: stream.route(*route))

    # Beyond the threshold: a clear failure. A new query reads west (the stream's only cluster
    # now) from the earliest offsets, then its metadata file is left half-written.
    on_west = sorted(v for v in expected if "west-" in v)
    with queries.memory_query(spark, options("2"), "flap") as query:
        query.expect(on_west)
        half_write()
        message = query.failure()
        assert query.values() == on_west
    assert "Metadata discovery failed 3 times in a row (threshold " in message
    threshold = "metadataDiscoveryFailureThreshold=2); last error: Invalid metadata in "
    assert f"{threshold}{stream.meta}" in message
    assert "restart the query from its checkpoint" in message
