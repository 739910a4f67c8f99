"""Offset specs, the position vocabulary: where a partition starts or ends, before it is resolved
to an offset (not a consumer's position while it reads, which is the compiled core's
``read/position.rs``).

A :class:`Position` is one of four kinds (:class:`PositionKind`): the partition's earliest or
latest offset, a given offset, or the first offset whose record's timestamp is at or after a given
time (:class:`NoMatch` says what happens when no record is). Options say where partitions start
(and, for a batch read, end) as a :class:`PositionSpec`; a metadata entry's ``startingOffsets`` is a
:class:`~pyspark_dynamic_kafka.metadata.StartingPosition`, a :class:`Position` of the kinds a
metadata document can write.

How a partition's position is chosen among these and resolved to an offset is in one module:
:mod:`pyspark_dynamic_kafka.source.driver.start_policy`. This one depends on the errors module
only, so the metadata model, the Kafka helpers and the source all share it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from pyspark_dynamic_kafka.errors import OffsetsError

__all__ = [
    "EARLIEST_POSITION",
    "LATEST_POSITION",
    "NoMatch",
    "PartitionKey",
    "Position",
    "PositionKind",
    "PositionSpec",
]

#: (cluster id, topic, partition)
PartitionKey = tuple[str, str, int]


class PositionKind(str, enum.Enum):
    """What a position points at (compares equal to its option spelling, e.g. ``"earliest"``)."""

    EARLIEST = "earliest"
    LATEST = "latest"
    OFFSET = "offset"
    TIMESTAMP = "timestamp"

    def __str__(self) -> str:
        return self.value


class NoMatch(str, enum.Enum):
    """What a timestamp position resolves to when no record is at or after it
    (``startingOffsetsByTimestampStrategy``; an end timestamp always takes ``latest``)."""

    ERROR = "error"
    LATEST = "latest"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Position:
    """One partition's position before it is resolved against the cluster.

    Attributes
    ----------
    kind:
        What it points at.
    value:
        The offset (``OFFSET``) or the epoch milliseconds (``TIMESTAMP``); 0 for the others.
    origin:
        Which option or metadata entry gave it, for messages (not compared).
    """

    kind: PositionKind
    value: int = 0
    origin: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        kind = PositionKind(self.kind)
        object.__setattr__(self, "kind", kind)
        valued = kind in (PositionKind.OFFSET, PositionKind.TIMESTAMP)
        if self.value < 0 or (self.value and not valued):
            raise OffsetsError(
                f"A {kind.value} position cannot have the value {self.value!r}: offsets and "
                "timestamps are integers >= 0, earliest and latest have none."
            )

    def with_origin(self, origin: str) -> Position:
        """The same position, attributed to ``origin`` in messages."""
        return Position(self.kind, self.value, origin)

    def __str__(self) -> str:
        if self.kind in (PositionKind.OFFSET, PositionKind.TIMESTAMP):
            return f"{self.kind} {self.value}"
        return str(self.kind)


EARLIEST_POSITION = Position(PositionKind.EARLIEST)
LATEST_POSITION = Position(PositionKind.LATEST)


@dataclass(frozen=True)
class PositionSpec:
    """What one option (the winner of its group, e.g. ``startingOffsets``) says about partitions.

    Attributes
    ----------
    specific:
        Positions of the partitions the option names (JSON options).
    default:
        Position of every other partition, or ``None`` when the option only names partitions.
    option:
        The option the spec comes from, named in messages.
    """

    specific: Mapping[PartitionKey, Position]
    default: Position | None
    option: str

    def position(self, key: PartitionKey, fallback: Position) -> Position:
        """The position of one partition: the named one, else the default, else ``fallback``."""
        named = self.specific.get(key)
        if named is not None:
            return named
        return self.default if self.default is not None else fallback

    def topics(self) -> set[tuple[str, str]]:
        """(cluster, topic) pairs the option names."""
        return {(cluster, topic) for cluster, topic, _ in self.specific}
