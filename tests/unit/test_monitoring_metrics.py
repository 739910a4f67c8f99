"""The listener's core: progress reports (as Spark writes them) -> metrics, exposition, report.

The progress reports are written out in the shape PySpark 4.3 gives a listener for a
``dynamic_kafka`` source (recorded from a real query); the end-to-end path is
tests/integration/test_monitoring.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from pyspark_dynamic_kafka.cli import main
from pyspark_dynamic_kafka.monitoring.listener import DynamicKafkaListener
from pyspark_dynamic_kafka.monitoring.progress import batch_metrics, offset_document
from pyspark_dynamic_kafka.monitoring.prometheus import StateCollector
from pyspark_dynamic_kafka.monitoring.report import load_timeline
from pyspark_dynamic_kafka.source.contract import STATUS_KEY

T0 = 1_700_000_000.0


def _offsets(clusters: dict[str, dict[str, dict[str, int]]]) -> dict[str, Any]:
    return {"version": 1, "clusters": clusters}


def _progress(
    batch: int,
    start: dict[str, Any] | None,
    end: dict[str, Any],
    latest: dict[str, Any],
    assignment: dict[str, list[str]],
    changes: list[dict[str, Any]] = (),  # type: ignore[assignment]
    planned: dict[str, Any] | None = None,
    rows: int = 0,
) -> dict[str, Any]:
    status = {
        "assignment": assignment,
        "discovery": {"lastSuccessMs": int(T0 * 1000), "consecutiveFailures": 0, "threshold": 1},
        "changes": list(changes),
        "planned": planned or {},
        # the engine the source planned for each cluster (west: say, client.rack is set)
        "readPaths": {c: "direct" if c == "east" else "librdkafka" for c in assignment},
    }
    seconds = T0 + 10 * batch
    stamp = f"{__import__('datetime').datetime.utcfromtimestamp(seconds).isoformat()}.000Z"
    return {
        "id": "q-id",
        "runId": "run-1",
        "name": "orders",
        "timestamp": stamp,
        "batchId": batch,
        "numInputRows": rows,
        "durationMs": {"triggerExecution": 500},
        "sources": [
            {
                "description": "org.apache.spark.sql.execution.datasources.v2.python."
                "PythonMicroBatchStreamWithTriggerAvailableNow@8ba6d73",
                "startOffset": start,
                "endOffset": end,
                "latestOffset": {**latest, STATUS_KEY: status},
                "numInputRows": rows,
            }
        ],
        "sink": {"description": "NoopTable"},
    }


CHANGE_WEST = {
    "seq": 2, "atMs": int((T0 + 15) * 1000), "clustersAdded": ["west"], "clustersRemoved": [],
    "topicsAdded": ["west/orders"], "topicsRemoved": [], "partitionsEntered": 2,
}  # fmt: skip
CHANGE_EAST = {
    "seq": 3, "atMs": int((T0 + 25) * 1000), "clustersAdded": [], "clustersRemoved": ["east"],
    "topicsAdded": [], "topicsRemoved": ["east/orders"], "partitionsEntered": 0,
}  # fmt: skip
FIRST = {
    "seq": 1, "atMs": int(T0 * 1000), "clustersAdded": ["east"], "clustersRemoved": [],
    "topicsAdded": ["east/orders"], "topicsRemoved": [], "partitionsEntered": 0,
}  # fmt: skip

E1 = _offsets({"east": {"orders": {"0": 5, "1": 5}}})
E2 = _offsets({"east": {"orders": {"0": 7, "1": 8}}, "west": {"orders": {"0": 0, "1": 0}}})
E3 = _offsets({"east": {"orders": {"0": 7, "1": 8}}, "west": {"orders": {"0": 4, "1": 2}}})
E4 = _offsets({"west": {"orders": {"0": 6, "1": 2}}})
MIGRATION = [
    # first batch: no startOffset; its records come from the source's planned offsets
    _progress(0, None, E1, _offsets({"east": {"orders": {"0": 9, "1": 5}}}), {"east": ["orders"]},
              [FIRST], {"east": {"orders": 10}}, rows=10),
    _progress(1, E1, E2, E2, {"east": ["orders"], "west": ["orders"]}, [FIRST, CHANGE_WEST],
              rows=5),
    _progress(2, E2, E3, E3, {"east": ["orders"], "west": ["orders"]}, [FIRST, CHANGE_WEST],
              rows=6),
    _progress(3, E3, E4, _offsets({"west": {"orders": {"0": 6, "1": 3}}}), {"west": ["orders"]},
              [FIRST, CHANGE_WEST, CHANGE_EAST], rows=2),
]  # fmt: skip


def test_batch_metrics_per_cluster_and_topic() -> None:
    first = batch_metrics(MIGRATION[0])
    assert first is not None
    assert first.query == "orders" and first.batch_id == 0 and first.time == T0 + 0.5
    orders = first.topics[("east", "orders")]
    assert (orders.records, orders.pending, orders.partitions, orders.behind) == (10, 4, 2, (4, 0))
    moved = batch_metrics(MIGRATION[1])
    assert moved is not None and moved.clusters == ("east", "west")
    assert moved.topics[("east", "orders")].records == 5
    assert moved.topics[("west", "orders")].records == 0  # entering: no records yet
    assert [c["seq"] for c in moved.changes] == [1, 2]
    assert moved.read_paths == {"east": "direct", "west": "librdkafka"}
    assert batch_metrics({"sources": [{"endOffset": {"x": 1}}]}) is None  # another source


def test_pyspark_4_0s_offsets_are_read_as_its_progress_hands_them_over() -> None:
    # PySpark 4.0's SourceProgress.fromJson gives a source's offsets as str() of the parsed
    # JSON (PySpark 4.1+: the JSON text); the same report reads the same either way.
    sources = [
        {k: (str(v) if k.endswith("Offset") else v) for k, v in source.items()}
        for source in MIGRATION[1]["sources"]
    ]
    assert batch_metrics({**MIGRATION[1], "sources": sources}) == batch_metrics(MIGRATION[1])
    assert "'version': 1" in str(sources[0]["endOffset"])
    assert offset_document("{'version': 1, 'ok': True, 'none': None}") == {
        "version": 1,
        "ok": True,
        "none": None,
    }
    assert offset_document('{"version": 1}') == {"version": 1}
    assert offset_document("not an offset") is None
    assert offset_document({"version": 1}) == {"version": 1}


def _scrape(listener: DynamicKafkaListener, now: float) -> dict[str, dict[tuple[str, ...], float]]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StateCollector(listener.states, clock=lambda: now))
    samples: dict[str, dict[tuple[str, ...], float]] = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for sample in family.samples:
            keys = ("cluster", "topic", "path")
            labels = tuple(sample.labels[k] for k in keys if k in sample.labels)
            samples.setdefault(sample.name, {})[labels] = sample.value
    return samples


def test_listener_state_exposition_and_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    listener = DynamicKafkaListener(path)
    seen = []
    for progress in MIGRATION[:3]:
        listener.record(progress)
        seen.append(_scrape(listener, T0 + 40))
    listener.record(MIGRATION[3])
    seen.append(_scrape(listener, T0 + 40))
    listener.close()
    assert [s["dynamic_kafka_clusters"][()] for s in seen] == [1, 2, 2, 1]
    during, after = seen[2], seen[3]
    assert during["dynamic_kafka_records_total"] == {("east", "orders"): 15, ("west", "orders"): 6}
    assert during["dynamic_kafka_source_idle_seconds"] == {("east",): 29.5, ("west",): 19.5}
    assert during["dynamic_kafka_read_path"] == {("east", "direct"): 1, ("west", "librdkafka"): 1}
    # east left the metadata: every series labelled east is gone
    assert after["dynamic_kafka_records_total"] == {("west", "orders"): 8}
    assert after["dynamic_kafka_pending_records"] == {("west", "orders"): 1}
    assert after["dynamic_kafka_max_offsets_behind_latest"] == {("west", "orders"): 1}
    assert after["dynamic_kafka_avg_offsets_behind_latest"] == {("west", "orders"): 0.5}
    assert after["dynamic_kafka_source_idle_seconds"] == {("west",): 9.5}
    assert after["dynamic_kafka_read_path"] == {("west", "librdkafka"): 1}
    assert after["dynamic_kafka_reconciliations_total"] == {(): 3}
    assert after["dynamic_kafka_discovery_failures"] == {(): 0}
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["kafkaClustersCount"] for line in lines] == [1, 2, 2, 1]
    assert [[c["seq"] for c in line["reconciliations"]] for line in lines] == [[1], [2], [], [3]]
    assert lines[3]["clusters"]["west"]["topics"]["orders"]["recordsTotal"] == 8
    assert [line["clusters"]["west"]["readPath"] for line in lines[1:]] == ["librdkafka"] * 3
    listener.onQueryTerminated(type("Event", (), {"id": "q-id"})())
    assert _scrape(listener, T0).get("dynamic_kafka_clusters", {}) == {}


def test_report_draws_the_migration(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "metrics.jsonl"
    listener = DynamicKafkaListener(path)
    for progress in MIGRATION:
        listener.record(progress)
    listener.close()
    timeline = load_timeline(path.read_text().splitlines())
    assert timeline.events == [(14.5, "west added"), (24.5, "east removed")]
    assert timeline.records == {"east": [10, 5, 0, 0], "west": [0, 0, 6, 2]}
    assert main(["report", str(path), "--out", str(tmp_path / "out")]) == 0
    png = tmp_path / "out" / "dynamic-kafka-report.png"
    page = (tmp_path / "out" / "dynamic-kafka-report.html").read_text()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "data:image/png;base64," in page and "east removed" in page
    assert str(png) in capsys.readouterr().out
