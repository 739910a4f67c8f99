"""Where partitions start and end: option parsing, the precedence rules, and the resolver.

The admin client is scripted: a timestamp lookup answering -1 ("no record at or after it") cannot
be produced on the test broker (Tansu answers 0 for an empty partition).
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from tests.unit.conftest import BASE, FakeAdmin

from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.metadata.model import StartingPosition
from pyspark_dynamic_kafka.offset_spec import (
    EARLIEST_POSITION,
    LATEST_POSITION,
    NoMatch,
    Position,
    PositionKind,
    PositionSpec,
)
from pyspark_dynamic_kafka.source.config.options import parse_options
from pyspark_dynamic_kafka.source.driver.discovery import ClusterSubscription
from pyspark_dynamic_kafka.source.driver.listing import OffsetLister
from pyspark_dynamic_kafka.source.driver.start_policy import (
    LATEST_RULE,
    PositionRule,
    discovery_rule,
    end_rule,
    resolve_positions,
    start_rule,
)

TP = tuple[str, int]
KEY = ("east", "orders", 0)
OTHER = ("east", "orders", 1)


def offset(value: int) -> Position:
    return Position(PositionKind.OFFSET, value)


def stamp(value: int) -> Position:
    return Position(PositionKind.TIMESTAMP, value)


NAMED = PositionSpec({KEY: offset(5)}, None, "startingOffsets")
EVERYWHERE = PositionSpec({}, stamp(99), "startingTimestamp")
NOTHING = PositionSpec({}, None, "")


@pytest.mark.parametrize(
    ("spec", "key", "metadata", "admits_metadata", "expected"),
    [
        # a position the options name for this very partition wins over everything
        (NAMED, KEY, StartingPosition("timestamp", 1234), True, offset(5)),
        # then the metadata's startingOffsets of a cluster read for the first time
        (NAMED, OTHER, StartingPosition("timestamp", 1234), True, stamp(1234)),
        (EVERYWHERE, KEY, StartingPosition("latest"), True, LATEST_POSITION),
        # then the options' position for every partition, then the fallback
        (EVERYWHERE, KEY, None, True, stamp(99)),
        (NAMED, OTHER, None, True, EARLIEST_POSITION),
        (NOTHING, KEY, None, True, EARLIEST_POSITION),
        # a rule that does not admit the metadata (ends, the AvailableNow target) ignores it
        (EVERYWHERE, KEY, StartingPosition("latest"), False, stamp(99)),
        (NOTHING, KEY, StartingPosition("latest"), False, EARLIEST_POSITION),
    ],
)
def test_precedence(
    spec: PositionSpec,
    key: tuple[str, str, int],
    metadata: Position | None,
    admits_metadata: bool,
    expected: Position,
) -> None:
    rule = PositionRule(spec, EARLIEST_POSITION, NoMatch.ERROR, admits_metadata)
    assert rule.position(key, metadata) == expected


def test_metadata_position_is_attributed_to_its_cluster() -> None:
    rule = PositionRule(NOTHING, EARLIEST_POSITION, NoMatch.ERROR)
    position = rule.position(KEY, StartingPosition("timestamp", 7))
    assert position.origin == "the metadata's startingOffsets of cluster 'east'"
    assert type(position) is Position


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, PositionSpec({}, LATEST_POSITION, "startingOffsets")),
        ({"startingoffsets": "Earliest "}, PositionSpec({}, EARLIEST_POSITION, "startingOffsets")),
        (
            {"startingoffsets": '{"east": {"orders": {"0": 23, "1": -2, "2": -1}}}'},
            PositionSpec(
                {KEY: offset(23), OTHER: EARLIEST_POSITION, ("east", "orders", 2): LATEST_POSITION},
                None,
                "startingOffsets",
            ),
        ),
        (
            {
                "startingoffsetsbytimestamp": '{"east": {"orders": {"0": 5}}}',
                "startingoffsets": "earliest",
            },
            PositionSpec({KEY: stamp(5)}, None, "startingOffsetsByTimestamp"),
        ),
        (
            {
                "startingtimestamp": "7",
                "startingoffsetsbytimestamp": '{"east": {"orders": {"0": 5}}}',
                "startingoffsets": "earliest",
            },
            PositionSpec({}, stamp(7), "startingTimestamp"),
        ),
    ],
)
def test_option_precedence(given: dict[str, str], expected: PositionSpec) -> None:
    assert parse_options({**BASE, **given}, mode="stream").starting == expected


def test_rules_of_the_source() -> None:
    stream = parse_options({**BASE, "discoverystartingoffsets": "latest"}, mode="stream")
    assert start_rule(stream, batch=False).fallback == LATEST_POSITION  # discoveryStartingOffsets
    assert start_rule(stream, batch=False).options is stream.starting
    assert discovery_rule(stream).options == NOTHING
    assert discovery_rule(stream).fallback.origin == "discoveryStartingOffsets"
    strategy = {**BASE, "startingoffsetsbytimestampstrategy": "latest"}
    assert discovery_rule(parse_options(strategy)).no_match is NoMatch.LATEST
    batch = parse_options({**BASE, "endingtimestamp": "9"}, mode="batch")
    assert start_rule(batch, batch=True).fallback == EARLIEST_POSITION
    ending = end_rule(batch)
    assert (ending.options.default, ending.no_match, ending.use_metadata) == (
        stamp(9),
        NoMatch.LATEST,
        False,
    )
    assert (LATEST_RULE.fallback, LATEST_RULE.use_metadata) == (LATEST_POSITION, False)


def _resolve(
    named: Mapping[TP, Position],
    latest: Mapping[TP, int],
    no_match: NoMatch = NoMatch.ERROR,
    starting: StartingPosition | None = None,
    first_read: bool = True,
) -> tuple[dict[TP, int], FakeAdmin]:
    admin = FakeAdmin(
        earliest=lambda tp: 2,
        latest=lambda tp: 50,
        found=lambda tp, ms: -1 if ms > 1000 else 60 if ms == 999 else 7,
    )
    lister = OffsetLister(parse_options(BASE), admins=lambda cluster_id, properties: admin)  # type: ignore[arg-type,return-value]
    props = FrozenProperties({"bootstrap.servers": "h:1", "isolation.level": "read_committed"})
    cluster = ClusterSubscription(props, frozenset({"t"}), (("t", starting),) if starting else ())
    spec = PositionSpec({("east", t, p): v for (t, p), v in named.items()}, None, "")
    rule = PositionRule(spec, LATEST_POSITION, no_match)
    return resolve_positions(lister, "east", cluster, latest, rule, first_read), admin


@pytest.mark.parametrize(
    ("position", "expected"),
    [
        (EARLIEST_POSITION, 2),
        (LATEST_POSITION, 50),
        (offset(23), 23),
        (stamp(5), 7),
        (stamp(999), 50),  # found past the latest offset: clamped
    ],
)
def test_every_kind_of_position_resolves(position: Position, expected: int) -> None:
    offsets, admin = _resolve({("t", 0): position}, {("t", 0): 50})
    assert offsets == {("t", 0): expected}
    if position.kind is PositionKind.TIMESTAMP:
        assert admin.read_committed == [True]  # read_committed lookups for a read_committed cluster


def test_timestamp_without_record_fails_or_starts_at_latest() -> None:
    named = {
        ("t", 0): Position(PositionKind.TIMESTAMP, 5000, "startingTimestamp"),
        ("t", 1): stamp(5),
    }
    latest = {("t", 0): 40, ("t", 1): 40}
    with pytest.raises(OffsetsError) as info:
        _resolve(named, latest, NoMatch.ERROR)
    assert "east/t/0 (startingTimestamp 5000)" in str(info.value)
    assert "startingOffsetsByTimestampStrategy=latest" in str(info.value)
    assert _resolve(named, latest, NoMatch.LATEST)[0] == {("t", 0): 40, ("t", 1): 7}


@pytest.mark.parametrize(("first_read", "expected"), [(True, 2), (False, 50)])
def test_metadata_position_applies_when_the_cluster_is_read_first(
    first_read: bool, expected: int
) -> None:
    earliest = StartingPosition("earliest")
    offsets, _ = _resolve({}, {("t", 0): 50}, starting=earliest, first_read=first_read)
    assert offsets == {("t", 0): expected}
