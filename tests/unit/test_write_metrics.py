"""The sink's write metrics, from the tasks' commit messages to the listener's JSON lines and
Prometheus series, with exact numbers (the file hand-off between ``commit`` and the listener
is real; no Spark: progress reports are given as JSON)."""

from __future__ import annotations

import json
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.unit.test_monitoring_metrics import _scrape

from pyspark_dynamic_kafka.monitoring.listener import DynamicKafkaListener
from pyspark_dynamic_kafka.monitoring.report import load_timeline, render_report
from pyspark_dynamic_kafka.sink.executor.task import WriteReport
from pyspark_dynamic_kafka.sink.metrics import (
    BatchWrite,
    query_of,
    record_batch,
    summarize,
    take_batch,
)

T0 = 1_700_000_000.0


@pytest.fixture(autouse=True)
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The hand-off directory lives under this test's own temporary directory."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    yield tmp_path


def _report(cluster: str, rows: int, size: int, **extra: Any) -> WriteReport:
    return WriteReport(cluster, {"orders": rows}, topic_bytes={"orders": size}, **extra)


def test_summarize_adds_up_the_committed_tasks() -> None:
    reports = [
        _report("west", 70, 700, query_id="q", transaction_ms=40),
        None,  # a failed task
        WriteReport("west", {}, skipped=True, query_id="q", transaction_ms=5),
        WriteReport(
            "west",
            {"orders": 50, "audit": 3},
            topic_bytes={"orders": 500, "audit": 30},
            query_id="q",
            transaction_ms=35,
        ),
    ]
    assert [r.bytes for r in reports if r is not None] == [700, 0, 530]  # the topics' sum
    write = summarize(4, reports)
    assert write == BatchWrite(
        4, "west", {"orders": 120, "audit": 3}, {"orders": 1200, "audit": 30}, 3, 1, 80
    )
    assert write.to_json() == {
        "batchId": 4,
        "cluster": "west",
        "rows": {"audit": 3, "orders": 120},
        "bytes": {"audit": 30, "orders": 1200},
        "tasks": 3,
        "skipped": 1,
        "transactionMs": 80,
    }
    assert BatchWrite.from_json(write.to_json()) == write
    assert query_of(reports) == "q"
    assert query_of([_report("east", 1, 1), None]) is None  # a df.write
    assert summarize(0, [None]) == BatchWrite(0, None, {}, {}, 0, 0, 0)


def test_the_hand_off_file_is_taken_once_and_old_ones_are_pruned(private_tmp: Path) -> None:
    for batch in range(5):
        record_batch("q-1", BatchWrite(batch, "east", {"orders": batch}), kept=2)
    directory = private_tmp / next(p.name for p in private_tmp.iterdir())
    assert sorted(p.name for p in directory.iterdir()) == ["q-1"]
    assert sorted(p.name for p in (directory / "q-1").iterdir()) == [
        "batch-3.json",
        "batch-4.json",
    ]
    assert take_batch("q-1", 4) == BatchWrite(4, "east", {"orders": 4})
    assert take_batch("q-1", 4) is None  # taken
    assert take_batch("q-1", 0) is None  # pruned
    assert take_batch("../q-1", 3) is None and take_batch("q-2", 3) is None


def _progress(batch: int, name: str | None = "writer") -> dict[str, Any]:
    """A progress report of a query reading a rate source (not dynamic_kafka)."""
    return {
        "id": "q-w",
        "runId": "r-1",
        "name": name,
        "batchId": batch,
        "timestamp": T0 + 10 * batch,
        "durationMs": {"triggerExecution": 500},
        "sources": [{"description": "RateStreamV2", "endOffset": 120 * (batch + 1)}],
    }


def test_listener_follows_a_query_that_only_writes(private_tmp: Path) -> None:
    path = private_tmp / "metrics.jsonl"
    listener = DynamicKafkaListener(path)
    writes = [
        BatchWrite(0, "east", {"orders": 120}, {"orders": 1500}, 2, 0, 80),
        BatchWrite(1, "west", {"orders": 120}, {"orders": 1510}, 2, 0, 90),
        BatchWrite(2, "west", {"orders": 60}, {"orders": 760}, 2, 1, 30),
        BatchWrite(3, "east", {"orders": 120}, {"orders": 1520}, 2, 0, 100),
    ]
    for write in writes:
        record_batch("q-w", write)
        listener.record(_progress(write.batch_id))
    assert listener.record(_progress(4)) is None  # no write reported: nothing changes
    samples = _scrape(listener, T0)
    assert samples["dynamic_kafka_written_records_total"] == {
        ("east", "orders"): 240,
        ("west", "orders"): 180,
    }
    assert samples["dynamic_kafka_written_bytes_total"] == {
        ("east", "orders"): 3020,
        ("west", "orders"): 2270,
    }
    assert samples["dynamic_kafka_write_route_switches_total"] == {(): 2}
    assert samples["dynamic_kafka_write_skipped_replays_total"] == {(): 1}
    assert samples["dynamic_kafka_write_transaction_seconds_total"] == {(): 0.3}
    assert "dynamic_kafka_clusters" not in samples  # it reads no dynamic_kafka source
    listener.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["batchId"] for line in lines] == [0, 1, 2, 3]
    assert lines[-1] == {
        "time": T0 + 30.5,
        "query": "writer",
        "runId": "r-1",
        "batchId": 3,
        "writes": {
            "cluster": "east",
            "batches": 4,
            "routeSwitches": 2,
            "skippedReplays": 1,
            "transactionMsTotal": 300,
            "clusters": {
                "east": {
                    "rowsTotal": 240,
                    "bytesTotal": 3020,
                    "topics": {"orders": {"rowsTotal": 240, "bytesTotal": 3020}},
                },
                "west": {
                    "rowsTotal": 180,
                    "bytesTotal": 2270,
                    "topics": {"orders": {"rowsTotal": 180, "bytesTotal": 2270}},
                },
            },
            "last": writes[3].to_json(),
        },
    }
    timeline = load_timeline(path.read_text().splitlines())
    assert timeline.action == "written"
    assert timeline.records == {"east": [120, 0, 0, 120], "west": [0, 120, 60, 0]}
    assert timeline.pending == {"east": [120, 120, 120, 240], "west": [0, 120, 180, 180]}
    assert timeline.events == [(10.0, "writes moved to west"), (30.0, "writes moved to east")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. matplotlib's "No artists with labels"
        # but not a dependency's deprecations while matplotlib is first imported (pyparsing
        # 3.3's parseString under matplotlib 3.8, the lowest the report extra declares)
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        png, page = render_report(path, private_tmp / "report")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "writes moved to west" in page.read_text() and "records written" in page.read_text()
    record_batch("q-w", BatchWrite(5, "east"))
    listener.onQueryTerminated(type("Event", (), {"id": "q-w"})())
    assert _scrape(listener, T0).get("dynamic_kafka_written_records_total", {}) == {}
    assert take_batch("q-w", 5) is None  # the query's directory went with it
