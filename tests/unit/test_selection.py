"""The partition selections of a stream (option ``assignment``,
:mod:`~pyspark_dynamic_kafka.source.group.selection`): which one the options name, the partitions
:class:`AllPartitions` reads for ``streamIds`` and ``streamPattern``, where partitions start and
enter, and the steps of :class:`GroupAssigned` that need no group.

The metadata is a real file service on a ``tmp_path`` file; the cluster side is test_reconcile's
scripted lister (:class:`~tests.unit.test_reconcile._Lister`: exact earliest and latest offsets and
partitions that appear are not produced on demand on the test broker). What ``assignment=group``
decides with its consumer group (``initial``, ``select``, ``trim``, the listener warning) and
``commitOffsetsToKafka``'s commits need a real Kafka group coordinator: the integration tests
(tests/integration/test_group_assignment.py and the commit tests) cover them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.unit.test_reconcile import _Lister

from pyspark_dynamic_kafka.errors import OffsetsError, OptionsError
from pyspark_dynamic_kafka.source.config.options import parse_options
from pyspark_dynamic_kafka.source.config.parsed import SourceOptions
from pyspark_dynamic_kafka.source.contract import STATUS_KEY
from pyspark_dynamic_kafka.source.driver.cluster_view import ClusterView
from pyspark_dynamic_kafka.source.driver.modes import PartitionSelection
from pyspark_dynamic_kafka.source.driver.start_policy import StartPolicy
from pyspark_dynamic_kafka.source.executor.task import OffsetRange
from pyspark_dynamic_kafka.source.group.selection import (
    AllPartitions,
    GroupAssigned,
    partition_selection,
)

E0, E1, P0, W0 = (
    ("east", "orders", 0),
    ("east", "orders", 1),
    ("east", "pay", 0),
    ("west", "orders", 0),
)
DOCUMENT: dict[str, Any] = {
    "clusters": {
        "east": {"bootstrap.servers": "127.0.0.1:1"},
        "west": {"bootstrap.servers": "127.0.0.1:2"},
    },
    "streams": {
        "orders": [{"cluster": "east", "topics": ["orders"]}],
        "orders-eu": [{"cluster": "west", "topics": ["orders"]}],
        "pay": [{"cluster": "east", "topics": ["pay"]}],
    },
}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """The metadata file: streams ``orders`` (east), ``orders-eu`` (west) and ``pay`` (east)."""
    path = tmp_path / "streams.yaml"
    path.write_text(yaml.safe_dump(DOCUMENT))
    return path


@pytest.fixture
def lister() -> _Lister:
    """east/orders partitions 0 (offsets 2..10) and 1 (0..5), east/pay 0 (1..3), west/orders 0
    (0..7)."""
    lister = _Lister()
    lister.topics["east"] = {"orders": {0: (2, 10), 1: (0, 5)}, "pay": {0: (1, 3)}}
    lister.topics["west"] = {"orders": {0: (0, 7)}}
    return lister


def _options(path: Path, **extra: str) -> SourceOptions:
    options = {"metadataService": "file", "metadataService.path": str(path), **extra}
    if "streamPattern" not in extra:
        options.setdefault("streamIds", "orders")
    return parse_options(options)


def _initial(options: SourceOptions, lister: _Lister) -> dict[tuple[str, str, int], int]:
    policy = StartPolicy.of(options)
    selection = partition_selection(options, lister, policy)
    return selection.initial(ClusterView(options, lister), policy.start)


def test_the_assignment_option_names_the_selection(path: Path, lister: _Lister) -> None:
    every = _options(path)
    group = _options(path, assignment="group", **{"kafka.group.id": "billing"})
    assert type(partition_selection(every, lister, StartPolicy.of(every))) is AllPartitions
    assert type(partition_selection(group, lister, StartPolicy.of(group))) is GroupAssigned


@pytest.mark.parametrize(
    ("subscription", "offsets"),
    [
        ({"streamIds": "orders"}, {E0: 10, E1: 5}),
        ({"streamIds": "orders,pay"}, {E0: 10, E1: 5, P0: 3}),
        ({"streamPattern": "orders.*"}, {E0: 10, E1: 5, W0: 7}),
        ({"streamPattern": "nothing.*"}, {}),  # no stream matches (yet): nothing read, no error
    ],
)
def test_every_partition_of_the_streams_named_or_matched_starts_at_the_latest_offset(
    path: Path, lister: _Lister, subscription: dict[str, str], offsets: dict[object, int]
) -> None:
    assert _initial(_options(path, **subscription), lister) == offsets


def test_starting_options_place_the_first_offsets(path: Path, lister: _Lister) -> None:
    options = _options(
        path, startingOffsets='{"east": {"orders": {"1": 3}}}', streamPattern="orders.*"
    )
    del lister.topics["west"]  # an assigned topic that does not exist yet enters later
    # a partition the JSON does not name: discoveryStartingOffsets (earliest), as documented
    assert _initial(options, lister) == {E0: 2, E1: 3}
    assert _initial(_options(path, startingOffsets="earliest"), lister) == {E0: 2, E1: 0}


def test_an_unknown_stream_id_is_an_error_naming_the_known_ones(
    path: Path, lister: _Lister
) -> None:
    with pytest.raises(OptionsError) as info:
        _initial(_options(path, streamIds="ordrs"), lister)
    assert str(info.value) == (
        "Option 'streamIds' names unknown stream id(s) ordrs (value 'ordrs'). Known stream ids: "
        "orders, orders-eu, pay."
    )


def test_a_starting_offset_for_a_partition_not_read_fails_the_start(
    path: Path, lister: _Lister
) -> None:
    options = _options(path, startingOffsets='{"east": {"orders": {"5": 1}}}')
    with pytest.raises(OffsetsError) as info:
        _initial(options, lister)
    assert str(info.value) == (
        "Option 'startingOffsets' names partition 5 of east/orders, which has partitions 0-1 now. "
        "The query reads east/orders (partitions 0-1). Fix the JSON (nothing was read); "
        "partitions that appear later start at discoveryStartingOffsets, not at a position this "
        "option names."
    )


@pytest.mark.parametrize(("discovery", "entered"), [("earliest", 4), ("latest", 9)])
def test_select_advances_known_partitions_and_enters_new_ones_at_discovery_starting_offsets(
    path: Path, lister: _Lister, discovery: str, entered: int
) -> None:
    options = _options(path, discoveryStartingOffsets=discovery)
    view = ClusterView(options, lister)
    selection = partition_selection(options, lister, StartPolicy.of(options))
    lister.topics["east"]["orders"][2] = (4, 9)  # a partition added while the query runs
    state = selection.select(view, {E0: 6, E1: 5}, view.subscription())
    assert state.offsets == {E0: 10, E1: 5, ("east", "orders", 2): entered}
    assert state.entered == {("east", "orders", 2): entered}


def test_select_drops_the_partitions_of_a_stream_no_longer_matched(
    path: Path, lister: _Lister
) -> None:
    options = _options(path, streamPattern="orders.*")
    view = ClusterView(options, lister)
    selection = partition_selection(options, lister, StartPolicy.of(options))
    previous = {E0: 3, E1: 4, W0: 1}
    document = {**DOCUMENT, "streams": {"orders": DOCUMENT["streams"]["orders"]}}
    path.write_text(yaml.safe_dump(document))  # orders-eu removed from the metadata
    state = selection.select(view, previous, view.subscription())
    assert state.offsets == {E0: 10, E1: 5}
    assert state.losses == []


def test_all_partitions_keeps_the_default_steps(path: Path, lister: _Lister) -> None:
    options = _options(path)
    selection = partition_selection(options, lister, StartPolicy.of(options))
    ranges = [OffsetRange("east", "orders", 0, 2, 10)]
    assert selection.settle(None, {E0: 2}, {E0: 2, E1: 0}) is None  # waits for more data
    assert selection.settle({E0: 5}, {E0: 2}, {E0: 10}) == {E0: 5}
    assert selection.trim(ranges, {}) == ranges
    status: dict[str, dict[str, object]] = {STATUS_KEY: {}}
    selection.report(status)
    assert status == {STATUS_KEY: {}}
    selection.available_now()  # AvailableNow works with assignment=all
    selection.submit({E0: 5}, {})  # commitOffsetsToKafka off: nothing is committed, no client


def _group(path: Path, lister: _Lister) -> PartitionSelection:
    # built through partition_selection: mypy takes the protocol's empty steps for abstract ones
    options = _options(path, assignment="group", **{"kafka.group.id": "billing"})
    selection = partition_selection(options, lister, StartPolicy.of(options))
    assert type(selection) is GroupAssigned
    return selection


def test_a_group_member_never_waits_when_its_partitions_change(path: Path, lister: _Lister) -> None:
    group = _group(path, lister)
    # partitions handed over or sitting out: the micro-batch ends where they are
    assert group.settle(None, {E0: 2, E1: 0}, {E0: 4}) == {E0: 4}
    assert group.settle(None, {E0: 2}, {E0: 4, E1: 0}) == {E0: 4, E1: 0}
    # the same partitions: admission's answer stands (waiting or not)
    assert group.settle(None, {E0: 2}, {E0: 4}) is None
    assert group.settle({E0: 3}, {E0: 2}, {E0: 4}) == {E0: 3}


def test_a_group_member_refuses_trigger_available_now(path: Path, lister: _Lister) -> None:
    with pytest.raises(OptionsError) as info:
        _group(path, lister).available_now()
    assert str(info.value).startswith(
        "Option 'assignment' (group) does not work with Trigger.AvailableNow: the partitions a "
        "member owns change with the group, so 'what is available now' has no end."
    )
    assert "read with assignment=all." in str(info.value)


def test_a_group_member_that_never_joined_reports_and_stops_without_a_group(
    path: Path, lister: _Lister
) -> None:
    group = _group(path, lister)
    status: dict[str, dict[str, object]] = {STATUS_KEY: {"assignment": {}}}
    group.report(status)  # no handoff inbox yet: nothing to name
    assert status == {STATUS_KEY: {"assignment": {}}}
    group.stop()  # no member to shut down
