"""The archive phase's plan, made on the driver: the files in read order, where each partition
switches to Kafka, and which files each micro-batch and each Spark task reads.

Read order: each partition's records must come out in offset order, so files holding the same
partition are read in the order of their smallest offset of it (a topological order over all
partitions, ties broken by path). An archive whose files interleave a partition's offsets has no
such order; it is read in path order, with a warning. Without offsets (timestamp switch) the
order is the path order.

A plan is identified by a fingerprint of its files (relative path and size, in read order), which
the checkpoint records with the number of files done: a restart during the archive phase makes
the same plan from the files that existed when the query started, or fails naming the change.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark_dynamic_kafka.errors import ArchiveError
from pyspark_dynamic_kafka.offset_spec import PartitionKey
from pyspark_dynamic_kafka.source.archive.files import list_files, parse_location
from pyspark_dynamic_kafka.source.archive.survey import FileSurvey, survey_files
from pyspark_dynamic_kafka.source.executor.archive import ArchiveFile, ArchiveTask, filesystem

if TYPE_CHECKING:
    from pyspark_dynamic_kafka.source.executor.archive import ArchiveRead

__all__ = ["ArchivePlan", "check_same_plan", "make_plan", "read_order"]

_log = logging.getLogger(__name__)

#: Rows one archive task aims to read (as many tasks as the volume needs, at least two).
TARGET_ROWS_PER_TASK = 1_000_000
MIN_TASKS = 2


@dataclass(frozen=True)
class ArchivePlan:
    """The archive's files in read order and the offsets where Kafka takes over.

    Attributes
    ----------
    option:
        ``archive.path`` as given.
    base:
        The location executors resolve the filesystem from.
    files:
        The files, in read order.
    rows:
        Row count of each file (same order).
    switch:
        Per (cluster, topic, partition) in the archive: its largest archived offset + 1 (empty
        with a timestamp switch).
    listed_at_ms:
        When the archive was listed: files modified later are not part of the plan.
    """

    option: str
    base: str
    files: tuple[ArchiveFile, ...]
    rows: tuple[int, ...]
    switch: Mapping[PartitionKey, int]
    listed_at_ms: int

    @property
    def fingerprint(self) -> str:
        """A digest of the files (relative path and size) in read order."""
        digest = hashlib.sha256()
        for file in self.files:
            digest.update(f"{file.relative}\t{file.size}\n".encode())
        return digest.hexdigest()[:16]

    def select(self, done: int, max_files: int | None, max_rows: int | None) -> int:
        """The index after the last file of the next micro-batch starting at file ``done``:
        at most ``max_files`` files and, past the first, ``max_rows`` rows."""
        end, rows = done, 0
        while end < len(self.files):
            if max_files is not None and end - done >= max_files:
                break
            if max_rows is not None and end > done and rows + self.rows[end] > max_rows:
                break
            rows += self.rows[end]
            end += 1
        return end

    def tasks(
        self,
        start: int,
        end: int,
        settings: ArchiveRead,
        min_tasks: int | None = None,
        max_rows_per_task: int | None = None,
    ) -> list[ArchiveTask]:
        """Files ``[start, end)`` as Spark tasks: consecutive files per task, balanced by rows
        (files are never split), so task order is read order."""
        files, rows = self.files[start:end], self.rows[start:end]
        if not files:
            return []
        total = sum(rows)
        cap = max_rows_per_task or TARGET_ROWS_PER_TASK
        count = min(len(files), max(min_tasks or MIN_TASKS, -(-total // max(1, cap))))
        cuts, seen = [0], 0
        for index, size in enumerate(rows):
            seen += size
            left = count - len(cuts)  # cuts still to make
            if left > 0 and (seen * count >= total * len(cuts) or len(files) - index - 1 == left):
                cuts.append(index + 1)
        cuts.append(len(files))
        return [ArchiveTask(files[a:b], settings) for a, b in itertools.pairwise(cuts)]


def read_order(surveys: Sequence[FileSurvey]) -> list[FileSurvey]:
    """Files in an order that reads every partition's offsets ascending (see module doc)."""
    by_path = sorted(surveys, key=lambda s: s.file.relative)
    holders: dict[PartitionKey, list[tuple[int, int]]] = {}
    for i, survey in enumerate(by_path):
        for key, (low, _) in survey.spans.items():
            holders.setdefault(key, []).append((low, i))
    after: list[set[int]] = [set() for _ in by_path]
    for held in holders.values():
        held.sort()
        for (_, a), (_, b) in itertools.pairwise(held):
            after[a].add(b)
    waiting = [0] * len(by_path)
    for successors in after:
        for b in successors:
            waiting[b] += 1
    ready = [i for i, n in enumerate(waiting) if n == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for b in after[i]:
            waiting[b] -= 1
            if waiting[b] == 0:
                heapq.heappush(ready, b)
    if len(order) < len(by_path):
        _log.warning(
            "Archive files interleave the offsets of a partition: no file order reads every "
            "partition in offset order; reading them in path order."
        )
        return by_path
    return [by_path[i] for i in order]


def make_plan(option: str, exact: bool, listed_before_ms: int | None = None) -> ArchivePlan:
    """List and survey the archive at ``option`` and plan its reading.

    Parameters
    ----------
    option:
        ``archive.path``.
    exact:
        Whether the switch is by offset (files must have the key columns and ``offset``).
    listed_before_ms:
        A restart's plan: only files modified at or before this time (when the query started).

    Raises
    ------
    ArchiveError
        When the archive cannot be listed or read, or lacks a column the switch needs.
    """
    started_ms = int(time.time() * 1000)
    location = parse_location(option)
    files = list_files(location)
    if listed_before_ms is not None:
        files = [f for f in files if f.mtime_ms <= listed_before_ms]
    fs, _ = filesystem(location.base)
    surveys = read_order(survey_files(fs, files, offsets=exact))
    switch: dict[PartitionKey, int] = {}
    for survey in surveys:
        for key, (_, high) in survey.spans.items():
            switch[key] = max(switch.get(key, 0), high + 1)
    newest = max((f.mtime_ms for f in files), default=0)
    listed_at = listed_before_ms if listed_before_ms is not None else max(started_ms, newest)
    plan = ArchivePlan(
        option,
        location.base,
        tuple(s.file for s in surveys),
        tuple(s.rows for s in surveys),
        dict(sorted(switch.items())),
        listed_at,
    )
    _log.info(
        "Archive %s: %d file(s), %d row(s), %d partition(s) switch to Kafka by offset",
        option,
        len(plan.files),
        sum(plan.rows),
        len(plan.switch),
    )
    return plan


def check_same_plan(plan: ArchivePlan, files: int, fingerprint: str) -> None:
    """Fail unless ``plan`` is the plan a checkpoint recorded (``files`` and ``fingerprint``).

    Raises
    ------
    ArchiveError
        Naming the archive and what differs.
    """
    if len(plan.files) != files or plan.fingerprint != fingerprint:
        raise ArchiveError(
            f"archive.path {plan.option!r} changed since the query started: the checkpoint's "
            f"plan has {files} file(s) (fingerprint {fingerprint}), the files that existed then "
            f"are now {len(plan.files)} (fingerprint {plan.fingerprint}). Restore the archive "
            "as it was until the archive phase ends, or start the query on a new checkpoint."
        )
