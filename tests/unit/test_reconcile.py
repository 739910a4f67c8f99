"""Reconciliation of checkpointed offsets with each cluster, data loss, starting positions.

The cluster side is a scripted lister: partition-count changes cannot be produced on the test
broker (Tansu has no CreatePartitions), and a transient per-topic error cannot be produced on
demand; the integration tests cover deletion, recreation and backwards offsets on real brokers.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pytest

from pyspark_dynamic_kafka.errors import DataLossError, KafkaClientError, OffsetsError
from pyspark_dynamic_kafka.kafka.admin import TopicListing
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.metadata.model import StartingPosition
from pyspark_dynamic_kafka.source.discovery import ClusterAssignment
from pyspark_dynamic_kafka.source.listing import ClusterSnapshot
from pyspark_dynamic_kafka.source.positions import (
    EARLIEST_POSITION,
    LATEST_POSITION,
    Position,
    PositionSpec,
    start_position,
)
from pyspark_dynamic_kafka.source.reconcile import Loss, reconcile, report_losses

TP = tuple[str, int]


class _Admin:
    def __init__(self, earliest: Mapping[TP, int]) -> None:
        self.earliest = earliest

    def list_offsets(self, pairs: list[TP], spec: str) -> dict[TP, int]:
        assert spec == "earliest"
        return {tp: self.earliest[tp] for tp in pairs}


class _Lister:
    """Answers for one or more clusters: topics -> {partition: (earliest, latest)}."""

    def __init__(self) -> None:
        self.topics: dict[str, dict[str, dict[int, tuple[int, int]]]] = {}
        self.unavailable: dict[str, set[str]] = {}
        self.down: set[str] = set()
        self.stamps: dict[tuple[str, str, int], dict[int, int]] = {}

    def snapshot(self, cluster_id: str, cluster: ClusterAssignment) -> ClusterSnapshot:
        if cluster_id in self.down:
            raise KafkaClientError(f"Cluster '{cluster_id}': could not list topics")
        have = self.topics.get(cluster_id, {})
        bad = self.unavailable.get(cluster_id, set())
        partitions = {t: tuple(sorted(ps)) for t, ps in have.items() if t in cluster.topics}
        partitions = {t: ps for t, ps in partitions.items() if t not in bad}
        absent = frozenset(t for t in cluster.topics if t not in have)
        listing = TopicListing(partitions, absent, frozenset(bad & set(cluster.topics)))
        latest = {(t, p): have[t][p][1] for t, ps in partitions.items() for p in ps}
        return ClusterSnapshot(listing, latest)

    def admin(self, cluster_id: str, cluster: ClusterAssignment) -> _Admin:
        have = self.topics.get(cluster_id, {})
        return _Admin({(t, p): lo for t, ps in have.items() for p, (lo, _) in ps.items()})

    def resolve(
        self,
        cluster_id: str,
        cluster: ClusterAssignment,
        wanted: Mapping[TP, Position],
        latest: Mapping[TP, int],
        no_match: str,
    ) -> dict[TP, int]:
        have = self.topics[cluster_id]
        result = {}
        for (t, p), pos in wanted.items():
            if pos.kind == "earliest":
                result[(t, p)] = have[t][p][0]
            elif pos.kind == "latest":
                result[(t, p)] = latest[(t, p)]
            elif pos.kind == "offset":
                result[(t, p)] = pos.value
            else:
                found = self.stamps.get((cluster_id, t, p), {}).get(pos.value)
                if found is None and no_match == "error":
                    raise OffsetsError(f"no record at or after {pos.value}")
                result[(t, p)] = latest[(t, p)] if found is None else found
        return result


def _cluster(*topics: str, starting: StartingPosition | None = None) -> ClusterAssignment:
    positions = tuple((t, starting) for t in sorted(topics)) if starting else ()
    return ClusterAssignment(
        FrozenProperties({"bootstrap.servers": "h:1"}), frozenset(topics), positions
    )


def _discovery_earliest(key: Any, cluster: ClusterAssignment, first: bool) -> Position:
    return EARLIEST_POSITION


def test_new_partitions_enter_at_their_position_and_known_ones_advance() -> None:
    lister = _Lister()
    lister.topics["east"] = {"orders": {0: (2, 10), 1: (0, 5)}}
    state = reconcile(
        {"east": _cluster("orders")},
        {("east", "orders", 0): 4},
        lister,  # type: ignore[arg-type]
        _discovery_earliest,
        "error",
    )
    assert state.offsets == {("east", "orders", 0): 10, ("east", "orders", 1): 0}
    assert state.entered == {("east", "orders", 1): 0}
    assert state.losses == []


def test_first_read_of_a_cluster_is_flagged_for_its_metadata_position() -> None:
    lister = _Lister()
    lister.topics["east"] = {"orders": {0: (0, 10)}}
    lister.topics["west"] = {"orders": {0: (0, 7)}}
    seen: list[tuple[str, bool]] = []

    def position(key: Any, cluster: ClusterAssignment, first: bool) -> Position:
        seen.append((key[0], first))
        return LATEST_POSITION

    reconcile(
        {"east": _cluster("orders"), "west": _cluster("orders")},
        {("east", "orders", 1): 3},  # east is known (another partition), west is new
        lister,  # type: ignore[arg-type]
        position,
        "error",
    )
    assert sorted(seen) == [("east", False), ("west", True)]


def test_start_position_precedence() -> None:
    key = ("east", "orders", 0)
    named = PositionSpec({key: Position("offset", 5)}, None, "startingOffsets")
    override = StartingPosition("timestamp", 1234)
    assert start_position(named, key, override, EARLIEST_POSITION) == Position("offset", 5)
    other = ("east", "orders", 1)
    assert start_position(named, other, override, EARLIEST_POSITION) == Position("timestamp", 1234)
    assert start_position(named, other, None, EARLIEST_POSITION) == EARLIEST_POSITION
    everywhere = PositionSpec({}, Position("timestamp", 99), "startingTimestamp")
    latest = StartingPosition("latest")
    assert start_position(everywhere, key, latest, EARLIEST_POSITION) == LATEST_POSITION
    assert start_position(everywhere, key, None, EARLIEST_POSITION) == Position("timestamp", 99)


def test_data_loss_is_classified_and_named() -> None:
    lister = _Lister()
    # orders: partition 2 vanished, partition 0 went back (recreated); refunds deleted.
    lister.topics["east"] = {"orders": {0: (0, 3), 1: (0, 20)}}
    previous = {
        ("east", "orders", 0): 10,
        ("east", "orders", 1): 15,
        ("east", "orders", 2): 7,
        ("east", "refunds", 0): 4,
    }
    state = reconcile(
        {"east": _cluster("orders", "refunds")},
        previous,
        lister,  # type: ignore[arg-type]
        _discovery_earliest,
        "error",
    )
    assert sorted(state.losses, key=lambda loss: loss.key) == [
        Loss(("east", "orders", 0), "its latest offset went back", 10, 3),
        Loss(("east", "orders", 2), "the partition no longer exists", 7),
        Loss(("east", "refunds", 0), "the topic was deleted", 4),
    ]
    assert state.offsets == {("east", "orders", 0): 3, ("east", "orders", 1): 20}
    assert state.rewound == {("east", "orders", 0): 0}
    with pytest.raises(DataLossError) as info:
        report_losses(state.losses, fail=True, reported=set())
    message = str(info.value)
    for needle in ("east/orders/0", "went back", "latest offset now 3", "east/orders/2"):
        assert needle in message
    assert "east/refunds/0: the topic was deleted (next offset to read 4)" in message
    assert "failOnDataLoss=false" in message


def test_without_fail_each_loss_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    losses = [Loss(("east", "orders", 2), "the partition no longer exists", 7)]
    reported: set[Loss] = set()
    with caplog.at_level(logging.WARNING):
        report_losses(losses, fail=False, reported=reported)
        report_losses(losses, fail=False, reported=reported)
    warnings = [r for r in caplog.records if "east/orders/2" in r.getMessage()]
    assert len(warnings) == 1


def test_removal_through_metadata_is_not_data_loss() -> None:
    lister = _Lister()
    lister.topics["east"] = {"orders": {0: (0, 10)}, "refunds": {0: (0, 4)}}
    previous = {("east", "orders", 0): 10, ("east", "refunds", 0): 4, ("west", "orders", 0): 1}
    state = reconcile(
        {"east": _cluster("orders")},  # refunds and west left the metadata
        previous,
        lister,  # type: ignore[arg-type]
        _discovery_earliest,
        "error",
    )
    assert state.losses == []
    assert state.offsets == {("east", "orders", 0): 10}


def test_unreachable_cluster_and_unavailable_topic_keep_their_offsets() -> None:
    lister = _Lister()
    lister.topics["east"] = {"orders": {0: (0, 10)}, "refunds": {0: (0, 9)}}
    lister.unavailable["east"] = {"refunds"}
    lister.down = {"west"}
    previous = {("east", "refunds", 0): 4, ("west", "orders", 0): 3, ("east", "orders", 0): 1}
    state = reconcile(
        {"east": _cluster("orders", "refunds"), "west": _cluster("orders")},
        previous,
        lister,  # type: ignore[arg-type]
        _discovery_earliest,
        "error",
    )
    assert state.losses == []
    assert state.offsets == {
        ("east", "orders", 0): 10,
        ("east", "refunds", 0): 4,
        ("west", "orders", 0): 3,
    }
