"""The plan of a batch read (:func:`plan_batch_read`): every partition once, from its start to its
end, the ranges exact, the errors naming partition, offsets and options.

The metadata is a real file service on a ``tmp_path`` file. The cluster side is test_reconcile's
scripted lister (:class:`~tests.unit.test_reconcile._Lister`), put in place of the
:class:`~pyspark_dynamic_kafka.source.driver.listing.OffsetLister` that ``plan_batch_read``
builds (exact earliest offsets, an ending timestamp without a record and a cluster that cannot be
listed are not produced on demand on the test broker; tests/integration reads real brokers).
An archive is :class:`_Archive`, a stand-in: a real hybrid archive needs archive files and a
broker to hand over to.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from tests.unit.test_reconcile import _Lister, orders_on_two_clusters, write_orders

from pyspark_dynamic_kafka.errors import KafkaClientError, OffsetsError
from pyspark_dynamic_kafka.offset_spec import PartitionKey
from pyspark_dynamic_kafka.source.config.options import parse_options
from pyspark_dynamic_kafka.source.driver import batch_plan
from pyspark_dynamic_kafka.source.driver.batch_plan import plan_batch_read
from pyspark_dynamic_kafka.source.driver.modes import NoArchive
from pyspark_dynamic_kafka.source.driver.start_policy import PositionRule, archive_rule
from pyspark_dynamic_kafka.source.executor.task import ReadTask

Ranges = dict[PartitionKey, tuple[int, int]]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """The metadata file: stream ``orders`` on east (orders and the absent topic ``gone``) and
    west (orders)."""
    path = tmp_path / "streams.yaml"
    write_orders(
        path,
        {"cluster": "east", "topics": ["orders", "gone"]},
        {"cluster": "west", "topics": ["orders"]},
    )
    return path


@pytest.fixture
def lister(monkeypatch: pytest.MonkeyPatch) -> _Lister:
    """The lister the read plans with: :func:`~tests.unit.test_reconcile.orders_on_two_clusters`
    (east/orders partitions 0, offsets 2..10, and 1, 0..5; west/orders partition 0, 0..7)."""
    lister = orders_on_two_clusters()
    monkeypatch.setattr(batch_plan, "OffsetLister", lambda options: lister)
    return lister


def _plan(path: Path, archive: Any = None, **extra: str) -> list[Any]:
    options = {
        "metadataService": "file",
        "metadataService.path": str(path),
        "streamIds": "orders",
        **extra,
    }
    return plan_batch_read(parse_options(options, mode="batch"), archive or NoArchive())


def _ranges(tasks: list[Any]) -> Ranges:
    """Each partition's range (a batch reads every partition once)."""
    ranges: Ranges = {}
    for task in tasks:
        assert isinstance(task, ReadTask)
        for r in task.ranges:
            assert (r.cluster, r.topic, r.partition) not in ranges
            ranges[(r.cluster, r.topic, r.partition)] = (r.start, r.end)
    return ranges


def test_by_default_every_partition_is_read_from_earliest_to_latest(
    path: Path, lister: _Lister, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, "pyspark_dynamic_kafka.source.driver.batch_plan"):
        tasks = _plan(path)
    assert _ranges(tasks) == {
        ("east", "orders", 0): (2, 10),
        ("east", "orders", 1): (0, 5),
        ("west", "orders", 0): (0, 7),
    }
    assert len(tasks) == 1  # small ranges: one task
    assert "Cluster 'east' has no topic(s) ['gone']" in caplog.messages
    assert "Batch read of 3 offset range(s) in 1 task(s)" in caplog.messages


def test_named_offsets_bound_the_ranges_and_an_end_past_the_latest_reads_up_to_it(
    path: Path, lister: _Lister, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, "pyspark_dynamic_kafka.source.driver.batch_plan"):
        tasks = _plan(
            path,
            startingOffsets='{"east": {"orders": {"1": 3}}, "west": {"orders": {"0": 7}}}',
            endingOffsets='{"east": {"orders": {"0": 20, "1": 4}}}',
        )
    # west/orders/0 starts at its latest offset (7): nothing to read, no range
    assert _ranges(tasks) == {("east", "orders", 0): (2, 10), ("east", "orders", 1): (3, 4)}
    assert "endingOffsets of east/orders/0 is 20, past its latest offset 10: reading up to 10." in [
        r.getMessage() for r in caplog.records
    ]


