"""Streaming queries whose metadata comes from the reference server (a subprocess).

Real brokers, a real SparkSession, the ``dynamic-kafka`` command as a subprocess. Every test
asserts exact record sets: each produced record read exactly once, nothing else.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.integration.helpers import Estate, EstateFactory, numbered, produce, wait_until
from tests.integration.metadata_server import MetadataServer, run_cli, token_file
from tests.integration.queries import memory_query

TOKEN = "integration-write-token-5f2a9c"

ServerFactory = Callable[..., MetadataServer]


def _served(
    estate: EstateFactory, metadata_server: ServerFactory, *names: str, partitions: int = 1
) -> tuple[Estate, MetadataServer, Path]:
    """Clusters with stream ``orders`` on east, served by a server with a write token."""
    setup = estate(*names, partitions=partitions, listed=["east"])
    token = token_file(setup.meta.with_name("token"), TOKEN + "\n")
    return setup, metadata_server(setup.meta, token), token


def _query(spark: Any, server: MetadataServer, **extra: str) -> Any:
    options = {
        "metadataService": "http",
        "metadataService.url": server.url,
        "metadataService.token": TOKEN,
        "metadataService.timeoutMs": "3000",
        "streamIds": "orders",
        "startingOffsets": "earliest",
        "metadataDiscoveryIntervalMs": "0",
        "kafkaConsumer.cacheTimeoutMs": "2000",
        **extra,
    }
    return memory_query(spark, options, "http")


def _requests(log: str, path: str, status: int) -> int:
    pattern = re.compile(rf'"GET {re.escape(path)} HTTP/1\.1" {status} ')
    return len(pattern.findall(log))


def _move(server: MetadataServer, *token: str) -> Any:
    move = ["move", "orders", "--from", "east", "--to", "west", "--metadata", server.url]
    return run_cli([*move, *token])


@contextlib.contextmanager
def _reading(
    spark: Any,
    estate: EstateFactory,
    metadata_server: ServerFactory,
    partitions: int,
    count: int,
    **extra: str,
) -> Iterator[tuple[Estate, MetadataServer, Path, Any, list[str]]]:
    """A query of a served stream on east that read ``count`` records a0, a1, ..."""
    setup, server, token = _served(estate, metadata_server, "east", "west", partitions=partitions)
    expected = produce(setup["east"], "orders", numbered("a", count), partitions)
    with _query(spark, server, **extra) as query:
        query.expect(expected)
        yield setup, server, token, query, expected


def test_query_follows_a_move_made_through_the_server(
    spark: Any, estate: EstateFactory, metadata_server: ServerFactory
) -> None:
    with _reading(spark, estate, metadata_server, 3, 20) as (setup, server, token, query, expected):
        east, west = setup["east"], setup["west"]
        # Unchanged metadata: the query's discoveries are answered 304 Not Modified.
        wait_until(
            lambda: _requests(server.log_text(), "/v1/streams?id=orders", 304) >= 3,
            what="304 answers to the query's discoveries",
        )
        # Producers switch to west; the stream still maps to east only, so b* wait there.
        expected += produce(west, "orders", numbered("b", 20), 3)

        refused = _move(server)
        assert refused.returncode == 1
        assert "HTTP 401" in refused.stderr and "--token-file" in refused.stderr
        assert "cluster: east" in setup.meta.read_text()

        moved = _move(server, "--token-file", str(token))
        assert moved.returncode == 0, moved.stderr
        assert "orders: west [orders]" in moved.stdout

        query.expect(expected)
        wait_until(
            lambda: set(query.offsets().get("clusters", {})) == {"west"},
            what="east to leave the offset",
        )
        produce(east, "orders", numbered("ignored", 5), 3)
        expected += produce(west, "orders", numbered("d", 20), 3)
        query.expect(expected)
        cluster_of = {value: cluster for cluster, _, _, _, value in query.rows()}
        assert all(c == ("east" if v[0] == "a" else "west") for v, c in cluster_of.items())
    log = server.log_text()
    assert 'PUT /v1/streams/orders HTTP/1.1" 401' in log
    assert 'PUT /v1/streams/orders HTTP/1.1" 200' in log
    assert "Stream 'orders' replaced: west: orders." in log
    for text in (log, refused.stdout, refused.stderr, moved.stdout, moved.stderr):
        assert TOKEN not in text


def test_server_restart_mid_query_is_ridden_out(
    spark: Any, estate: EstateFactory, metadata_server: ServerFactory
) -> None:
    extra = {"metadataDiscoveryIntervalMs": "300", "metadataDiscoveryFailureThreshold": "1000"}
    with _reading(spark, estate, metadata_server, 2, 10, **extra) as reading:
        setup, server, token, query, expected = reading
        east, west = setup["east"], setup["west"]
        server.stop()
        # While the server is down the query keeps reading with the last good metadata.
        expected += produce(east, "orders", numbered("b", 10), 2)
        query.expect(expected)
        assert query.query.isActive and query.query.exception() is None

        server.start()
        # Back up: the next change is followed (the query talks to the server again).
        moved = _move(server, "--token-file", str(token))
        assert moved.returncode == 0, moved.stderr
        expected += produce(west, "orders", numbered("c", 10), 2)
        query.expect(expected)
        assert query.query.isActive and query.query.exception() is None
    after_restart = server.log_text().split("Started server process")[2]
    assert _requests(after_restart, "/v1/streams?id=orders", 200) >= 1


def test_server_down_longer_than_the_threshold_fails_the_query_clearly(
    spark: Any, estate: EstateFactory, metadata_server: ServerFactory
) -> None:
    setup = estate("east")
    server = metadata_server(setup.meta)
    expected = produce(setup["east"], "orders", numbered("a", 5))
    with _query(spark, server, metadataDiscoveryFailureThreshold="2") as query:
        query.expect(expected)
        server.stop()
        message = query.failure()
        assert "metadataDiscoveryFailureThreshold=2" in message
        assert f"{server.url}/v1/streams?id=orders" in message
        assert "could not get an answer" in message
        assert TOKEN not in message
