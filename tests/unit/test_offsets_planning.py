"""Offset JSON (canonical, versioned, no properties) and range planning."""

from __future__ import annotations

import itertools
import json
import pickle

import pytest

from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.source.checkpoint import SourceOffset, decode, encode
from pyspark_dynamic_kafka.source.driver.reconcile import Loss, offsets_went_back
from pyspark_dynamic_kafka.source.driver.task_packing import (
    SPLIT_FROM_RECORDS,
    offset_ranges,
    pack_tasks,
    task_properties,
)
from pyspark_dynamic_kafka.source.executor.task import OffsetRange, ReadSettings, ReadTask

SETTINGS = ReadSettings(1000, 1000, frozenset({"east", "west"}))


def test_encoding_is_canonical_whatever_the_insertion_order() -> None:
    a = {("west", "b", 10): 5, ("east", "a", 2): 1, ("east", "a", 10): 3}
    b = dict(reversed(list(a.items())))
    assert json.dumps(encode(SourceOffset(a))) == json.dumps(encode(SourceOffset(b)))
    encoded = encode(SourceOffset(a))
    assert list(encoded["clusters"]) == ["east", "west"]
    assert list(encoded["clusters"]["east"]["a"]) == ["2", "10"]
    assert decode(json.loads(json.dumps(encoded))).offsets == a


def test_decode_rejects_unknown_version_and_garbage() -> None:
    with pytest.raises(OffsetsError, match="version"):
        decode({"version": 99, "clusters": {}})
    with pytest.raises(OffsetsError, match=r"partition .x. of east/t"):
        decode({"version": 1, "clusters": {"east": {"t": {"x": 1}}}})


def test_ranges_skip_new_and_backwards_partitions() -> None:
    start = {("east", "t", 0): 5, ("east", "t", 1): 9}
    end = {("east", "t", 0): 8, ("east", "t", 1): 7, ("west", "t", 0): 4}
    assert offset_ranges(start, end) == [OffsetRange("east", "t", 0, 5, 8)]


def test_plan_packs_small_ranges_into_few_tasks() -> None:
    size = SPLIT_FROM_RECORDS // 100
    ranges = [OffsetRange("east", "t", p, 0, size) for p in range(100)]
    props = {"east": FrozenProperties({"bootstrap.servers": "h:1"})}
    tasks = pack_tasks(ranges, props, SETTINGS)
    assert len(tasks) == 2
    assert sorted(r.partition for t in tasks for r in t.ranges) == list(range(100))
    assert all(len(t.ranges) == 50 for t in tasks)


def test_a_small_micro_batch_is_one_task() -> None:
    # a second task costs Spark more than it saves below SPLIT_FROM_RECORDS records
    size = SPLIT_FROM_RECORDS // 100
    ranges = [OffsetRange("east", "t", p, 0, size) for p in range(99)]
    ranges.append(OffsetRange("west", "t", 0, 0, size - 1))
    tasks = pack_tasks(ranges, PROPS, SETTINGS)
    assert len(tasks) == 1
    assert tasks[0].ranges == tuple(sorted(ranges, key=lambda r: (-r.size, r.cluster, r.partition)))
    assert set(tasks[0].properties) == {"east", "west"}


def test_plan_splits_large_volume_and_balances() -> None:
    ranges = [OffsetRange("east", "t", p, 0, 600_000) for p in range(4)]
    ranges.append(OffsetRange("west", "u", 0, 0, 100))
    props = {
        "east": FrozenProperties({"bootstrap.servers": "h:1"}),
        "west": FrozenProperties({"bootstrap.servers": "h:2", "sasl.password": "pw"}),
    }
    tasks = pack_tasks(ranges, props, SETTINGS, target_records=1_000_000)
    assert len(tasks) == 3
    task_of_west = [t for t in tasks if any(r.cluster == "west" for r in t.ranges)]
    assert len(task_of_west) == 1
    assert set(task_of_west[0].properties) >= {"west"}
    restored = pickle.loads(pickle.dumps(tasks))
    assert [t.ranges for t in restored] == [t.ranges for t in tasks]
    assert "pw" not in repr(tasks)


