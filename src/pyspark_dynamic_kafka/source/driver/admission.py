"""Admission control of streams: ``maxOffsetsPerTrigger``, ``minOffsetsPerTrigger``,
``maxTriggerDelay``, as Spark's kafka source applies them.

Spark's Python API has no composite read limit, so :meth:`Admission.default_limit` reports the
maximum (or the minimum when only that is set) and :meth:`Admission.admit` applies both from the
options. A ``ReadAllAvailable`` limit from the engine (``Trigger.Once``, ...) overrides the
options; a ``ReadMaxRows`` / ``ReadMinRows`` from the engine gives the number to use.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable, Mapping
from typing import Any, TypeVar

from pyspark_dynamic_kafka.source.config.parsed import SourceOptions
from pyspark_dynamic_kafka.source.read_limits import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
)

__all__ = ["Admission", "backlog", "rate_limit"]

_log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)


def backlog(start: Mapping[K, int], end: Mapping[K, int]) -> int:
    """Offsets between ``start`` and ``end`` over the partitions both know."""
    return sum(max(0, end[k] - start[k]) for k in end if k in start)


def rate_limit(limit: int, start: Mapping[K, int], end: Mapping[K, int]) -> dict[K, int]:
    """Cut ``end`` so that about ``limit`` offsets are read, shared in proportion to backlog.

    Each partition with a backlog gets ``floor(limit * its backlog / total)`` offsets, and at
    least one, so no partition starves (the total may then exceed ``limit`` by at most the number
    of partitions, as in Spark). Partitions unknown to ``start`` keep their ``end``.
    """
    sizes = {k: end[k] - start[k] for k in end if k in start and end[k] > start[k]}
    total = sum(sizes.values())
    if total <= limit:
        return dict(end)
    result = dict(end)
    for k, size in sizes.items():
        share = max(1, limit * size // total)
        result[k] = min(end[k], start[k] + share)
    return result


class Admission:
    """Decides how far a micro-batch reads.

    Parameters
    ----------
    options:
        Parsed source options.
    clock:
        Monotonic clock in seconds (tests pass their own).
    """

    def __init__(self, options: SourceOptions, clock: Callable[[], float] = time.monotonic):
        self._max = options.max_offsets_per_trigger
        self._min = options.min_offsets_per_trigger
        self._delay_s = options.max_trigger_delay_ms / 1000.0
        self._clock = clock
        self._last_trigger: float | None = None

    def default_limit(self) -> ReadLimit:
        """The limit the options ask for (Spark reports it back to :meth:`admit`)."""
        if self._max is not None:
            return ReadMaxRows(self._max)
        if self._min is not None:
            return ReadMinRows(self._min)
        return ReadAllAvailable()

    def admit(
        self,
        limit: Any,
        start: Mapping[K, int],
        available: Mapping[K, int],
        available_now: bool = False,
    ) -> dict[K, int] | None:
        """The end offsets of the next micro-batch, or ``None`` to wait for more data.

        Parameters
        ----------
        limit:
            The engine's read limit (``None``: the options' own).
        start:
            Where each partition's next range starts.
        available:
            How far each partition could be read.
        available_now:
            ``Trigger.AvailableNow``: never wait (the data will not grow), only cap.
        """
        if isinstance(limit, ReadAllAvailable):
            return dict(available)
        most = limit.max_rows if isinstance(limit, ReadMaxRows) else self._max
        least = limit.min_rows if isinstance(limit, ReadMinRows) else self._min
        if least is not None and not available_now and self._wait(least, start, available):
            return None
        if most is not None:
            return rate_limit(most, start, available)
        return dict(available)

    def _wait(self, least: int, start: Mapping[K, int], available: Mapping[K, int]) -> bool:
        now = self._clock()
        if self._last_trigger is None or now - self._last_trigger >= self._delay_s:
            self._last_trigger = now
            return False
        waiting = backlog(start, available)
        if waiting < least:
            _log.debug(
                "%d new offsets < minOffsetsPerTrigger=%d: waiting (at most %.0f s more)",
                waiting,
                least,
                self._delay_s - (now - self._last_trigger),
            )
            return True
        self._last_trigger = now
        return False
