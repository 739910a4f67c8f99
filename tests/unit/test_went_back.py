"""Offsets that went back, told apart by topic id (KIP-516): the reconcile rules, the ranges a
micro-batch (planned or replayed) reads, the messages and the once-only warnings.

The cluster side is test_reconcile's scripted lister (a topic recreated with a known id, or a log
truncated under the same id, cannot be produced on demand); tests/integration/test_data_loss.py
runs the same cases on Apache Kafka.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import Uuid
from tests.unit.test_reconcile import DISCOVERY_EARLIEST, _cluster, _Lister

from pyspark_dynamic_kafka.errors import DataLossError
from pyspark_dynamic_kafka.kafka.admin import ClusterAdmin
from pyspark_dynamic_kafka.source.config.options import parse_options
from pyspark_dynamic_kafka.source.driver.cluster_view import ClusterView
from pyspark_dynamic_kafka.source.driver.reconcile import (
    Loss,
    offsets_went_back,
    reconcile,
    report_losses,
)
from pyspark_dynamic_kafka.source.driver.status import SourceStatus
from pyspark_dynamic_kafka.source.driver.task_packing import offset_ranges
from pyspark_dynamic_kafka.source.driver.went_back import RECREATED, TRUNCATED, WENT_BACK
from pyspark_dynamic_kafka.source.executor.task import OffsetRange

O0, O1, R0 = ("east", "orders", 0), ("east", "orders", 1), ("east", "refunds", 0)
RECREATED_WHAT = f"{RECREATED} (topic id A, now B): read from its earliest offset"
TRUNCATED_WHAT = (
    f"{TRUNCATED} (same topic id R): continuing from its new end, the records left were read "
    "already"
)
#: orders recreated (id A -> B): partition 0 ends below the checkpoint, partition 1 already past
#: it; refunds truncated (same id R) from 12 to 8 records.
PREVIOUS = {O0: 10, O1: 15, R0: 12}
RECORDED = {("east", "orders"): "A", ("east", "refunds"): "R"}


def _lister(ids: bool = True) -> _Lister:
    lister = _Lister()
    lister.topics["east"] = {"orders": {0: (0, 3), 1: (0, 20)}, "refunds": {0: (5, 8)}}
    if ids:
        lister.ids["east"] = {"orders": "B", "refunds": "R"}
    return lister


def test_another_id_is_a_recreated_topic_and_the_same_id_a_truncated_log() -> None:
    subscription = {"east": _cluster("orders", "refunds")}
    state = reconcile(subscription, PREVIOUS, _lister(), DISCOVERY_EARLIEST, recorded=RECORDED)  # type: ignore[arg-type]
    assert sorted(state.losses, key=lambda loss: loss.key) == [
        Loss(O0, RECREATED_WHAT, 10, 3),
        Loss(O1, RECREATED_WHAT, 15, 20),  # past the checkpoint: without ids, never seen
        Loss(R0, TRUNCATED_WHAT, 12, 8),
    ]
    assert [loss.latest for loss in sorted(state.losses, key=lambda x: x.key)] == [3, 20, 8]
    assert state.offsets == {O0: 3, O1: 20, R0: 8}
    # the recreated topic from its earliest offset; the truncated log from its new end
    assert state.rewound == {O0: 0, O1: 0, R0: 8}
    assert state.topic_ids == {("east", "orders"): "B", ("east", "refunds"): "R"}


@pytest.mark.parametrize("side", ["checkpoint", "broker"])
def test_without_ids_an_offset_that_went_back_is_read_from_the_earliest_as_before(
    side: str,
) -> None:
    lister = _lister(ids=side == "checkpoint")
    recorded = {} if side == "checkpoint" else RECORDED
    subscription = {"east": _cluster("orders", "refunds")}
    state = reconcile(subscription, PREVIOUS, lister, DISCOVERY_EARLIEST, recorded=recorded)  # type: ignore[arg-type]
    assert sorted(state.losses, key=lambda loss: loss.key) == [
        Loss(O0, WENT_BACK, 10, 3),
        Loss(R0, WENT_BACK, 12, 8),
    ]
    assert state.rewound == {O0: 0, R0: 5}
    # the ids the broker reports now are recorded; without any, the checkpoint's are kept
    listed = {("east", "orders"): "B", ("east", "refunds"): "R"}
    assert state.topic_ids == (listed if side == "checkpoint" else RECORDED)


def test_a_cluster_not_listed_keeps_its_recorded_ids() -> None:
    lister = _lister()
    lister.down = {"east"}
    subscription = {"east": _cluster("orders", "refunds")}
    state = reconcile(subscription, PREVIOUS, lister, DISCOVERY_EARLIEST, recorded=RECORDED)  # type: ignore[arg-type]
    assert state.offsets == PREVIOUS and state.topic_ids == RECORDED and state.losses == []


def test_a_planned_or_replayed_batch_reads_the_same_ranges() -> None:
    end = {O0: 3, O1: 20, R0: 8}
    ids = (RECORDED, {("east", "orders"): "B", ("east", "refunds"): "R"})
    assert offsets_went_back(PREVIOUS, end, ids) == [
        Loss(O0, RECREATED_WHAT, 10, 3),
        Loss(O1, RECREATED_WHAT, 15, 20),
        Loss(R0, TRUNCATED_WHAT, 12, 8),
    ]
    planned = offset_ranges(PREVIOUS, end, {O0: 0, O1: 2, R0: 8}, ids)
    assert planned == [OffsetRange(*O0, 0, 3), OffsetRange(*O1, 2, 20)]  # refunds: none again
    # replayed after a restart (nothing rewound known): the new topic from 0
    assert offset_ranges(PREVIOUS, end, {}, ids) == [
        OffsetRange(*O0, 0, 3),
        OffsetRange(*O1, 0, 20),
    ]
    # an admitted end of the new topic below the checkpoint is still the new topic's range
    assert offset_ranges(PREVIOUS, {O1: 4}, {O1: 0}, ids) == [OffsetRange(*O1, 0, 4)]


def test_the_failure_names_the_partition_both_offsets_and_what_happened() -> None:
    losses = offsets_went_back(
        PREVIOUS, {O0: 3, O1: 20, R0: 8}, (RECORDED, {("east", "orders"): "B"})
    )
    with pytest.raises(DataLossError) as info:
        report_losses(losses, fail=True, reported=set())
    message = str(info.value)
    assert (
        "east/orders/1: the topic was recreated (topic id A, now B): read from its earliest "
        "offset (next offset to read 15, latest offset now 20)"
    ) in message
    with pytest.raises(DataLossError) as info:
        report_losses(
            offsets_went_back({R0: 12}, {R0: 8}, (RECORDED, RECORDED)), fail=True, reported=set()
        )
    assert (
        "east/refunds/0: the log was truncated (same topic id R): continuing from its new end, "
        "the records left were read already (next offset to read 12, latest offset now 8)"
    ) in str(info.value)


def test_losses_reach_the_progress_and_missing_ids_are_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    lister = _lister(ids=False)
    options = {
        "metadataService": "file",
        "metadataService.path": "streams.yaml",
        "streamIds": "orders",
        "failOnDataLoss": "false",
    }
    view = ClusterView(parse_options(options), lister)
    subscription = {"east": _cluster("orders", "refunds")}
    with caplog.at_level(logging.WARNING):
        for _ in range(2):
            view.recorded_ids = {}
            view.reconcile(PREVIOUS, DISCOVERY_EARLIEST, subscription=subscription)
    said = [r.getMessage() for r in caplog.records]
    assert len([m for m in said if "reports no topic id for ['orders', 'refunds']" in m]) == 1
    assert len([m for m in said if "The checkpoint records no topic id for" in m]) == 1
    assert len([m for m in said if "east/orders/0: its latest offset went back" in m]) == 1
    status = SourceStatus("streamIds=orders", 1, wall=lambda: 0.0)
    status.losses(view.recent_losses)
    report = status.report({"version": 1, "clusters": {}})
    assert report is not None
    assert report["dynamicKafka"]["dataLoss"] == [
        {"partition": "east/orders/0", "what": WENT_BACK, "nextOffset": 10, "latestOffset": 3},
        {"partition": "east/refunds/0", "what": WENT_BACK, "nextOffset": 12, "latestOffset": 8},
    ]


class _Described:
    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self) -> Any:
        return self.value


def test_the_listing_takes_ids_from_describe_topics() -> None:
    # Scripted: a broker that reports the zero id (no topic ids) beside one that reports one;
    # the partitions come from the Metadata request to any broker before it.
    calls: list[list[str]] = []

    def list_topics(timeout: float) -> Any:
        topics = {t: SimpleNamespace(error=None, partitions={0: None}) for t in ("orders", "old")}
        return SimpleNamespace(topics=topics)

    def describe(topics: Any, request_timeout: float) -> dict[str, Any]:
        calls.append(list(topics.topic_names))
        ids = {"orders": Uuid(-5574248224966030890, 1), "old": Uuid(0, 0)}
        return {
            name: _Described(SimpleNamespace(partitions=[SimpleNamespace(id=0)], topic_id=i))
            for name, i in ids.items()
        }

    admin = ClusterAdmin("east", {"bootstrap.servers": "h:1"}, 1000)
    admin._client = SimpleNamespace(list_topics=list_topics, describe_topics=describe)
    listing = admin.list_topics(["orders", "old"])
    assert calls == [["old", "orders"]]
    assert listing.ids == {"orders": str(Uuid(-5574248224966030890, 1))}
    assert listing.partitions == {"old": (0,), "orders": (0,)}
