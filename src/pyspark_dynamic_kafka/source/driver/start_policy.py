"""Where a partition starts (and, for a batch read, ends): the one start policy.

**The precedence.** A partition the query has not read yet starts at the first of these that
applies (change where a new cluster, topic or partition starts here, and only here):

1. its *retained* offset, when its cluster and topic were removed from the metadata within
   ``removedClusterRetentionMs`` or it is an archived partition of a hybrid read not assigned
   until now (:meth:`StartPolicy.resume`, before reconciliation; which offsets stay retained,
   and for how long, is the bookkeeping of :mod:`~pyspark_dynamic_kafka.source.driver.retention`);
2. with ``assignment=group``, the group's *committed offset* for a partition newly assigned
   (:meth:`StartPolicy.group_start`, which the group ownership asks);
3. with ``archive.path``, where the *archive* hands the partition over to Kafka: its largest
   archived offset + 1, or ``archive.switchTimestamp`` (:func:`archive_rule`);
4. the position the *options* name for this very partition (JSON ``startingOffsets``, ...);
5. the *metadata entry's* ``startingOffsets``, when the query reads that cluster for the first
   time (a stream's start, or a cluster added while it runs);
6. the options' position for every partition (``earliest``, ``latest``, a timestamp);
7. the *fallback*: ``discoveryStartingOffsets`` for a stream, ``earliest`` for a batch read.

A stream's start uses all of them; a partition that appears while a stream runs skips 4 and 6
(the options applied at the start only) unless a group newly assigns it. The vocabulary
(:class:`~pyspark_dynamic_kafka.offset_spec.Position`, ``NoMatch``, ``PositionSpec``) is in
:mod:`pyspark_dynamic_kafka.offset_spec`; the options are parsed by
:mod:`~pyspark_dynamic_kafka.source.config.position_options`.

**The policy.** :class:`StartPolicy` composes the seven steps for a stream: the stream pipeline
asks it what resumes (step 1) and which rule places the partitions reconciliation meets (steps 3
to 7), the group's ownership (:mod:`~pyspark_dynamic_kafka.source.group.ownership`) asks it
where a newly assigned partition starts (step 2).

**Rules.** Steps 3 to 7 are one :class:`PositionRule`: :func:`start_rule` (a stream's initial
offset, a batch read's start; :func:`archive_rule` puts step 3 in front), :func:`discovery_rule`
(partitions that appear while a stream runs), :func:`end_rule` (a batch read's end) and
:data:`LATEST_RULE` (the ``Trigger.AvailableNow`` target).

**The resolver** (:func:`resolve_positions`, the one function stream start, discovery and batch
reads call) turns the positions of one cluster's partitions into offsets, one request per kind:
``earliest`` is listed, ``latest`` is the offset just listed, an offset is taken as it is, and a
timestamp becomes the first offset whose record is at or after it (never past the latest
offset); when there is none the rule's ``NoMatch`` fails or takes the latest offset.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace

from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.kafka.admin import NO_OFFSET
from pyspark_dynamic_kafka.offset_spec import (
    EARLIEST_POSITION,
    LATEST_POSITION,
    NoMatch,
    PartitionKey,
    Position,
    PositionKind,
    PositionSpec,
)
from pyspark_dynamic_kafka.source.checkpoint import Retained, SourceOffset
from pyspark_dynamic_kafka.source.config.parsed import SourceOptions
from pyspark_dynamic_kafka.source.driver.discovery import ClusterSubscription
from pyspark_dynamic_kafka.source.driver.listing import (
    OffsetLister,
    TopicPartitionKey,
    read_committed,
)
from pyspark_dynamic_kafka.source.driver.retention import retain

__all__ = [
    "LATEST_RULE",
    "SWITCH_TIMESTAMP",
    "PositionRule",
    "StartPolicy",
    "archive_rule",
    "discovery_rule",
    "end_rule",
    "resolve_positions",
    "start_rule",
]

_log = logging.getLogger(__name__)

#: The option of a hybrid read's switch by time.
SWITCH_TIMESTAMP = "archive.switchTimestamp"

#: No option places any partition (discovery, the AvailableNow target).
_NO_OPTION = PositionSpec({}, None, "")


# ------------------------------------------------------------------------------- 1. rules
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


def archive_rule(
    rule: PositionRule,
    switch: Mapping[PartitionKey, int],
    switch_timestamp: int | None,
    origin: str = "",
) -> PositionRule:
    """``rule`` with a hybrid read's hand-over to Kafka first (step 3 of the precedence).

    Parameters
    ----------
    rule:
        The rule without the archive.
    switch:
        The offset where Kafka takes over each archived partition (``origin`` names the archive).
    switch_timestamp:
        ``archive.switchTimestamp``: every partition switches at that time instead (the metadata's
        ``startingOffsets`` then no longer applies; a partition without a record at or after it
        starts at its latest offset).
    """
    if switch_timestamp is not None:
        at = Position(PositionKind.TIMESTAMP, switch_timestamp, SWITCH_TIMESTAMP)
        spec = PositionSpec({}, at, SWITCH_TIMESTAMP)
        return PositionRule(spec, rule.fallback, NoMatch.LATEST, use_metadata=False)
    handed = {key: Position(PositionKind.OFFSET, o, origin) for key, o in switch.items()}
    spec = rule.options
    return replace(
        rule, options=PositionSpec({**spec.specific, **handed}, spec.default, spec.option)
    )


#: The latest offset of every partition (the ``Trigger.AvailableNow`` target).
LATEST_RULE = PositionRule(_NO_OPTION, LATEST_POSITION, NoMatch.LATEST, False)


# ------------------------------------------------------------------------------- 2. policy
def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class StartPolicy:
    """The precedence of a stream, composed: where each partition it meets first starts.

    Attributes
    ----------
    start:
        Steps 3 to 7 at the stream's start (:func:`start_rule`; a hybrid read puts its
        :func:`archive_rule` in front).
    discovered:
        Steps 5 and 7 for a partition that appears while the stream runs (:func:`discovery_rule`).
    assigned:
        Steps 4 to 7 for a partition a group newly assigns and has no committed offset of
        (:func:`start_rule`).
    retention_ms:
        ``removedClusterRetentionMs`` (step 1).
    clock:
        Epoch milliseconds (step 1's window).
    """

    start: PositionRule
    discovered: PositionRule
    assigned: PositionRule
    retention_ms: int
    clock: Callable[[], int] = _now_ms

    @classmethod
    def of(cls, options: SourceOptions, clock: Callable[[], int] = _now_ms) -> StartPolicy:
        """The policy of a stream with these options."""
        start = start_rule(options, batch=False)
        discovered = discovery_rule(options)
        return cls(start, discovered, start, options.removed_cluster_retention_ms, clock)

    def resume(
        self, start: SourceOffset, assigned: Collection[tuple[str, str]]
    ) -> tuple[dict[PartitionKey, int], Retained]:
        """Step 1: the offsets read on from ``start`` (the checkpoint's, and the retained ones of
        the (cluster, topic) pairs ``assigned`` again), and what stays retained.

        A partition these offsets hold is not new: no later step places it. At a hybrid read's
        switch to Kafka the pairs left are kept (without expiry) where Kafka starts.
        """
        retention = retain(
            start.offsets,
            start.retained,
            assigned,
            self.retention_ms,
            self.clock,
            expiring=not start.in_archive,
        )
        return {**retention.resumed, **start.offsets}, retention.retained

    @staticmethod
    def group_start(placed: int, committed: int | None) -> int:
        """Step 2: where a partition a group newly assigns starts: the group's ``committed``
        offset, else where :attr:`assigned` ``placed`` it."""
        return placed if committed is None else committed


# ------------------------------------------------------------------------------- 3. resolver
def resolve_positions(
    lister: OffsetLister,
    cluster_id: str,
    cluster: ClusterSubscription,
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
