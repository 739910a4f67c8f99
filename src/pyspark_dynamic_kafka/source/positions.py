"""Where partitions start and end: offset and timestamp specifications, as options give them.

A :class:`Position` is ``earliest``, ``latest``, a concrete offset or a timestamp. A
:class:`PositionSpec` is what one option (or the winning one of several, see
:func:`pick_spec`) says about every partition: a position for the partitions it names and a
default for the others. Resolving positions to offsets needs the cluster and happens on the driver
(:mod:`~pyspark_dynamic_kafka.source.listing`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.metadata.model import StartingPosition
from pyspark_dynamic_kafka.source.offsets import EARLIEST, LATEST, PartitionKey

__all__ = [
    "EARLIEST_POSITION",
    "LATEST_POSITION",
    "Position",
    "PositionSpec",
    "parse_offsets_spec",
    "parse_timestamp",
    "parse_timestamps_spec",
    "pick_spec",
    "position_of",
    "start_position",
]

Kind = Literal["earliest", "latest", "offset", "timestamp"]


@dataclass(frozen=True)
class Position:
    """One partition's position before it is resolved against the cluster.

    Attributes
    ----------
    kind:
        ``earliest``, ``latest``, ``offset`` or ``timestamp``.
    value:
        The offset or the epoch milliseconds (0 for ``earliest`` and ``latest``).
    origin:
        Which option or metadata entry gave it, for messages (not compared).
    """

    kind: Kind
    value: int = 0
    origin: str = field(default="", compare=False)

    @staticmethod
    def of_offset(offset: int, origin: str = "") -> Position:
        """-2 earliest, -1 latest, otherwise that offset."""
        if offset == EARLIEST:
            return Position("earliest", 0, origin)
        if offset == LATEST:
            return Position("latest", 0, origin)
        return Position("offset", offset, origin)

    def __str__(self) -> str:
        if self.kind == "offset":
            return f"offset {self.value}"
        if self.kind == "timestamp":
            return f"timestamp {self.value}"
        return self.kind


EARLIEST_POSITION = Position("earliest")
LATEST_POSITION = Position("latest")


@dataclass(frozen=True)
class PositionSpec:
    """What an option says about every partition.

    Attributes
    ----------
    specific:
        Positions of the partitions the option names (JSON options).
    default:
        Position of every other partition, or ``None`` when the option only names partitions (the
        caller's fallback applies to the others).
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

    def names(self, key: PartitionKey) -> bool:
        """Whether the option names this partition."""
        return key in self.specific

    def topics(self) -> set[tuple[str, str]]:
        """(cluster, topic) pairs the option names."""
        return {(cluster, topic) for cluster, topic, _ in self.specific}


def position_of(start: StartingPosition, origin: str) -> Position:
    """The position a metadata entry's ``startingOffsets`` stands for."""
    if start.timestamp_ms is not None:
        return Position("timestamp", start.timestamp_ms, origin)
    return Position("earliest" if start.kind == "earliest" else "latest", 0, origin)


def start_position(
    spec: PositionSpec,
    key: PartitionKey,
    override: StartingPosition | None,
    fallback: Position,
) -> Position:
    """Where a partition starts when its cluster is read for the first time.

    A position the option names for this very partition wins, then the metadata entry's
    ``startingOffsets`` for the cluster (``override``), then the option's default, then
    ``fallback``.
    """
    named = spec.specific.get(key)
    if named is not None:
        return named
    if override is not None:
        return position_of(override, f"the metadata's startingOffsets of cluster {key[0]!r}")
    return spec.position(key, fallback)


def _document(value: str, option: str, example: str) -> object:
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise OffsetsError(
            f"Invalid value {value!r} for option '{option}': expected {example} "
            f"({exc.msg} at column {exc.colno})."
        ) from None


def _nested(
    document: object, value: str, option: str, minimum: int, meaning: str
) -> dict[PartitionKey, int]:
    """``{"cluster": {"topic": {"0": number}}}`` -> {(cluster, topic, 0): number}."""
    where = f"Invalid value {value!r} for option '{option}'"
    if not isinstance(document, Mapping):
        raise OffsetsError(f"{where}: expected a JSON object of cluster ids.")
    result: dict[PartitionKey, int] = {}
    for cluster, topics in document.items():
        if not isinstance(topics, Mapping):
            raise OffsetsError(f"{where}: cluster {cluster!r} must map topics to partitions.")
        for topic, partitions in topics.items():
            if not isinstance(partitions, Mapping):
                raise OffsetsError(f"{where}: {cluster}/{topic} must map partitions to {meaning}.")
            for partition, number in partitions.items():
                try:
                    index = int(partition)
                except (TypeError, ValueError):
                    index = -1
                if index < 0:
                    raise OffsetsError(
                        f"{where}: partition {partition!r} of {cluster}/{topic} is not a "
                        "non-negative integer."
                    )
                if isinstance(number, bool) or not isinstance(number, int) or number < minimum:
                    raise OffsetsError(
                        f"{where}: {number!r} for {cluster}/{topic}/{partition} must be {meaning}."
                    )
                result[(str(cluster), str(topic), index)] = number
    if not result:
        raise OffsetsError(f"{where}: the JSON names no partition.")
    return result


def parse_offsets_spec(value: str, option: str) -> PositionSpec:
    """Parse ``earliest``, ``latest`` or ``{"cluster": {"topic": {"0": 23}}}`` (-2/-1 allowed).

    A JSON spec has no default: partitions it does not name take the caller's fallback.

    Raises
    ------
    OffsetsError
        Naming the option and the value.
    """
    text = value.strip()
    lowered = text.lower()
    if lowered in ("earliest", "latest"):
        return PositionSpec({}, Position(lowered, 0, option), option)  # type: ignore[arg-type]
    example = '\'earliest\', \'latest\' or JSON like {"cluster": {"topic": {"0": 23}}}'
    document = _document(text, option, example)
    offsets = _nested(
        document, value, option, EARLIEST, "an integer offset >= -2 (-2 earliest, -1 latest)"
    )
    return PositionSpec(
        {k: Position.of_offset(v, option) for k, v in offsets.items()}, None, option
    )


def parse_timestamps_spec(value: str, option: str) -> PositionSpec:
    """Parse ``{"cluster": {"topic": {"0": <epoch ms>}}}``.

    Raises
    ------
    OffsetsError
        Naming the option and the value.
    """
    example = 'JSON like {"cluster": {"topic": {"0": 1700000000000}}} (epoch milliseconds)'
    document = _document(value.strip(), option, example)
    stamps = _nested(document, value, option, 0, "a timestamp in epoch milliseconds (>= 0)")
    return PositionSpec(
        {k: Position("timestamp", v, option) for k, v in stamps.items()}, None, option
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
    if stamp < 0:
        raise OffsetsError(
            f"Invalid value {value!r} for option '{option}': expected a timestamp in epoch "
            "milliseconds (an integer >= 0)."
        )
    return PositionSpec({}, Position("timestamp", stamp, option), option)


def pick_spec(
    timestamp: PositionSpec | None,
    by_timestamp: PositionSpec | None,
    offsets: PositionSpec,
) -> PositionSpec:
    """Spark's precedence: a global timestamp, else per-partition timestamps, else offsets."""
    if timestamp is not None:
        return timestamp
    if by_timestamp is not None:
        return by_timestamp
    return offsets
