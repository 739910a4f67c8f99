"""Per-cluster metrics of a live migration east -> west, through the listener and a real scrape,
with the engine that reads each cluster (the compiled core's direct fetch path on these
PLAINTEXT clusters; the Python reader without the core).

The listener (``monitoring.attach``) follows the query; Prometheus exposition is scraped over
HTTP and parsed with prometheus-client's own parser; the JSON lines are the listener's file.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from tests.integration.helpers import EstateFactory, numbered, produce, wait_until
from tests.integration.queries import memory_query

from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.monitoring import attach

Samples = dict[str, dict[tuple[str, ...], float]]


def scrape(port: int) -> Samples:
    """Every sample of the exposition: name -> (cluster[, topic][, path]) -> value."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as answer:
        text = answer.read().decode()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            keys = ("cluster", "topic", "path")
            labels = tuple(sample.labels[k] for k in keys if k in sample.labels)
            samples.setdefault(sample.name, {})[labels] = sample.value
    return samples


def _settled(port: int, records: dict[str, int], query: Any) -> bool:
    """Whether the scrape shows exactly ``records`` per cluster, nothing pending, and only
    those clusters."""
    if query.exception() is not None:
        raise AssertionError(f"query failed: {query.exception()}")
    samples = scrape(port)
    total = samples.get("dynamic_kafka_records_total", {})
    pending = samples.get("dynamic_kafka_pending_records", {})
    clusters = samples.get("dynamic_kafka_clusters", {})
    return (
        total == {(c, "orders"): n for c, n in records.items()}
        and pending == {(c, "orders"): 0 for c in records}
        and list(clusters.values()) == [len(records)]
    )


def test_migration_east_to_west_metrics(spark: Any, estate: EstateFactory, tmp_path: Path) -> None:
    setup = estate("east", "west", partitions=2, listed=["east"])
    path_read = "python" if core() is None else "direct"
    path = tmp_path / "metrics.jsonl"
    handle = attach(spark, prometheus_port=0, path=path)
    assert handle.port is not None
    port = handle.port
    try:
        east = produce(setup["east"], "orders", numbered("e", 30), 2)
        options = setup.options(startingOffsets="earliest")
        with memory_query(spark, options, processingTime="300 milliseconds") as query:
            query.expect(east)
            wait_until(lambda: _settled(port, {"east": 30}, query.query), what="east only")

            setup.route("east", "west")  # the stream now lives on both clusters
            west = produce(setup["west"], "orders", numbered("w", 20), 2)
            query.expect(east + west)
            both = {"east": 30, "west": 20}
            wait_until(lambda: _settled(port, both, query.query), what="east and west")
            both_read = scrape(port)
            assert set(both_read["dynamic_kafka_source_idle_seconds"]) == {("east",), ("west",)}
            assert both_read["dynamic_kafka_read_path"] == {
                ("east", path_read): 1,
                ("west", path_read): 1,
            }

            setup.route("west")  # east drained and removed
            west += produce(setup["west"], "orders", numbered("w", 10, start=20), 2)
            query.expect(east + west)
            wait_until(lambda: _settled(port, {"west": 30}, query.query), what="west only")
            after = scrape(port)
            labelled_east = [
                (name, labels) for name, series in after.items() for labels in series
                if "east" in labels
            ]  # fmt: skip
            assert labelled_east == []
            assert after["dynamic_kafka_discovery_failures"] == {(): 0}
            assert after["dynamic_kafka_reconciliations_total"] == {(): 3}
    finally:
        handle.detach()

    lines = [json.loads(line) for line in path.read_text().splitlines()]
    read = {
        cluster: sum(line["clusters"].get(cluster, {}).get("records", 0) for line in lines)
        for cluster in ("east", "west")
    }
    assert read == {"east": 30, "west": 30}  # what was produced on each cluster
    counts = [line["kafkaClustersCount"] for line in lines]
    assert [c for i, c in enumerate(counts) if i == 0 or counts[i - 1] != c] == [1, 2, 1]
    changes = [c for line in lines for c in line["reconciliations"]]
    assert [(c["clustersAdded"], c["clustersRemoved"]) for c in changes] == [
        (["east"], []),
        (["west"], []),
        ([], ["east"]),
    ]
    assert sum(line["numInputRows"] for line in lines) == 60
    paths = {c["readPath"] for line in lines for c in line["clusters"].values()}
    assert paths == {path_read}
