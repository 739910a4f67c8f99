"""Offset JSON (canonical, versioned, no properties) and range planning."""

from __future__ import annotations

import json
import pickle

import pytest

from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.source.offsets import decode_offsets, encode_offsets
from pyspark_dynamic_kafka.source.planning import (
    OffsetRange,
    ReadSettings,
    offset_ranges,
    plan_tasks,
)

SETTINGS = ReadSettings(1000, 1000, frozenset({"east", "west"}))


def test_encoding_is_canonical_whatever_the_insertion_order() -> None:
    a = {("west", "b", 10): 5, ("east", "a", 2): 1, ("east", "a", 10): 3}
    b = dict(reversed(list(a.items())))
    assert json.dumps(encode_offsets(a)) == json.dumps(encode_offsets(b))
    encoded = encode_offsets(a)
    assert list(encoded["clusters"]) == ["east", "west"]
    assert list(encoded["clusters"]["east"]["a"]) == ["2", "10"]
    assert decode_offsets(json.loads(json.dumps(encoded))) == a


def test_decode_rejects_unknown_version_and_garbage() -> None:
    with pytest.raises(OffsetsError, match="version"):
        decode_offsets({"version": 99, "clusters": {}})
    with pytest.raises(OffsetsError, match=r"partition .x. of east/t"):
        decode_offsets({"version": 1, "clusters": {"east": {"t": {"x": 1}}}})


def test_ranges_skip_new_and_backwards_partitions() -> None:
    start = {("east", "t", 0): 5, ("east", "t", 1): 9}
    end = {("east", "t", 0): 8, ("east", "t", 1): 7, ("west", "t", 0): 4}
    assert offset_ranges(start, end) == [OffsetRange("east", "t", 0, 5, 8)]


def test_plan_packs_small_ranges_into_few_tasks() -> None:
    ranges = [OffsetRange("east", "t", p, 0, 10) for p in range(100)]
    props = {"east": FrozenProperties({"bootstrap.servers": "h:1"})}
    tasks = plan_tasks(ranges, props, SETTINGS)
    assert len(tasks) == 2
    assert sorted(r.partition for t in tasks for r in t.ranges) == list(range(100))
    assert all(len(t.ranges) == 50 for t in tasks)


def test_plan_splits_large_volume_and_balances() -> None:
    ranges = [OffsetRange("east", "t", p, 0, 600_000) for p in range(4)]
    ranges.append(OffsetRange("west", "u", 0, 0, 100))
    props = {
        "east": FrozenProperties({"bootstrap.servers": "h:1"}),
        "west": FrozenProperties({"bootstrap.servers": "h:2", "sasl.password": "pw"}),
    }
    tasks = plan_tasks(ranges, props, SETTINGS, target_records=1_000_000)
    assert len(tasks) == 3
    task_of_west = [t for t in tasks if any(r.cluster == "west" for r in t.ranges)]
    assert len(task_of_west) == 1
    assert set(task_of_west[0].properties) >= {"west"}
    restored = pickle.loads(pickle.dumps(tasks))
    assert [t.ranges for t in restored] == [t.ranges for t in tasks]
    assert "pw" not in repr(tasks)


def test_plan_of_nothing_is_empty() -> None:
    assert plan_tasks([], {}, SETTINGS) == []
