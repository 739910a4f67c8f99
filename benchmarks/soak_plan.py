"""The soak's plan and its verdict, without any I/O: the mapping schedule, the metadata it writes,
how long a (cluster, topic) can stay out of the mapping, and the exact comparison of what was read
with what was produced.

The schedule
------------
Three clusters (``alpha``, ``beta``, ``gamma``) and six (cluster, topic) pairs. Every
``step`` seconds the stream ``soak`` is mapped to the next state of :data:`CYCLE` (six states,
repeated): whole clusters leave and come back (``alpha`` in state 2, ``gamma`` in states 5 and 0,
listed under ``clusters`` only while they have a topic in the stream), topics leave and come back
(``payments``, ``audit``, ``events``, ``clicks``), and ``orders`` migrates from ``alpha`` to
``beta`` (both during state 1, ``beta`` alone in states 2 and 3) and back (state 4). When the soak
ends the stream is mapped to every pair (:data:`UNIVERSE`).

Why the expected set is exactly everything produced
---------------------------------------------------
Records are produced to all six pairs all the time, mapped or not. The query runs with
``startingOffsets=earliest``, ``discoveryStartingOffsets=earliest`` (the default) and a
``removedClusterRetentionMs`` far longer than any absence of the schedule
(:func:`longest_absence`, checked by :func:`check_retention`). Then:

* a pair seen for the first time (at start, or added later) is read from its first record;
* a pair removed leaves its next offset under ``retained`` in the checkpointed offset, and when it
  is mapped again (within the window) it resumes at that offset: what was produced while it was
  out is read then, and nothing read before is read again;
* the final state maps every pair, so once the query has caught up with the high watermarks
  (drained) every record produced must have been read exactly once.

So the verdict (:func:`compare`) is exact: the records read, keyed by (cluster, topic, partition,
offset), must equal the records produced (same keys, same values), with none read twice.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CLUSTERS",
    "CYCLE",
    "STREAM",
    "UNIVERSE",
    "Flatness",
    "Pair",
    "RecordKey",
    "Step",
    "Verdict",
    "assess_flatness",
    "check_retention",
    "compare",
    "cycle_peaks",
    "longest_absence",
    "metadata_document",
    "schedule",
]

Pair = tuple[str, str]
"""(cluster, topic)."""
RecordKey = tuple[str, str, int, int]
"""(cluster, topic, partition, offset) of one record."""

STREAM = "soak"
CLUSTERS = ("alpha", "beta", "gamma")
_A_ORDERS, _B_ORDERS = ("alpha", "orders"), ("beta", "orders")
_PAYMENTS, _AUDIT = ("alpha", "payments"), ("beta", "audit")
_EVENTS, _CLICKS = ("gamma", "events"), ("gamma", "clicks")
UNIVERSE: frozenset[Pair] = frozenset({_A_ORDERS, _B_ORDERS, _PAYMENTS, _AUDIT, _EVENTS, _CLICKS})

CYCLE: tuple[tuple[str, frozenset[Pair]], ...] = (
    ("orders on alpha; gamma not in the metadata", frozenset({_A_ORDERS, _PAYMENTS, _AUDIT})),
    (
        "gamma added (events); orders migrating: on alpha and beta",
        frozenset({_A_ORDERS, _B_ORDERS, _PAYMENTS, _AUDIT, _EVENTS}),
    ),
    (
        "orders on beta only; alpha out of the metadata; clicks added",
        frozenset({_B_ORDERS, _AUDIT, _EVENTS, _CLICKS}),
    ),
    ("alpha back (payments); audit and events removed", frozenset({_B_ORDERS, _PAYMENTS, _CLICKS})),
    (
        "orders migrated back to alpha; audit and events back",
        frozenset({_A_ORDERS, _PAYMENTS, _AUDIT, _EVENTS, _CLICKS}),
    ),
    ("gamma out of the metadata; payments removed", frozenset({_A_ORDERS, _AUDIT})),
)
"""The states the mapping cycles through, each with what changed."""


@dataclass(frozen=True)
class Step:
    """One change of the mapping: at ``at_s`` seconds into the soak, map ``pairs``."""

    at_s: float
    pairs: frozenset[Pair]
    note: str


def schedule(total_s: float, step_s: float) -> list[Step]:
    """The mapping's changes: the cycle's states every ``step_s`` from 0 while before
    ``total_s``, then :data:`UNIVERSE` at ``total_s``.

    Raises
    ------
    ValueError
        When ``step_s`` is not positive or ``total_s`` is shorter than one step.
    """
    if step_s <= 0 or total_s < step_s:
        raise ValueError(f"need 0 < step ({step_s}) <= total ({total_s})")
    steps = []
    index = 0
    while index * step_s < total_s:
        note, pairs = CYCLE[index % len(CYCLE)]
        steps.append(Step(index * step_s, pairs, note))
        index += 1
    steps.append(Step(total_s, UNIVERSE, "final: every pair mapped"))
    return steps


def longest_absence(steps: Sequence[Step]) -> float:
    """The longest time, in seconds, any pair stays out of the mapping after it was first in it
    (an absence that lasts until the end counts up to the last step)."""
    longest = 0.0
    for pair in UNIVERSE:
        left_at: float | None = None
        seen = False
        for step in steps:
            if pair in step.pairs:
                if left_at is not None:
                    longest = max(longest, step.at_s - left_at)
                seen, left_at = True, None
            elif seen and left_at is None:
                left_at = step.at_s
        if left_at is not None:
            longest = max(longest, steps[-1].at_s - left_at)
    return longest


def check_retention(steps: Sequence[Step], retention_ms: int, margin: float = 3.0) -> None:
    """Require ``removedClusterRetentionMs`` to exceed the longest absence ``margin`` times (a
    micro-batch under load sees a change late; the window must still hold).

    Raises
    ------
    ValueError
        Naming both figures when the window is too short for the expected set to be exact.
    """
    needed = longest_absence(steps) * margin * 1000
    if retention_ms < needed:
        raise ValueError(
            f"removedClusterRetentionMs={retention_ms} is shorter than {margin:g} times the "
            f"schedule's longest absence ({needed:.0f} ms): a pair re-added after its window "
            "would be read again from its start"
        )


def metadata_document(pairs: Iterable[Pair], servers: Mapping[str, str]) -> dict[str, Any]:
    """The metadata file for a state: the clusters that have a pair, and stream :data:`STREAM`."""
    topics: dict[str, list[str]] = {}
    for cluster, topic in sorted(pairs):
        topics.setdefault(cluster, []).append(topic)
    return {
        "clusters": {c: {"bootstrap.servers": servers[c]} for c in sorted(topics)},
        "streams": {STREAM: [{"cluster": c, "topics": t} for c, t in sorted(topics.items())]},
    }


@dataclass(frozen=True)
class Verdict:
    """What was read against what was produced.

    Attributes
    ----------
    produced, read:
        Record counts.
    lost:
        Produced records never read.
    duplicated:
        Reads beyond the first of a record read more than once.
    unexpected:
        Records read that were not produced, or read with another value.
    examples:
        A few keys of each kind, for the report.
    """

    produced: int
    read: int
    lost: int
    duplicated: int
    unexpected: int
    examples: dict[str, list[RecordKey]] = field(default_factory=dict)

    @property
    def exact(self) -> bool:
        """Every record produced read exactly once, nothing else read."""
        return self.lost == 0 and self.duplicated == 0 and self.unexpected == 0


def compare(
    produced: Mapping[RecordKey, bytes], read: Iterable[tuple[RecordKey, bytes]]
) -> Verdict:
    """Compare the records read (key and value of each row) with those produced."""
    counts: Counter[RecordKey] = Counter()
    wrong: list[RecordKey] = []
    for key, value in read:
        counts[key] += 1
        if produced.get(key) != value:
            wrong.append(key)
    lost = sorted(k for k in produced if k not in counts)
    twice = sorted(k for k, n in counts.items() if n > 1)
    return Verdict(
        produced=len(produced),
        read=sum(counts.values()),
        lost=len(lost),
        duplicated=sum(counts[k] - 1 for k in twice),
        unexpected=len(wrong),
        examples={"lost": lost[:5], "duplicated": twice[:5], "unexpected": sorted(wrong)[:5]},
    )


@dataclass(frozen=True)
class Flatness:
    """Whether one resource series stays flat after warm-up.

    The values (the soak passes the peak of each cycle of the schedule) are split in thirds: the
    first third is warm-up and ignored. The series is flat when the median of the last third is
    at most the median of the second third times ``1 + rel`` plus ``slack``. A count
    (``counts=True``: threads, file descriptors) must also not keep growing: the minimum of the
    last third must be at most the second third's median plus ``slack``. Over the peaks of the
    ten 2-minute cycles of a 20-minute soak, a leak of one thread or descriptor per minute breaks
    that (the last third's first peak is about 4 above the second third's median).
    """

    ok: bool
    second_median: float
    last_median: float
    last_min: float
    limit: float


def assess_flatness(
    series: Sequence[float], rel: float, slack: float, counts: bool = False
) -> Flatness:
    """Assess one series (time-ordered samples), see :class:`Flatness`.

    Raises
    ------
    ValueError
        With fewer than 6 samples (two per third after warm-up are the least that says anything).
    """
    if len(series) < 6:
        raise ValueError(f"{len(series)} samples: at least 6 are needed to judge flatness")
    n = len(series)
    second, last = series[n // 3 : 2 * n // 3], series[2 * n // 3 :]
    second_median, last_median = statistics.median(second), statistics.median(last)
    limit = second_median * (1 + rel) + slack
    ok = last_median <= limit
    if counts:
        ok = ok and min(last) <= second_median + slack
    return Flatness(ok, second_median, last_median, min(last), limit)


def cycle_peaks(times: Sequence[float], values: Sequence[float], cycle_s: float) -> list[float]:
    """The largest value of each complete cycle of the schedule (``[k * cycle_s, (k + 1) *
    cycle_s)``, up to the last sample's time).

    What a process holds follows the mapping (a client and its threads and sockets per cluster
    read), so resources are compared cycle against cycle, never a part of a cycle against
    another; the peak of a cycle also counts threads that live only during a call.
    """
    if not times:
        return []
    complete = int(max(times) // cycle_s)
    peaks: list[float] = []
    for k in range(complete):
        inside = [
            v for t, v in zip(times, values, strict=True) if k * cycle_s <= t < (k + 1) * cycle_s
        ]
        if inside:
            peaks.append(max(inside))
    return peaks
