"""The retention window of removed clusters and topics (``removedClusterRetentionMs``), and the
start policy's steps that come before any rule (retained, then group offsets): pure."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.unit.conftest import BASE

from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.source.checkpoint import Retained, SourceOffset, decode, encode
from pyspark_dynamic_kafka.source.config.options import parse_options
from pyspark_dynamic_kafka.source.driver.retention import retain
from pyspark_dynamic_kafka.source.driver.start_policy import (
    StartPolicy,
    discovery_rule,
    start_rule,
)

EAST = {("east", "orders", 0): 10, ("east", "orders", 1): 7}
WEST = {("west", "orders", 0): 3}


def _clock(ms: int) -> Any:
    return lambda: ms


def test_a_removed_cluster_is_retained_with_the_time_of_removal() -> None:
    step = retain(EAST | WEST, Retained(), {("west", "orders")}, 60_000, _clock(1_000))
    assert step.resumed == {}
    assert step.retained == Retained(EAST, {("east", "orders"): 1_000})


def test_nothing_is_retained_without_a_window() -> None:
    step = retain(EAST | WEST, Retained(), {("west", "orders")}, 0, _clock(1_000))
    assert not step.retained and step.resumed == {}


@pytest.mark.parametrize(
    ("now", "resumes"),
    [
        (1_000 + 59_999, True),  # re-added within the window: resumes where it stopped
        (1_000 + 60_000, False),  # the window has ended: dropped
    ],
)
def test_re_added_within_the_window_resumes_else_starts_over(now: int, resumes: bool) -> None:
    retained = Retained(EAST, {("east", "orders"): 1_000})
    # Still removed at ``now``: kept inside the window, dropped at its end.
    kept = retain(WEST, retained, {("west", "orders")}, 60_000, _clock(now))
    assert kept.retained == (retained if resumes else Retained())
    # Re-added at ``now``.
    back = retain(
        WEST, kept.retained, {("west", "orders"), ("east", "orders")}, 60_000, _clock(now)
    )
    assert back.resumed == (EAST if resumes else {})
    assert not back.retained


def test_a_removed_topic_of_a_cluster_still_read_is_retained_alone() -> None:
    previous = EAST | {("east", "billing", 0): 5}
    step = retain(previous, Retained(), {("east", "orders")}, 60_000, _clock(7))
    assert step.retained == Retained({("east", "billing", 0): 5}, {("east", "billing"): 7})


def test_a_window_turned_off_drops_what_a_checkpoint_retained() -> None:
    retained = Retained(EAST, {("east", "orders"): 1_000})
    step = retain(WEST, retained, {("west", "orders"), ("east", "orders")}, 0, _clock(1_001))
    assert step.resumed == EAST  # re-added in the same step: still resumes
    dropped = retain(WEST, retained, {("west", "orders")}, 0, _clock(1_001))
    assert not dropped.retained


def test_the_block_round_trips_in_canonical_order() -> None:
    retained = Retained(EAST | WEST, {("west", "orders"): 5, ("east", "orders"): 4})
    block = encode(SourceOffset(retained=retained))["retained"]
    assert json.dumps(block) == (
        '{"east": {"orders": {"removedAtMs": 4, "offsets": {"0": 10, "1": 7}}}, '
        '"west": {"orders": {"removedAtMs": 5, "offsets": {"0": 3}}}}'
    )
    assert decode({"version": 1, "retained": block}).retained == retained
    assert decode({"version": 1, "clusters": {}}).retained == Retained()


@pytest.mark.parametrize(
    ("block", "names"),
    [
        ([], "expected a JSON object of cluster ids"),
        ({"east": 3}, "cluster 'east' must map topics"),
        ({"east": {"orders": {"offsets": {}}}}, "east/orders must be an object with 'removedAtMs'"),
        ({"east": {"orders": {"removedAtMs": -1}}}, "east/orders must be an object"),
        ({"east": {"orders": {"removedAtMs": True}}}, "east/orders must be an object"),
        ({"east": {"orders": {"removedAtMs": 1, "offsets": {"x": 1}}}}, "partition 'x'"),
        ({"east": {"orders": {"removedAtMs": 1, "offsets": {"0": -2}}}}, "east/orders/0"),
    ],
)
def test_a_malformed_block_names_what_is_wrong(block: Any, names: str) -> None:
    with pytest.raises(OffsetsError, match="retained") as info:
        decode({"version": 1, "retained": block})
    assert names in str(info.value)


def test_pairs_kept_without_expiry_stay_until_assigned_whatever_the_window() -> None:
    """Archived partitions of a hybrid read: retained without ``removedAtMs``, never dropped."""
    parked = Retained(EAST)
    for window in (0, 60_000):
        kept = retain(WEST, parked, {("west", "orders")}, window, _clock(10**12))
        assert kept.retained == parked and kept.resumed == {}
        back = retain(WEST, parked, {("west", "orders"), ("east", "orders")}, window, _clock(5))
        assert back.resumed == EAST and not back.retained


def test_at_the_switch_pairs_left_are_kept_without_expiry() -> None:
    step = retain(EAST | WEST, Retained(), {("west", "orders")}, 0, _clock(7), expiring=False)
    assert step.retained == Retained(EAST) and step.resumed == {}
    block = encode(SourceOffset(retained=step.retained))["retained"]
    assert json.dumps(block) == ('{"east": {"orders": {"offsets": {"0": 10, "1": 7}}}}')
    assert decode({"version": 1, "retained": block}).retained == step.retained


# ---------------------------------------------------------------- the start policy's step 1
def test_the_start_policy_resumes_retained_offsets_under_the_checkpoint_s() -> None:
    """Step 1 of the precedence: a retained offset of a pair assigned again is where its
    partition goes on (before any rule places it); the checkpoint's own offsets win over it."""
    options = parse_options({**BASE, "removedclusterretentionms": "60000"})
    policy = StartPolicy.of(options, clock=_clock(2_000))
    retained = Retained(EAST | {("west", "orders", 0): 1}, {("east", "orders"): 1_000})
    offsets, kept = policy.resume(
        SourceOffset(WEST, retained), {("west", "orders"), ("east", "orders")}
    )
    assert offsets == EAST | WEST  # west/orders/0 reads on at 3, not at its retained 1
    assert kept == Retained()
    offsets, kept = policy.resume(SourceOffset(EAST | WEST), {("west", "orders")})
    assert offsets == EAST | WEST and kept == Retained(EAST, {("east", "orders"): 2_000})


def test_the_start_policy_is_the_stream_s_rules() -> None:
    options = parse_options(BASE)
    policy = StartPolicy.of(options)
    assert policy.start == start_rule(options, batch=False) == policy.assigned
    assert policy.discovered == discovery_rule(options)
    assert policy.retention_ms == options.removed_cluster_retention_ms


@pytest.mark.parametrize(("committed", "starts"), [(None, 40), (25, 25), (90, 90)])
def test_a_newly_assigned_partition_starts_at_the_group_s_offset(
    committed: int | None, starts: int
) -> None:
    """Step 2: the group's committed offset wins over where the rules placed it (40)."""
    assert StartPolicy.group_start(40, committed) == starts