def test_plan_of_nothing_is_empty() -> None:
    assert pack_tasks([], {}, SETTINGS) == []


def _covered(tasks: list[ReadTask]) -> dict[tuple[str, str, int], list[tuple[int, int]]]:
    spans: dict[tuple[str, str, int], list[tuple[int, int]]] = {}
    for task in tasks:
        for r in task.ranges:
            spans.setdefault((r.cluster, r.topic, r.partition), []).append((r.start, r.end))
    return {k: sorted(v) for k, v in spans.items()}


def _contiguous(spans: list[tuple[int, int]]) -> tuple[int, int]:
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end == start
    return spans[0][0], spans[-1][1]


PROPS = {
    "east": FrozenProperties({"bootstrap.servers": "h:1"}),
    "west": FrozenProperties({"bootstrap.servers": "h:2"}),
}


def test_min_partitions_splits_one_large_range() -> None:
    tasks = pack_tasks([OffsetRange("east", "t", 0, 100, 200)], PROPS, SETTINGS, min_partitions=4)
    assert len(tasks) == 4
    assert sorted(sum(r.size for r in t.ranges) for t in tasks) == [25, 25, 25, 25]
    assert _contiguous(_covered(tasks)[("east", "t", 0)]) == (100, 200)


def test_max_records_per_partition_caps_every_task_and_merges_small_ranges() -> None:
    ranges = [
        OffsetRange("east", "t", 0, 0, 50),
        OffsetRange("east", "t", 1, 10, 40),
        OffsetRange("west", "t", 0, 5, 25),
    ]
    tasks = pack_tasks(ranges, PROPS, SETTINGS, max_records_per_partition=40)
    assert len(tasks) == 3  # ceil(100 / 40)
    assert all(sum(r.size for r in t.ranges) <= 40 for t in tasks)
    covered = _covered(tasks)
    assert _contiguous(covered[("east", "t", 0)]) == (0, 50)
    assert _contiguous(covered[("east", "t", 1)]) == (10, 40)
    assert _contiguous(covered[("west", "t", 0)]) == (5, 25)
    for task in tasks:  # one piece per partition per task: the reader keys ranges by partition
        keys = [(r.cluster, r.topic, r.partition) for r in task.ranges]
        assert len(keys) == len(set(keys))
        assert set(task.properties) == {r.cluster for r in task.ranges}


def test_splitting_options_never_make_a_task_per_tiny_range() -> None:
    ranges = [OffsetRange("east", "t", p, 0, 3) for p in range(200)]
    tasks = pack_tasks(ranges, PROPS, SETTINGS, max_records_per_partition=10_000, min_partitions=2)
    assert len(tasks) == 2
    assert sum(len(t.ranges) for t in tasks) == 200


def test_min_partitions_never_exceeds_the_records() -> None:
    tasks = pack_tasks([OffsetRange("east", "t", 0, 0, 3)], PROPS, SETTINGS, min_partitions=10)
    assert len(tasks) == 3


def test_backwards_partitions_read_from_their_rewound_start() -> None:
    start = {("east", "t", 0): 50, ("east", "t", 1): 9}
    end = {("east", "t", 0): 8, ("east", "t", 1): 12}
    assert offsets_went_back(start, end) == [
        Loss(("east", "t", 0), "its latest offset went back", 50, 8)
    ]
    assert offset_ranges(start, end, rewound={("east", "t", 0): 2}) == [
        OffsetRange("east", "t", 0, 2, 8),
        OffsetRange("east", "t", 1, 9, 12),
    ]
    # Not known (e.g. after a restart): from 0, the executor skips what is gone.
    assert offset_ranges(start, end, rewound={})[0] == OffsetRange("east", "t", 0, 0, 8)


def test_task_properties_generate_a_group_id_unless_one_is_set() -> None:
    props = task_properties(
        {
            "east": {"bootstrap.servers": "h:1"},
            "west": {"bootstrap.servers": "h:2", "group.id": "g"},
        },
        "spark-dynamic-kafka-abc",
    )
    assert props["east"]["group.id"] == "spark-dynamic-kafka-abc"
    assert props["west"]["group.id"] == "g"
