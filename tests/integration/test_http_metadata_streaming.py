"""Streaming queries whose metadata comes from the reference server (a subprocess).

Real brokers, a real SparkSession, the ``dynamic-kafka`` command as a subprocess. Every test
asserts exact record sets: each produced record read exactly once, nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.integration.helpers import (
    latest_offset_json,
    produce,
    rows,
    start_memory_query,
    wait_until,
    wait_values,
    write_metadata,
)
from tests.integration.metadata_server import MetadataServer, run_cli

TOKEN = "integration-write-token-5f2a9c"


@pytest.fixture
def metadata_server(tmp_path: Path) -> Iterator[Callable[..., MetadataServer]]:
    servers: list[MetadataServer] = []

    def start(metadata: Path, token_file: Path | None = None) -> MetadataServer:
        server = MetadataServer(metadata, tmp_path / f"server{len(servers)}.log", token_file)
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()


def _token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o600)
    return path


def _start_query(spark: Any, server: MetadataServer, **extra: str) -> tuple[Any, str]:
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
    return start_memory_query(spark, options, "http")


def _requests(log: str, path: str, status: int) -> int:
    pattern = re.compile(rf'"GET {re.escape(path)} HTTP/1\.1" {status} ')
    return len(pattern.findall(log))


def test_query_follows_a_move_made_through_the_server(
    spark: Any,
    kafka_clusters: Any,
    tmp_path: Path,
    metadata_server: Callable[..., MetadataServer],
) -> None:
    clusters = kafka_clusters("east", "west")
    east, west = clusters["east"].bootstrap_servers, clusters["west"].bootstrap_servers
    for c in clusters.values():
        c.create_topic("orders", partitions=3)
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"orders": [("east", ["orders"])]})
    token = _token_file(tmp_path)
    server = metadata_server(meta, token)
    produce(east, "orders", [f"a{i}" for i in range(20)], 3)
    query, table = _start_query(spark, server)
    try:
        expected = [f"a{i}" for i in range(20)]
        wait_values(spark, query, table, expected)
        # Unchanged metadata: the query's discoveries are answered 304 Not Modified.
        wait_until(
            lambda: _requests(server.log_text(), "/v1/streams?id=orders", 304) >= 3,
            what="304 answers to the query's discoveries",
        )
        # Producers switch to west; the stream still maps to east only, so b* wait there.
        produce(west, "orders", [f"b{i}" for i in range(20)], 3)

        move = ["move", "orders", "--from", "east", "--to", "west", "--metadata", server.url]
        refused = run_cli(move)
        assert refused.returncode == 1
        assert "HTTP 401" in refused.stderr and "--token-file" in refused.stderr
        assert "cluster: east" in meta.read_text()

        moved = run_cli([*move, "--token-file", str(token)])
        assert moved.returncode == 0, moved.stderr
        assert "orders: west [orders]" in moved.stdout

        expected += [f"b{i}" for i in range(20)]
        wait_values(spark, query, table, expected)
        wait_until(
            lambda: set(latest_offset_json(query).get("clusters", {})) == {"west"},
            what="east to leave the offset",
        )
        produce(east, "orders", [f"ignored{i}" for i in range(5)], 3)
        produce(west, "orders", [f"d{i}" for i in range(20)], 3)
        expected += [f"d{i}" for i in range(20)]
        wait_values(spark, query, table, expected)
        cluster_of = {value: cluster for cluster, _, _, _, value in rows(spark, table)}
        assert all(c == ("east" if v[0] == "a" else "west") for v, c in cluster_of.items())
    finally:
        query.stop()
    log = server.log_text()
    assert 'PUT /v1/streams/orders HTTP/1.1" 401' in log
    assert 'PUT /v1/streams/orders HTTP/1.1" 200' in log
    assert "Stream 'orders' replaced: west: orders." in log
    for text in (log, refused.stdout, refused.stderr, moved.stdout, moved.stderr):
        assert TOKEN not in text


def test_server_restart_mid_query_is_ridden_out(
    spark: Any,
    kafka_clusters: Any,
    tmp_path: Path,
    metadata_server: Callable[..., MetadataServer],
) -> None:
    clusters = kafka_clusters("east", "west")
    east, west = clusters["east"].bootstrap_servers, clusters["west"].bootstrap_servers
    for c in clusters.values():
        c.create_topic("orders", partitions=2)
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"orders": [("east", ["orders"])]})
    token = _token_file(tmp_path)
    server = metadata_server(meta, token)
    produce(east, "orders", [f"a{i}" for i in range(10)], 2)
    query, table = _start_query(
        spark,
        server,
        metadataDiscoveryIntervalMs="300",
        metadataDiscoveryFailureThreshold="1000",
    )
    try:
        expected = [f"a{i}" for i in range(10)]
        wait_values(spark, query, table, expected)

        server.stop()
        # While the server is down the query keeps reading with the last good metadata.
        produce(east, "orders", [f"b{i}" for i in range(10)], 2)
        expected += [f"b{i}" for i in range(10)]
        wait_values(spark, query, table, expected)
        assert query.isActive and query.exception() is None

        server.start()
        # Back up: the next change is followed (the query talks to the server again).
        move = ["move", "orders", "--from", "east", "--to", "west", "--metadata", server.url]
        moved = run_cli([*move, "--token-file", str(token)])
        assert moved.returncode == 0, moved.stderr
        produce(west, "orders", [f"c{i}" for i in range(10)], 2)
        expected += [f"c{i}" for i in range(10)]
        wait_values(spark, query, table, expected)
        assert query.isActive and query.exception() is None
    finally:
        query.stop()
    after_restart = server.log_text().split("Started server process")[2]
    assert _requests(after_restart, "/v1/streams?id=orders", 200) >= 1


def test_server_down_longer_than_the_threshold_fails_the_query_clearly(
    spark: Any,
    kafka_clusters: Any,
    tmp_path: Path,
    metadata_server: Callable[..., MetadataServer],
) -> None:
    clusters = kafka_clusters("east")
    east = clusters["east"].bootstrap_servers
    clusters["east"].create_topic("orders", partitions=1)
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"orders": [("east", ["orders"])]})
    server = metadata_server(meta)
    produce(east, "orders", [f"a{i}" for i in range(5)])
    query, table = _start_query(spark, server, metadataDiscoveryFailureThreshold="2")
    try:
        wait_values(spark, query, table, [f"a{i}" for i in range(5)])
        server.stop()
        wait_until(lambda: query.exception() is not None, timeout=120, what="the query to fail")
        message = str(query.exception())
        assert "metadataDiscoveryFailureThreshold=2" in message
        assert f"{server.url}/v1/streams?id=orders" in message
        assert "could not get an answer" in message
        assert TOKEN not in message
    finally:
        query.stop()