def test_a_start_after_the_end_names_partition_offsets_and_options(
    path: Path, lister: _Lister
) -> None:
    with pytest.raises(OffsetsError) as info:
        _plan(
            path,
            startingOffsets='{"east": {"orders": {"1": 5}}}',
            endingOffsets='{"east": {"orders": {"1": 4}}}',
        )
    assert str(info.value) == (
        "The start of east/orders/1 (offset 5, from startingOffsets) is after its end (offset 4, "
        "from endingOffsets). Fix the starting or ending options."
    )


def test_a_start_past_the_latest_offset_is_after_the_default_end(
    path: Path, lister: _Lister
) -> None:
    with pytest.raises(OffsetsError) as info:
        _plan(path, startingOffsets='{"east": {"orders": {"1": 9}}}')
    assert str(info.value) == (
        "The start of east/orders/1 (offset 9, from startingOffsets) is after its end (offset 5, "
        "from endingOffsets). Fix the starting or ending options."
    )


def test_a_start_below_the_earliest_offset_is_planned_as_named(path: Path, lister: _Lister) -> None:
    # the driver plans it as named; the executor decides on the records gone (failOnDataLoss)
    tasks = _plan(path, startingOffsets='{"east": {"orders": {"0": 1}}}')
    assert _ranges(tasks)[("east", "orders", 0)] == (1, 10)


def test_an_empty_partition_or_an_empty_range_plans_no_task(path: Path, lister: _Lister) -> None:
    lister.topics["east"]["orders"] = {0: (10, 10), 1: (5, 5)}
    lister.topics["west"]["orders"] = {0: (3, 3)}
    assert _plan(path) == []


def test_an_ending_timestamp_ends_where_its_record_is_else_at_the_latest(
    path: Path, lister: _Lister
) -> None:
    lister.stamps[("east", "orders", 0)] = {1_700_000_000_000: 6}  # the others: no record
    tasks = _plan(path, endingTimestamp="1700000000000")
    assert _ranges(tasks) == {
        ("east", "orders", 0): (2, 6),
        ("east", "orders", 1): (0, 5),
        ("west", "orders", 0): (0, 7),
    }


def test_an_option_naming_a_partition_not_read_fails_the_read(path: Path, lister: _Lister) -> None:
    with pytest.raises(OffsetsError) as info:
        _plan(path, endingOffsets='{"east": {"orders": {"7": 4}}}')
    message = str(info.value)
    assert message.startswith("Option 'endingOffsets' names ")
    assert "partition 7 of east/orders, which has partitions 0-1 now." in message


def test_a_cluster_that_cannot_be_listed_fails_the_read(path: Path, lister: _Lister) -> None:
    lister.down.add("west")
    with pytest.raises(KafkaClientError) as info:
        _plan(path)
    assert "Cluster 'west': could not list topics" in str(info.value)


class _Archive(NoArchive):
    """A stand-in for a hybrid archive (no real archive without archive files): it hands
    east/orders/0 over to Kafka at ``switch`` and has one task of its own."""

    def __init__(self, switch: int) -> None:
        self.switch = switch

    def start_rule(self, rule: PositionRule) -> PositionRule:
        return archive_rule(rule, {("east", "orders", 0): self.switch}, None, "the archive")

    def covers(self, key: PartitionKey) -> bool:
        return key == ("east", "orders", 0)

    def tasks(self, start: Any, end: Any) -> list[Any]:
        assert (start, end) == (None, None)  # a batch read: all of the archive
        return ["archive task"]


def test_the_archive_comes_first_and_kafka_from_its_hand_over(path: Path, lister: _Lister) -> None:
    tasks = _plan(path, archive=_Archive(switch=8))
    assert tasks[0] == "archive task"
    assert _ranges(tasks[1:]) == {
        ("east", "orders", 0): (8, 10),
        ("east", "orders", 1): (0, 5),
        ("west", "orders", 0): (0, 7),
    }


def test_an_archive_reaching_past_the_end_reads_nothing_of_it_from_kafka(
    path: Path, lister: _Lister
) -> None:
    tasks = _plan(path, archive=_Archive(switch=12), endingOffsets='{"east": {"orders": {"0": 9}}}')
    assert tasks[0] == "archive task"
    assert _ranges(tasks[1:]) == {("east", "orders", 1): (0, 5), ("west", "orders", 0): (0, 7)}
