"""Offset JSON options checked against what the query reads, when they apply.

``startingOffsets``, ``endingOffsets``, ``startingOffsetsByTimestamp`` and
``endingOffsetsByTimestamp`` may name partitions as ``{"cluster": {"topic": {"0": ...}}}``. They
apply once: the starting ones when a stream starts without a checkpoint (a restarted query
ignores them, as Spark's ``kafka`` source does) and both sides at a batch read. Then every
cluster, topic and partition they name must be one the query reads at that moment, as Spark's
``kafka`` source requires of the partitions it is assigned; anything else (a typo of a cluster
or topic, a partition the topic does not have) is an error naming it and what the query reads,
with a suggestion, before any record is read. A JSON may leave partitions out (they take the
option's fallback), a leniency of this source. Partitions, topics and clusters that appear later
start at ``discoveryStartingOffsets`` (or the metadata entry's ``startingOffsets``), never at a
position these options name, so naming them ahead of time is an error too.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.offset_spec import PartitionKey, PositionSpec
from pyspark_dynamic_kafka.optionspec import did_you_mean

__all__ = ["check_named_partitions"]

#: Topics listed at most when saying what the query reads.
_SHOWN = 12


def _ranges(partitions: Iterable[int]) -> str:
    """``0-2, 5``: sorted partitions as ranges."""
    ordered = sorted(set(partitions))
    spans: list[str] = []
    start = prev = ordered[0]
    for p in [*ordered[1:], None]:
        if p is not None and p == prev + 1:
            prev = p
            continue
        spans.append(str(start) if start == prev else f"{start}-{prev}")
        if p is not None:
            start = prev = p
    return ", ".join(spans)


def _reading(read: dict[str, dict[str, set[int]]]) -> str:
    pairs = [
        f"{cluster}/{topic} (partitions {_ranges(ps)})"
        for cluster, topics in sorted(read.items())
        for topic, ps in sorted(topics.items())
    ]
    more = f" and {len(pairs) - _SHOWN} more" if len(pairs) > _SHOWN else ""
    return ", ".join(pairs[:_SHOWN]) + more if pairs else "nothing (no partition yet)"


def _problem(key: PartitionKey, read: dict[str, dict[str, set[int]]]) -> str | None:
    cluster, topic, partition = key
    if cluster not in read:
        return f"cluster {cluster!r}, which the query does not read.{did_you_mean(cluster, read)}"
    topics = read[cluster]
    if topic not in topics:
        return (
            f"topic {topic!r} on cluster {cluster!r}, which the query does not read there."
            f"{did_you_mean(topic, topics)}"
        )
    if partition not in topics[topic]:
        return (
            f"partition {partition} of {cluster}/{topic}, which has partitions "
            f"{_ranges(topics[topic])} now."
        )
    return None


def check_named_partitions(
    specs: Iterable[PositionSpec | None], read: Iterable[PartitionKey]
) -> None:
    """Fail unless every partition the JSON options name is one the query reads.

    Parameters
    ----------
    specs:
        The winning starting (and, for a batch read, ending) specs; ``None`` is skipped.
    read:
        The partitions the query reads now, as (cluster, topic, partition).

    Raises
    ------
    OffsetsError
        Naming the option, every cluster, topic or partition it names that is not read, and
        what the query reads.
    """
    by_cluster: dict[str, dict[str, set[int]]] = {}
    for cluster, topic, partition in read:
        by_cluster.setdefault(cluster, {}).setdefault(topic, set()).add(partition)
    for spec in specs:
        if spec is None or not spec.specific:
            continue
        problems = sorted({p for key in spec.specific if (p := _problem(key, by_cluster))})
        if problems:
            raise OffsetsError(
                f"Option '{spec.option}' names {'; '.join(problems)} The query reads "
                f"{_reading(by_cluster)}. Fix the JSON (nothing was read); partitions that "
                "appear later start at discoveryStartingOffsets, not at a position this option "
                "names."
            )
