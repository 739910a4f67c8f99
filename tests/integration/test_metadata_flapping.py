"""A metadata service that fails again and again under a running query.

The reference HTTP server killed (SIGKILL) and restarted three times, the metadata file left
half-written three times: each time the query reads on with its last good metadata (every
micro-batch meanwhile counts a failed discovery, which its progress shows), then follows the
metadata changed meanwhile once the service answers again; the output is exact. Failures
beyond ``metadataDiscoveryFailureThreshold`` fail the query with an error naming the service
and the threshold.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from tests.integration.helpers import (
    DEADLINE,
    Estate,
    EstateFactory,
    MemoryQuery,
    memory_query,
    numbered,
    produce,
    wait_until,
)
from tests.integration.metadata_server import MetadataServer

TOLERANT = "1000"
"""``metadataDiscoveryFailureThreshold`` of the flapping queries: never reached here."""

ROUTES: Sequence[tuple[str, ...]] = (("east", "west"), ("west",), ("west",))
"""The clusters of stream ``orders`` after each outage (a cluster removed is not re-added: it
would start again from ``discoveryStartingOffsets``)."""


def _discovery_failures(query: MemoryQuery) -> int | None:
    """Consecutive discovery failures at the query's last progress report, if any."""
    progress = query.query.lastProgress
    if not progress:
        return None
    latest = progress["sources"][0]["latestOffset"]
    latest = json.loads(latest) if isinstance(latest, str) else latest
    discovery = (latest or {}).get("dynamicKafka", {}).get("discovery", {})
    failures = discovery.get("consecutiveFailures")
    return None if failures is None else int(failures)


def _produce(setup: Estate, clusters: Sequence[str], prefix: str) -> list[str]:
    return [v for c in clusters for v in produce(setup[c], "orders", numbered(f"{prefix}{c}-", 3))]


def _flap(
    query: MemoryQuery,
    setup: Estate,
    expected: list[str],
    fail: Callable[[], None],
    mend: Callable[[Sequence[str]], None],
) -> list[str]:
    """Three outages of the metadata service: ``fail()`` starts one, ``mend(route)`` ends it with
    stream ``orders`` on the clusters of ``route``. Returns every value expected."""
    route: Sequence[str] = ("east",)
    for cycle, after in enumerate(ROUTES):
        fail()
        # Down: the query reads on with its last good metadata, counting failed discoveries.
        expected += _produce(setup, route, f"down{cycle}-")
        query.expect(expected)
        wait_until(lambda: (_discovery_failures(query) or 0) >= 1, what="a failed discovery")
        mend(after)
        route = after
        # Back: the metadata changed meanwhile is followed.
        expected += _produce(setup, route, f"up{cycle}-")
        query.expect(expected)
        wait_until(lambda: _discovery_failures(query) == 0, what="a successful discovery")
    assert query.query.isActive and query.query.exception() is None
    return expected


def test_http_metadata_server_killed_and_restarted_again_and_again(
    spark: Any, estate: EstateFactory, metadata_server: Callable[..., MetadataServer]
) -> None:
    setup = estate("east", "west", listed=["east"])
    server = metadata_server(setup.meta)
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
        process.wait(DEADLINE)

    def restart(route: Sequence[str]) -> None:
        setup.route(*route)  # changed while the server was down
        server.start()

    expected = produce(setup["east"], "orders", numbered("a", 5))
    with memory_query(spark, options, "flap") as query:
        query.expect(expected)
        expected = _flap(query, setup, expected, kill, restart)
    assert server.log_text().count("Started server process") == 4


def test_half_written_metadata_file_again_and_again(spark: Any, estate: EstateFactory) -> None:
    setup = estate("east", "west", listed=["east"])

    def half_write() -> None:
        good = setup.meta.read_bytes()
        setup.meta.write_bytes(good[: len(good) // 2])  # in place: a writer that died halfway

    expected = produce(setup["east"], "orders", numbered("a", 5))
    tolerant = setup.options(metadataDiscoveryFailureThreshold=TOLERANT)
    with memory_query(spark, tolerant, "flap") as query:
        query.expect(expected)
        expected = _flap(query, setup, expected, half_write, lambda route: setup.route(*route))

    # Beyond the threshold: a clear failure. A new query reads west (the stream's only cluster
    # now) from the earliest offsets, then its metadata file is left half-written.
    on_west = sorted(v for v in expected if "west-" in v)
    with memory_query(spark, setup.options(metadataDiscoveryFailureThreshold="2"), "flap") as query:
        query.expect(on_west)
        half_write()
        message = query.failure()
        assert query.values() == on_west
    assert "Metadata discovery failed 3 times in a row (threshold " in message
    threshold = "metadataDiscoveryFailureThreshold=2); last error: Invalid metadata in "
    assert f"{threshold}{setup.meta}" in message
    assert "restart the query from its checkpoint" in message
