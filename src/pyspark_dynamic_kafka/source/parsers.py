"""Value parsers of the source options: each turns a string into a typed value or raises
``ValueError`` with the reason (the caller adds the key and the value)."""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["boolean", "choice", "duration_ms", "integer", "pattern", "stream_ids", "text"]

_DURATION = re.compile(r"(\d+)\s*(ms|s|sec|secs|m|min|mins|h|d)?", re.IGNORECASE)
_UNIT_MS = {"ms": 1, "s": 1000, "sec": 1000, "secs": 1000, "m": 60_000, "min": 60_000}
_UNIT_MS |= {"mins": 60_000, "h": 3_600_000, "d": 86_400_000}


def integer(minimum: int | None = None) -> Callable[[str], int]:
    """An integer, at least ``minimum`` when given."""

    def parse(value: str) -> int:
        try:
            number = int(value.strip())
        except ValueError:
            raise ValueError("expected an integer") from None
        if minimum is not None and number < minimum:
            raise ValueError(f"expected an integer >= {minimum}")
        return number

    return parse


def choice(*choices: str) -> Callable[[str], str]:
    """One of ``choices``, case-insensitively; returned lowercased."""

    def parse(value: str) -> str:
        lowered = value.strip().lower()
        if lowered not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return lowered

    return parse


def boolean(value: str) -> bool:
    """``true`` or ``false``, case-insensitively."""
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError("expected true or false")
    return lowered == "true"


def duration_ms(value: str) -> int:
    """A duration as Spark writes it (``15m``, ``30s``, ``500ms``, ``1h``); a bare number is ms."""
    match = _DURATION.fullmatch(value.strip())
    if match is None:
        raise ValueError("expected a duration such as 500ms, 30s, 15m or 1h")
    unit = (match.group(2) or "ms").lower()
    return int(match.group(1)) * _UNIT_MS[unit]


def text(value: str) -> str:
    """The value, stripped."""
    return value.strip()


def stream_ids(value: str) -> tuple[str, ...]:
    """A comma-separated list of stream ids, deduplicated in order."""
    ids = tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    if not ids:
        raise ValueError("expected a comma-separated list of stream ids")
    return ids


def pattern(value: str) -> re.Pattern[str]:
    """A Python regular expression."""
    try:
        return re.compile(value)
    except re.error as exc:
        raise ValueError(f"not a valid Python regular expression ({exc})") from None
