"""The driver side of a hybrid read: the archive first, then Kafka from where the archive ends.

Used by the stream and batch readers when ``archive.path`` is set:

- :meth:`HybridArchive.start_rule` places every partition the archive has at its largest archived
  offset + 1 (``archive.switchTimestamp``: every partition at the switch timestamp); partitions
  it does not have keep the starting options.
- A stream starts in the archive phase (:meth:`HybridArchive.initial`; archived partitions
  the metadata does not assign are retained without expiry,
  :mod:`~pyspark_dynamic_kafka.source.driver.retention`); :meth:`HybridArchive.advance` moves it by
  whole files under ``archive.maxFilesPerTrigger`` and ``maxOffsetsPerTrigger``; once every file
  is read, the stream reader reconciles Kafka from the offsets the archive phase carried (pairs
  no longer assigned then are retained without expiry too) and writes the live phase.
- :meth:`HybridArchive.tasks` turns the archive files between two offsets (or, for a batch read,
  all of them) into Spark tasks.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pyspark_dynamic_kafka.errors import ArchiveError, KafkaClientError
from pyspark_dynamic_kafka.offset_spec import PartitionKey, PositionKind
from pyspark_dynamic_kafka.source.archive.plan import ArchivePlan, check_same_plan, make_plan
from pyspark_dynamic_kafka.source.checkpoint import Cursor, Retained, SourceOffset, encode
from pyspark_dynamic_kafka.source.config.parsed import SourceOptions
from pyspark_dynamic_kafka.source.driver.discovery import Subscription
from pyspark_dynamic_kafka.source.driver.listing import OffsetLister
from pyspark_dynamic_kafka.source.driver.reconcile import Loss
from pyspark_dynamic_kafka.source.driver.start_policy import PositionRule, archive_rule
from pyspark_dynamic_kafka.source.executor.archive import ArchiveRead, ArchiveTask
from pyspark_dynamic_kafka.source.read_limits import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    ReadMaxRows,
)

__all__ = ["HybridArchive"]

_log = logging.getLogger(__name__)


class HybridArchive:
    """The archive of one query (``archive.path``), planned once per driver process: read
    before Kafka, partition by partition, up to where each switches to Kafka (an offset, or
    ``archive.switchTimestamp``).

    Parameters
    ----------
    options:
        Parsed source options with ``archive_path`` set.
    """

    def __init__(self, options: SourceOptions) -> None:
        if options.archive_path is None:
            raise ArchiveError("HybridArchive needs archive.path")
        self._options = options
        self._path = options.archive_path
        self._plan: ArchivePlan | None = None

    @property
    def exact(self) -> bool:
        """Whether partitions switch by offset (else: at ``archive.switchTimestamp``)."""
        return self._options.archive_switch_timestamp is None

    def plan(self, cursor: Cursor | None = None) -> ArchivePlan:
        """The plan (made on first use); with ``cursor``, checked to be the checkpoint's.

        Raises
        ------
        ArchiveError
            When the archive cannot be planned or is not the one the checkpoint read.
        """
        if self._plan is None:
            listed = cursor.listed_at_ms if cursor is not None else None
            self._plan = make_plan(self._path, self.exact, listed)
        if cursor is not None:
            check_same_plan(self._plan, cursor.files, cursor.fingerprint)
        return self._plan

    # ------------------------------------------------------------------------- positions
    def start_rule(self, rule: PositionRule) -> PositionRule:
        """``rule`` with the archive's switch positions first (see the module doc)."""
        stamp = self._options.archive_switch_timestamp
        if stamp is not None:
            return archive_rule(rule, {}, stamp)
        return archive_rule(rule, self.plan().switch, None, f"the end of the archive {self._path}")

    def covers(self, key: PartitionKey) -> bool:
        """Whether the archive decides where ``key`` starts in Kafka (a batch read then reads
        nothing of it from Kafka when that start is past its end)."""
        return not self.exact or key in self.plan().switch

    # ------------------------------------------------------------------------- stream offsets
    def initial(self, offsets: Mapping[PartitionKey, int]) -> SourceOffset:
        """The first offset: no file read, Kafka starts as placed by :meth:`start_rule`;
        archived partitions of (cluster, topic) pairs not read from Kafka are retained."""
        plan = self.plan()
        read = {(c, t) for c, t, _ in offsets}
        parked = {k: v for k, v in plan.switch.items() if (k[0], k[1]) not in read}
        missing = sorted(k for k in plan.switch if k not in offsets and (k[0], k[1]) in read)
        if missing:
            _log.warning(
                "The archive has partitions Kafka does not have: %s; they are not read from Kafka",
                ", ".join(f"{c}/{t}/{p}" for c, t, p in missing),
            )
        cursor = Cursor(0, len(plan.files), plan.fingerprint, plan.listed_at_ms)
        return SourceOffset(offsets, Retained(parked), cursor, hybrid=True)

    def default_limit(self, limit: ReadLimit) -> ReadLimit:
        """``archive.maxFilesPerTrigger`` as the read limit when nothing else limits reads."""
        most = self._options.archive_max_files
        if isinstance(limit, ReadAllAvailable) and most is not None:
            return ReadMaxFiles(most)
        return limit

    def advance(self, start: SourceOffset, limit: Any) -> SourceOffset | None:
        """The end of the next archive micro-batch, or ``None``: switch to Kafka now.

        ``ReadAllAvailable`` (``Trigger.Once``, or no limit at all) switches at once: the
        micro-batch reads the remaining files and Kafka.
        """
        cursor = start.cursor
        if cursor is None or cursor.done == cursor.files or isinstance(limit, ReadAllAvailable):
            return None
        plan = self.plan(cursor)
        options = self._options
        files = limit.max_files if isinstance(limit, ReadMaxFiles) else options.archive_max_files
        rows = limit.max_rows if isinstance(limit, ReadMaxRows) else options.max_offsets_per_trigger
        done = plan.select(cursor.done, files, rows)
        _log.info("Archive phase: files [%d, %d) of %d next", cursor.done, done, cursor.files)
        return SourceOffset(start.offsets, start.retained, cursor.at(done), hybrid=True)

    def live(self, offsets: Mapping[PartitionKey, int], retained: Retained) -> SourceOffset:
        """The offset of a micro-batch that reads Kafka (the live phase)."""
        return SourceOffset(offsets, retained, None, hybrid=True)

    def switch_losses(
        self,
        start: SourceOffset,
        previous: Mapping[PartitionKey, int],
        lister: OffsetLister,
        subscription: Subscription,
    ) -> list[Loss]:
        """At the switch (``start`` in the archive phase): partitions of ``previous`` (where Kafka
        starts) whose first live offset Kafka no longer has; logs the switch. Empty at any other
        time."""
        cursor = start.cursor
        if cursor is None:
            return []
        losses = []
        for cluster_id, cluster in subscription.items():
            wanted = [(t, p) for c, t, p in previous if c == cluster_id and t in cluster.topics]
            if not wanted:
                continue
            try:
                earliest = lister.admin(cluster_id, cluster).list_offsets(
                    wanted, PositionKind.EARLIEST
                )
            except KafkaClientError as exc:  # the executor still finds a loss when it reads
                _log.warning("Earliest offsets of cluster %r at the switch: %s", cluster_id, exc)
                continue
            for (topic, partition), low in sorted(earliest.items()):
                key = (cluster_id, topic, partition)
                if low > previous[key]:
                    what = f"Kafka no longer has the first live offset (earliest now {low})"
                    losses.append(Loss(key, what, previous[key]))
        _log.warning(  # what the query reads changes: in the driver's log by default
            "Hybrid read: the archive %s is read (%d files); Kafka is read from %s",
            self._path,
            cursor.files,
            encode(SourceOffset(previous))["clusters"],
        )
        return losses

    # ------------------------------------------------------------------------- tasks
    def tasks(self, start: SourceOffset | None, end: SourceOffset | None) -> list[Any]:
        """Archive tasks of the files between two stream offsets; ``None`` for both: every file
        (a batch read)."""
        options = self._options
        if start is None or end is None:
            plan = self.plan()
            first, stop = 0, len(plan.files)
        else:
            cursor = start.cursor
            if cursor is None:
                return []
            last = end.cursor
            first, stop = cursor.done, last.done if last is not None else cursor.files
            if stop <= first:
                return []
            plan = self.plan(cursor)
        settings = ArchiveRead(plan.base, options.include_headers, options.archive_switch_timestamp)
        found: list[ArchiveTask] = plan.tasks(
            first, stop, settings, options.min_partitions, options.max_records_per_partition
        )
        return list(found)
