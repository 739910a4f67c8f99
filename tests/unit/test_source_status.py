"""What the stream reader reports for monitoring, and its structured log lines."""

from __future__ import annotations

import json
import logging

import pytest
from tests.unit.conftest import BASE
from tests.unit.test_discovery import ORDERS, PAYMENTS, _discovery, _Service

from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.source.config.options import parse_options
from pyspark_dynamic_kafka.source.contract import STATUS_KEY
from pyspark_dynamic_kafka.source.driver.status import SourceStatus, planned_offsets


def _events(caplog: pytest.LogCaptureFixture, name: str) -> list[dict[str, object]]:
    found = []
    for record in caplog.records:
        try:
            line = json.loads(record.getMessage())
        except ValueError:
            continue
        if line.get("event") == name:
            found.append(line)
    return found


def test_each_discovery_failure_is_one_structured_line(caplog: pytest.LogCaptureFixture) -> None:
    service = _Service([ORDERS])
    discovery, _ = _discovery(
        service, streamids="orders", metadatadiscoveryintervalms="0",
        metadatadiscoveryfailurethreshold="2",
    )  # fmt: skip
    discovery.current()
    assert discovery.failures == 0 and discovery.last_success_ms is not None
    service.fail = True
    with caplog.at_level(logging.WARNING):
        discovery.current()
        discovery.current()
    lines = _events(caplog, "discovery_failure")
    assert [(e["consecutiveFailures"], e["threshold"]) for e in lines] == [(1, 2), (2, 2)]
    assert lines[0]["subscription"] == "streamIds=orders"
    assert "syntax error" in str(lines[0]["message"])
    assert discovery.failures == 2


def test_reconciliations_that_change_what_is_read_are_logged_and_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    service = _Service([ORDERS, PAYMENTS])
    discovery, _ = _discovery(service, streamids="orders,payments", metadatadiscoveryintervalms="0")
    status = SourceStatus("streamIds=orders,payments", 1, wall=lambda: 100.0)
    with caplog.at_level(logging.WARNING):  # a warning: in the driver's log by default
        status.observe(discovery.current(), {}, 0, 5)
        assert status.observe(discovery.current(), {}, 0, 6) is None  # nothing changed
        del service.streams["payments"]
        service.inactive.add("west")
        change = status.observe(discovery.current(), {("east", "orders", 1): 0}, 0, 7, left=3)
    assert change == {
        "seq": 2,
        "atMs": 100000,
        "clustersAdded": [],
        "clustersRemoved": ["west"],
        "topicsAdded": [],
        "topicsRemoved": ["east/payments-v1", "west/orders"],
        "partitionsEntered": 1,
        "partitionsLeft": 3,
    }
    lines = _events(caplog, "reconciliation")
    assert [line["seq"] for line in lines] == [1, 2]
    assert lines[0]["clustersAdded"] == ["east", "west"] and lines[1]["clusters"] == ["east"]
    status.planned({("east", "orders", 0): 3, ("east", "orders", 1): 0}, {
        ("east", "orders", 0): 10, ("east", "orders", 1): 4, ("east", "orders", 2): 9
    })  # fmt: skip
    status.read_paths({"east": "direct"})
    report = status.report({"version": 1, "clusters": {"east": {"orders": {"0": 10}}}})
    assert report is not None and report["clusters"] == {"east": {"orders": {"0": 10}}}
    assert report[STATUS_KEY] == {
        "assignment": {"east": ["orders"]},
        "discovery": {"lastSuccessMs": 7, "consecutiveFailures": 0, "threshold": 1},
        "changes": [_change(lines[0]), change],
        "planned": {"east": {"orders": 11}},
        "readPaths": {"east": "direct"},
    }
    assert status.report(None) is None


def _change(line: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in line.items() if k not in ("event", "subscription", "clusters")}


def test_planned_offsets_skip_partitions_entering() -> None:
    begin = {("a", "t", 0): 5, ("a", "t", 1): 9}
    end = {("a", "t", 0): 8, ("a", "t", 1): 9, ("a", "u", 0): 4, ("b", "t", 0): 2}
    assert planned_offsets(begin, end) == {"a": {"t": 3, "u": 0}, "b": {"t": 0}}


def test_commit_offsets_to_kafka_needs_a_group_id() -> None:
    assert parse_options(BASE).commit_offsets_to_kafka is False
    with pytest.raises(OptionsError, match=r"commitOffsetsToKafka.*kafka\.group\.id"):
        parse_options({**BASE, "commitoffsetstokafka": "true"})
    parsed = parse_options({**BASE, "commitOffsetsToKafka": "true", "kafka.group.id": "billing"})
    assert parsed.commit_offsets_to_kafka is True


def test_partitions_leaving_alone_are_a_change(caplog: pytest.LogCaptureFixture) -> None:
    """A group's revocation changes what is read with the same topics: one change of its own."""
    service = _Service([ORDERS])
    discovery, _ = _discovery(service, streamids="orders", metadatadiscoveryintervalms="0")
    status = SourceStatus("streamIds=orders", 1, wall=lambda: 100.0)
    with caplog.at_level(logging.WARNING):
        status.observe(discovery.current(), {}, 0, 5)
        assert status.observe(discovery.current(), {}, 0, 6, left=0) is None
        change = status.observe(discovery.current(), {}, 0, 7, left=2)
    assert change is not None and change["seq"] == 2
    assert (change["partitionsEntered"], change["partitionsLeft"]) == (0, 2)
    assert [line["partitionsLeft"] for line in _events(caplog, "reconciliation")] == [0, 2]
