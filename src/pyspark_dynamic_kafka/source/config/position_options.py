"""The position options' parsers: ``startingOffsets``, ``startingOffsetsByTimestamp``,
``startingTimestamp`` (and the ``ending*`` ones of a batch read) into
:class:`~pyspark_dynamic_kafka.offset_spec.PositionSpec` values.

Each option is parsed by its declared parser (:func:`parse_offsets_spec`,
:func:`parse_timestamps_spec`, :func:`parse_timestamp`), and :func:`position_spec` picks the
winner: ``startingTimestamp`` wins over ``startingOffsetsByTimestamp``, which wins over
``startingOffsets`` (the ``ending*`` options of a batch read likewise). Pure: no Kafka call; where
a partition then starts is :mod:`~pyspark_dynamic_kafka.source.driver.start_policy`.
"""

from __future__ import annotations

import json

from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.offset_spec import (
    EARLIEST_POSITION,
    LATEST_POSITION,
    Position,
    PositionKind,
    PositionSpec,
)
from pyspark_dynamic_kafka.optionspec import did_you_mean
from pyspark_dynamic_kafka.source.partition_json import (
    EARLIEST,
    LATEST,
    MAX_OFFSET,
    OFFSET_MEANING,
    partition_map,
)

__all__ = [
    "parse_offsets_spec",
    "parse_timestamp",
    "parse_timestamps_spec",
    "position_spec",
]


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
