"""(start, end) offsets -> Spark input partitions: exact ranges packed into few, large tasks."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.source.offsets import PartitionKey

__all__ = ["OffsetRange", "ReadSettings", "ReadTask", "offset_ranges", "plan_tasks"]

#: Records one task aims to read; more tasks only when a micro-batch is larger than this.
TARGET_RECORDS_PER_TASK = 1_000_000
#: Tasks a micro-batch is spread over at least (when it has that many ranges).
MIN_TASKS = 2


@dataclass(frozen=True)
class OffsetRange:
    """Records [start, end) of one partition of one topic on one cluster."""

    cluster: str
    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        """Number of offsets in the range."""
        return self.end - self.start


@dataclass(frozen=True)
class ReadSettings:
    """Executor-side settings a task carries (options are never re-parsed on executors).

    Attributes
    ----------
    poll_timeout_ms:
        How long to wait for the records of a range before failing.
    cache_timeout_ms:
        Idle time after which a pooled consumer is closed.
    live_clusters:
        Clusters present in this micro-batch; pooled consumers of other clusters are closed.
    """

    poll_timeout_ms: int
    cache_timeout_ms: int
    live_clusters: frozenset[str]


class ReadTask(InputPartition):  # type: ignore[misc]
    """One Spark task: ranges (grouped by cluster) and the client properties to read them.

    Parameters
    ----------
    ranges:
        Exact ranges to read.
    properties:
        Client properties for each cluster named by ``ranges``.
    settings:
        Read settings.
    """

    def __init__(
        self,
        ranges: tuple[OffsetRange, ...],
        properties: Mapping[str, FrozenProperties],
        settings: ReadSettings,
    ) -> None:
        self.ranges = ranges
        self.properties = dict(properties)
        self.settings = settings

    def by_cluster(self) -> dict[str, list[OffsetRange]]:
        """The ranges grouped by cluster id, in id order."""
        groups: dict[str, list[OffsetRange]] = {}
        for r in sorted(self.ranges, key=lambda r: (r.cluster, r.topic, r.partition)):
            groups.setdefault(r.cluster, []).append(r)
        return groups

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{r.cluster}/{r.topic}/{r.partition}[{r.start},{r.end})" for r in self.ranges[:4]
        )
        more = f", +{len(self.ranges) - 4} more" if len(self.ranges) > 4 else ""
        return f"ReadTask({shown}{more})"


def offset_ranges(
    start: Mapping[PartitionKey, int], end: Mapping[PartitionKey, int]
) -> list[OffsetRange]:
    """Non-empty ranges for every partition of ``end``.

    A partition absent from ``start`` first appears in an offset at its starting position, so it
    contributes nothing here; ranges that would go backwards are empty.
    """
    ranges = []
    for key in sorted(end):
        begin = start.get(key)
        if begin is None or end[key] <= begin:
            continue
        ranges.append(OffsetRange(key[0], key[1], key[2], begin, end[key]))
    return ranges


def plan_tasks(
    ranges: Iterable[OffsetRange],
    properties: Mapping[str, FrozenProperties],
    settings: ReadSettings,
    target_records: int = TARGET_RECORDS_PER_TASK,
    min_tasks: int = MIN_TASKS,
) -> list[ReadTask]:
    """Pack ranges into tasks: as few as the volume needs, balanced by record count.

    The task count is ``ceil(total / target_records)``, at least ``min_tasks``, at most one per
    range. Ranges are assigned largest first to the least-loaded task.
    """
    todo = sorted(ranges, key=lambda r: (-r.size, r.cluster, r.topic, r.partition))
    if not todo:
        return []
    total = sum(r.size for r in todo)
    count = max(min_tasks, -(-total // max(1, target_records)))
    count = min(count, len(todo))
    heap: list[tuple[int, int]] = [(0, i) for i in range(count)]
    bins: list[list[OffsetRange]] = [[] for _ in range(count)]
    for r in todo:
        load, index = heapq.heappop(heap)
        bins[index].append(r)
        heapq.heappush(heap, (load + r.size, index))
    tasks = []
    for chunk in bins:
        clusters = {r.cluster for r in chunk}
        tasks.append(ReadTask(tuple(chunk), {c: properties[c] for c in sorted(clusters)}, settings))
    return tasks
