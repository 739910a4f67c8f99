"""Fixtures of the integration tests: clusters with their metadata file, metadata servers."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.integration.helpers import Estate, EstateFactory
from tests.integration.metadata_server import MetadataServer


@pytest.fixture
def estate(kafka_clusters: Any, tmp_path: Path) -> EstateFactory:
    """Start clusters, give each a topic ``orders`` and map stream ``orders`` onto it.

    ``estate("east", "west", partitions=3)`` maps the stream to both clusters;
    ``listed=["east"]`` to east only; ``partitions=0`` creates no topic and maps nothing. The
    metadata file is ``tmp_path / "streams.yaml"``.
    """

    def make(*names: str, partitions: int = 1, listed: Sequence[str] | None = None) -> Estate:
        made = Estate(kafka_clusters(*names), tmp_path / "streams.yaml")
        if partitions:
            for cluster in made.clusters.values():
                cluster.create_topic("orders", partitions=partitions)
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
