"""Where each partition starts (and, for a batch read, ends): from options and metadata to offsets.

The vocabulary (:class:`~pyspark_dynamic_kafka.position.Position`, its kinds, ``NoMatch``,
``PositionSpec``) is in :mod:`pyspark_dynamic_kafka.position`; this module decides and resolves.

1. **Options** are parsed (each by its declared parser: :func:`parse_offsets_spec`,
   :func:`parse_timestamps_spec`, :func:`parse_timestamp`) into ``PositionSpec`` values, and
   :func:`position_spec` picks the winner: ``startingTimestamp`` wins over
   ``startingOffsetsByTimestamp``, which wins over ``startingOffsets`` (the ``ending*`` options of
   a batch read likewise).
2. **A rule** (:class:`PositionRule`) places a partition the query has not read yet:

   a. the position the options name for this very partition (JSON options);
   b. else, when the query reads the partition's cluster for the first time and the rule admits
      it, the metadata entry's ``startingOffsets`` for that cluster and topic;
   c. else the options' position for every partition (``earliest``, ``latest``, a timestamp);
   d. else the rule's fallback.

   The source uses four rules: :func:`start_rule` (a stream's initial offset, a batch read's
   start), :func:`discovery_rule` (partitions that appear while a stream runs: the options no
   longer apply, ``discoveryStartingOffsets`` is the fallback), :func:`end_rule` (a batch read's
   end) and :data:`LATEST_RULE` (the ``Trigger.AvailableNow`` target).
3. **The resolver** (:func:`resolve_positions`, the one function stream start, discovery and batch
   reads call) turns the positions of one cluster's partitions into offsets, one request per kind:
   ``earliest`` is listed, ``latest`` is the offset just listed, an offset is taken as it is, and a
   timestamp becomes the first offset whose record is at or after it (never past the latest
   offset); when there is none the rule's ``NoMatch`` fails or takes the latest offset.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.kafka.admin import NO_OFFSET
from pyspark_dynamic_kafka.optionspec import did_you_mean
from pyspark_dynamic_kafka.position import (
    EARLIEST_POSITION,
    LATEST_POSITION,
    NoMatch,
    PartitionKey,
    Position,
    PositionKind,
    PositionSpec,
)
from pyspark_dynamic_kafka.source.discovery import ClusterAssignment
from pyspark_dynamic_kafka.source.listing import OffsetLister, TopicPartitionKey, read_committed
from pyspark_dynamic_kafka.source.offsets import (
    EARLIEST,
    LATEST,
    MAX_OFFSET,
    OFFSET_MEANING,
    partition_map,
)
from pyspark_dynamic_kafka.source.settings import SourceOptions

__all__ = [
    "LATEST_RULE",
    "PositionRule",
    "discovery_rule",
    "end_rule",
    "parse_offsets_spec",
    "parse_timestamp",
    "parse_timestamps_spec",
    "position_spec",
    "resolve_positions",
    "start_rule",
]

_log = logging.getLogger(__name__)

#: No option places any partition (discovery, the AvailableNow target).
_NO_OPTION = PositionSpec({}, None, "")


# ------------------------------------------------------------------------------- 1. options
def _document(value: str, option: str, example: str) -> object:
    hint = ""
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        reason = f"{exc.msg} at column {exc.colno}"
        if not value.lstrip().startswith(("{", "[")):  # a word, e.g. 'earlist'
            hint = did_you_mean(value.strip(), (PositionKind.EARLIEST, PositionKind.LATEST))
    except RecursionError:
        reason = "nested too deeply"
    except ValueError as exc:  # a number of over 4,300 digits
        reason = str(exc)
    raise OffsetsError(
        f"Invalid value {value!r} for option '{option}': expected {example} ({reason}).{hint}"
    )


def _of_offset(offset: int, origin: str) -> Position:
    """The position an offset JSON gives: -2 earliest, -1 latest, otherwise that offset."""
    if offset == EARLIEST:
        return EARLIEST_POSITION.with_origin(origin)
    if offset == LATEST:
        return LATEST_POSITION.with_origin(origin)
    return Position(PositionKind.OFFSET, offset, origin)


def parse_offsets_spec(value: str, option: str) -> PositionSpec:
    """Parse ``earliest``, ``latest`` or ``{"cluster": {"topic": {"0": 23}}}`` (-2/-1 allowed).

    A JSON spec has no default: partitions it does not name take the rule's fallback.

    Raises
    ------
    OffsetsError
        Naming the option and the value.
    """
    text = value.strip()
    lowered = text.lower()
    if lowered in (PositionKind.EARLIEST, PositionKind.LATEST):
        return PositionSpec({}, Position(PositionKind(lowered), 0, option), option)
    example = '\'earliest\', \'latest\' or JSON like {"cluster": {"topic": {"0": 23}}}'
    where = f"Invalid value {value!r} for option '{option}'"
    offsets = partition_map(
        _document(text, option, example), where, OFFSET_MEANING, EARLIEST, empty=False
    )
    return PositionSpec({k: _of_offset(v, option) for k, v in offsets.items()}, None, option)


def parse_timestamps_spec(value: str, option: str) -> PositionSpec:
    """Parse ``{"cluster": {"topic": {"0": <epoch ms>}}}``.

    Raises
    ------
    OffsetsError
        Naming the option and the value.
    """
    example = 'JSON like {"cluster": {"topic": {"0": 1700000000000}}} (epoch milliseconds)'
    document = _document(value.strip(), option, example)
    where = f"Invalid value {value!r} for option '{option}'"
    meaning = "a timestamp in epoch milliseconds (>= 0)"
    stamps = partition_map(document, where, meaning, 0, empty=False)
    return PositionSpec(
        {k: Position(PositionKind.TIMESTAMP, v, option) for k, v in stamps.items()}, None, option
    )


def parse_timestamp(value: str, option: str) -> PositionSpec:
    """Parse one timestamp (epoch milliseconds) that applies to every partition.

    Raises
    ------
    OffsetsError
        Naming the option and the value.
    """
    try:
        stamp = int(value.strip())
    except ValueError:
        stamp = -1
    if not 0 <= stamp <= MAX_OFFSET:
        raise OffsetsError(
            f"Invalid value {value!r} for option '{option}': expected a timestamp in epoch "
            f"milliseconds (an integer from 0 to {MAX_OFFSET})."
        )
    return PositionSpec({}, Position(PositionKind.TIMESTAMP, stamp, option), option)


def position_spec(
    timestamp: PositionSpec | None, by_timestamp: PositionSpec | None, offsets: PositionSpec
) -> PositionSpec:
    """The winning spec among the (parsed) options of one side, starting or ending.

    Spark's precedence: a global timestamp, else per-partition timestamps, else offsets (which
    always has a value: its default when absent).

    Parameters
    ----------
    timestamp, by_timestamp, offsets:
        The parsed ``*Timestamp``, ``*OffsetsByTimestamp`` and ``*Offsets`` options (``None``
        when absent).
    """
    if timestamp is not None:
        return timestamp
    if by_timestamp is not None:
        return by_timestamp
    return offsets


# ------------------------------------------------------------------------------- 2. rules
@dataclass(frozen=True)
class PositionRule:
    """How partitions the query has not read yet are placed (see the module docstring).

    Attributes
    ----------
    options:
        What the query's options say (empty when they do not apply).
    fallback:
        The position of a partition nothing else places.
    no_match:
        What a timestamp without a record at or after it resolves to.
    use_metadata:
        Whether a metadata entry's ``startingOffsets`` applies (to a cluster read for the first
        time); ends and the AvailableNow target ignore it.
    """

    options: PositionSpec
    fallback: Position
    no_match: NoMatch
    use_metadata: bool = True

    def position(self, key: PartitionKey, metadata: Position | None) -> Position:
        """The position of one partition; ``metadata`` is its cluster entry's ``startingOffsets``
        when the query reads that cluster for the first time."""
        named = self.options.specific.get(key)
        if named is not None:
            return named
        if metadata is not None and self.use_metadata:
            return metadata.with_origin(f"the metadata's startingOffsets of cluster {key[0]!r}")
        return self.options.position(key, self.fallback)


def _discovery_fallback(options: SourceOptions) -> Position:
    kind = PositionKind(options.discovery_starting_offsets)
    return Position(kind, 0, "discoveryStartingOffsets")


def start_rule(options: SourceOptions, batch: bool) -> PositionRule:
    """Where a stream starts (partitions no option names: ``discoveryStartingOffsets``) or a batch
    read starts (partitions no option names: ``earliest``)."""
    spec = options.starting
    fallback = EARLIEST_POSITION.with_origin(spec.option) if batch else _discovery_fallback(options)
    return PositionRule(spec, fallback, options.timestamp_strategy)


def discovery_rule(options: SourceOptions) -> PositionRule:
    """Where a partition that appears while a stream runs starts: the metadata's
    ``startingOffsets`` for a cluster read for the first time, else ``discoveryStartingOffsets``."""
    return PositionRule(_NO_OPTION, _discovery_fallback(options), options.timestamp_strategy)


def end_rule(options: SourceOptions) -> PositionRule:
    """Where a batch read ends (``latest`` unless an ``ending*`` option says otherwise; an end
    timestamp without a record at or after it ends at the latest offset)."""
    spec = options.ending or PositionSpec({}, LATEST_POSITION, "endingOffsets")
    return PositionRule(spec, LATEST_POSITION.with_origin(spec.option), NoMatch.LATEST, False)


#: The latest offset of every partition (the ``Trigger.AvailableNow`` target).
LATEST_RULE = PositionRule(_NO_OPTION, LATEST_POSITION, NoMatch.LATEST, False)


# ------------------------------------------------------------------------------- 3. resolver
def resolve_positions(
    lister: OffsetLister,
    cluster_id: str,
    cluster: ClusterAssignment,
    latest: Mapping[TopicPartitionKey, int],
    rule: PositionRule,
    first_read: bool,
) -> dict[TopicPartitionKey, int]:
    """Place and resolve partitions of one cluster: where each starts (or ends), as an offset.

    Parameters
    ----------
    lister:
        The driver's listing clients.
    cluster_id, cluster:
        The cluster and what the query reads there.
    latest:
        The partitions to place, with their latest offsets (as just listed).
    rule:
        How they are placed.
    first_read:
        Whether the query reads this cluster for the first time (its metadata entry's
        ``startingOffsets`` then applies, if the rule admits it).

    Raises
    ------
    OffsetsError
        For a timestamp without a matching record when the rule's ``no_match`` is ``error``.
    KafkaClientError
        When the cluster cannot be reached.
    """
    wanted = {
        (t, p): rule.position(
            (cluster_id, t, p), cluster.starting_position(t) if first_read else None
        )
        for t, p in latest
    }
    admin = lister.admin(cluster_id, cluster)
    need_earliest = [tp for tp, pos in wanted.items() if pos.kind == PositionKind.EARLIEST]
    earliest = admin.list_offsets(need_earliest, PositionKind.EARLIEST) if need_earliest else {}
    stamps = {tp: pos.value for tp, pos in wanted.items() if pos.kind == PositionKind.TIMESTAMP}
    committed = read_committed(cluster.properties)
    found = admin.offsets_for_times(stamps, committed) if stamps else {}
    result: dict[TopicPartitionKey, int] = {}
    unmatched: list[str] = []
    for tp, pos in wanted.items():
        if pos.kind == PositionKind.EARLIEST:
            result[tp] = earliest[tp]
        elif pos.kind == PositionKind.LATEST:
            result[tp] = latest[tp]
        elif pos.kind == PositionKind.OFFSET:
            result[tp] = pos.value
        elif found[tp] == NO_OFFSET or found[tp] < 0:
            unmatched.append(f"{cluster_id}/{tp[0]}/{tp[1]} ({pos.origin} {pos.value})")
            result[tp] = latest[tp]
        else:
            result[tp] = min(found[tp], latest[tp])
    if unmatched and rule.no_match == NoMatch.ERROR:
        raise OffsetsError(
            f"No record is at or after the start timestamp of {', '.join(sorted(unmatched))}."
            " Choose an earlier timestamp, or set startingOffsetsByTimestampStrategy=latest "
            "to start such partitions at their latest offset."
        )
    if unmatched:
        _log.info(
            "No record at or after the timestamp of %s: starting at the latest offset.",
            ", ".join(sorted(unmatched)),
        )
    return result
