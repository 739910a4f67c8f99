"""``assignment=group``: its option rules, and the listener-to-source handoff files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.unit.conftest import BASE

from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.monitoring.listener import DynamicKafkaListener
from pyspark_dynamic_kafka.monitoring.progress import batch_metrics
from pyspark_dynamic_kafka.source.config.options import parse_options
from pyspark_dynamic_kafka.source.contract import STATUS_KEY
from pyspark_dynamic_kafka.source.group.handoff import HandoffInbox
from pyspark_dynamic_kafka.source.group.selection import GroupAssigned

GROUP = {**BASE, "assignment": "group", "kafka.group.id": "orders-enricher"}


def test_assignment_defaults_to_all_and_accepts_group() -> None:
    assert parse_options(BASE).assignment == "all"
    assert parse_options({**GROUP, "assignment": "GROUP"}).assignment == "group"


@pytest.mark.parametrize(
    ("options", "mode", "named"),
    [
        ({**BASE, "assignment": "group"}, "stream", r"'assignment' \(group\).*'kafka\.group\.id'"),
        (GROUP, "batch", r"'assignment' \(group\).*batch read \(spark\.read\)"),
        ({**GROUP, "archive.path": "/tmp/a"}, "stream", r"'assignment' \(group\).*'archive\.path'"),
        ({**BASE, "assignment": "some"}, "stream", r"assignment.*all, group"),
    ],
    ids=["no-group-id", "batch", "archive", "unknown-value"],
)
def test_bad_combinations_fail_naming_the_options(
    options: dict[str, str], mode: str, named: str
) -> None:
    with pytest.raises(OptionsError, match=named):
        parse_options(options, mode=mode)  # type: ignore[arg-type]


def test_available_now_is_refused_naming_pipelines_and_the_fix() -> None:
    """A pipeline runs every streaming flow with Trigger.AvailableNow (PySpark 4.3's
    TriggeredGraphExecution): the refusal at query start says so, and what to read with."""
    selection = GroupAssigned(parse_options(GROUP, mode="stream"), None, None)  # type: ignore[arg-type]
    with pytest.raises(OptionsError) as refused:
        selection.available_now()
    message = str(refused.value)
    assert "'assignment' (group)" in message and "Trigger.AvailableNow" in message
    assert "Spark Declarative Pipelines" in message and "assignment=all" in message


def _progress(handoff: str | None, batch: int) -> dict[str, object]:
    latest = {"version": 1, "clusters": {"east": {"orders": {"0": 9}}}}
    status: dict[str, object] = {"assignment": {"east": ["orders"]}}
    if handoff is not None:
        status["handoff"] = handoff
    end = {"version": 1, "clusters": {"east": {"orders": {"0": 7 + batch}}}}
    source = {
        "description": "dynamic_kafka",
        "startOffset": json.dumps(end),
        "endOffset": json.dumps(end),
        "latestOffset": json.dumps({**latest, STATUS_KEY: status}),
        "numInputRows": 2,
    }
    return {"id": "q", "runId": "r", "name": None, "batchId": batch, "sources": [source]}


def test_the_listener_hands_completed_batches_and_the_end_to_the_source(tmp_path: Path) -> None:
    inbox = HandoffInbox()
    try:
        metrics = batch_metrics(_progress(None, 1))
        assert metrics is not None and metrics.handoffs == ()  # assignment=all: none
        listener = DynamicKafkaListener()
        for batch in (1, 2):
            listener.record(_progress(inbox.path, batch))
        received = inbox.take()
        assert [r["clusters"] for r in received.completed] == [
            {"east": {"orders": {"0": 8}}},
            {"east": {"orders": {"0": 9}}},
        ]
        assert not received.terminated and inbox.heard
        assert inbox.take().completed == []  # taken once

        class _Ended:
            id = "q"

        listener.onQueryTerminated(_Ended())
        assert inbox.take().terminated
    finally:
        inbox.close()
    assert not Path(inbox.path).exists()
