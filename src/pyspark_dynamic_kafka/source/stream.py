"""The micro-batch stream reader: offsets per cluster/topic/partition, reconciled with metadata."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, SupportsTriggerAvailableNow

from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.position import PartitionKey
from pyspark_dynamic_kafka.source.archive.hybrid import HybridArchive
from pyspark_dynamic_kafka.source.archive.phase import encode_phase, reject_archive
from pyspark_dynamic_kafka.source.archive.read import ArchiveTask, read_archive
from pyspark_dynamic_kafka.source.committing import GroupCommits
from pyspark_dynamic_kafka.source.discovery import Assignment, Discovery
from pyspark_dynamic_kafka.source.gcpause import gc_paused
from pyspark_dynamic_kafka.source.grouping import GroupPlanner, stop_on_sigterm
from pyspark_dynamic_kafka.source.limits import Admission
from pyspark_dynamic_kafka.source.listing import OffsetLister
from pyspark_dynamic_kafka.source.named_offsets import check_named_partitions
from pyspark_dynamic_kafka.source.offsets import decode_offsets, encode_offsets
from pyspark_dynamic_kafka.source.planning import new_group_id, offset_ranges, plan_query_tasks
from pyspark_dynamic_kafka.source.positions import (
    LATEST_RULE,
    PositionRule,
    discovery_rule,
    start_rule,
)
from pyspark_dynamic_kafka.source.read import read_task
from pyspark_dynamic_kafka.source.reconcile import (
    Loss,
    Reconciled,
    offsets_went_back,
    reconcile,
    report_losses,
)
from pyspark_dynamic_kafka.source.retention import decode_retained, retain, with_retained
from pyspark_dynamic_kafka.source.settings import SourceOptions
from pyspark_dynamic_kafka.source.status import STATUS_KEY, SourceStatus
from pyspark_dynamic_kafka.source.task import ReadTask

__all__ = ["DynamicKafkaStreamReader"]

_log = logging.getLogger(__name__)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class DynamicKafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):  # type: ignore[misc]
    """Reads the subscribed streams micro-batch by micro-batch.

    On the driver it keeps the metadata discovery and one admin client per cluster (created
    lazily, never pickled); executors get a pickled copy that only runs :meth:`read`.

    Parameters
    ----------
    options:
        Parsed source options.
    """

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._discovery: Discovery | None = None
        self._lister = OffsetLister(options)
        self._admission = Admission(options)
        self._group_id = new_group_id(options)
        self._initial: dict[str, Any] | None = None
        self._latest: dict[str, Any] | None = None
        self._target: dict[PartitionKey, int] | None = None
        self._rewound: dict[PartitionKey, int] = {}
        self._reported: set[Loss] = set()
        self._absent: dict[str, frozenset[str]] = {}
        self._generation = 0
        self._clock = _now_ms
        self._archive = HybridArchive(options) if options.archive_path is not None else None
        self._status = SourceStatus(
            options.subscription_description(), options.discovery_failure_threshold
        )
        self._commits: GroupCommits | None = None
        self._group: GroupPlanner | None = None

    def __getstate__(self) -> dict[str, Any]:
        """An executor's copy holds the options only: it runs :meth:`read`, nothing else."""
        return {"_options": self._options}

    # ----------------------------------------------------------------- driver: metadata
    def _grouped(self) -> GroupPlanner | None:
        """With ``assignment=group`` the query's group members (created at first use)."""
        if self._options.assignment != "group":
            return None
        if self._group is None:
            self._group = GroupPlanner(self._lister, self._options.admin_timeout_ms)
            stop_on_sigterm(self._group)
        return self._group

    def _assignment(self, refresh: bool = True) -> Assignment:
        """The current assignment; ``refresh=False`` never re-reads metadata once it has some."""
        if self._discovery is None:
            self._discovery = Discovery(self._options)
        snapshot = self._discovery.snapshot
        assignment = snapshot if not refresh and snapshot is not None else self._discovery.current()
        self._lister.retire_except(assignment)
        return assignment

    def _reconcile(
        self,
        previous: Mapping[PartitionKey, int],
        rule: PositionRule,
        entering: bool = True,
        assignment: Assignment | None = None,
    ) -> Reconciled:
        """List every assigned cluster, decide on data loss, log what changed.

        ``entering=False``: the partitions seen for the first time are not entering the offset
        (the AvailableNow target), so their positions are not logged as starting points.
        ``assignment``: the one to reconcile with (default: the current metadata).
        """
        if assignment is None:
            assignment = self._assignment()
        state = reconcile(assignment, previous, self._lister, rule)
        report_losses(state.losses, self._options.fail_on_data_loss, self._reported)
        if state.losses:  # a deleted or recreated topic: pooled consumers are not reused
            self._generation += 1
        self._rewound.update(state.rewound)
        for cluster_id, absent in state.absent.items():
            if absent != self._absent.get(cluster_id, frozenset()) and absent:
                _log.warning(
                    "Cluster %r has no topic(s) %s; they are read once they exist.",
                    cluster_id,
                    sorted(absent),
                )
            self._absent[cluster_id] = absent
        for key, offset in state.entered.items() if entering else ():
            _log.info("Partition %s/%s/%d starts at offset %d", *key, offset)
        return state

    # ----------------------------------------------------------------- driver: offsets
    def initialOffset(self) -> dict[str, Any]:
        """Resolve the starting options to concrete offsets (cached: Spark may ask twice)."""
        if self._initial is None:
            spec = self._options.starting
            rule = start_rule(self._options, batch=False)
            if self._archive is not None:  # archived partitions start where the archive ends
                rule = self._archive.start_rule(rule)
            group = self._grouped()
            if group is None:
                offsets = self._reconcile({}, rule).offsets
                check_named_partitions([spec], offsets)
            else:  # the partitions the group assigns, at its offsets where it has some
                assignment = self._assignment()
                state = self._reconcile({}, rule, entering=False, assignment=assignment)
                check_named_partitions([spec], state.offsets)
                offsets = group.plan({}, state.offsets, assignment)[0]
                group.planned(offsets)
            if self._archive is None:
                self._initial = encode_offsets(offsets)
            else:
                self._initial = self._archive.initial_offset(offsets)
        return self._initial

    def prepareForTriggerAvailableNow(self) -> None:
        """Record the latest offsets now: a ``Trigger.AvailableNow`` query reads up to them only.

        Partitions discovered later enter the offset at their starting position but are not read.
        """
        if self._options.assignment == "group":
            raise OptionsError(
                "Option 'assignment' (group) does not work with Trigger.AvailableNow: the "
                "partitions a member owns change with the group, so 'what is available now' has "
                "no end. Use a processing-time trigger, or assignment=all."
            )
        self._target = self._reconcile({}, LATEST_RULE, entering=False).offsets
        _log.info("Trigger.AvailableNow reads up to %s", encode_offsets(self._target))

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxOffsetsPerTrigger`` (or ``minOffsetsPerTrigger``, or with an archive
        ``archive.maxFilesPerTrigger``) as a Spark read limit."""
        limit = self._admission.default_limit()
        return limit if self._archive is None else self._archive.default_limit(limit)

    @gc_paused
    def latestOffset(self, start: dict[str, Any], limit: Any = None) -> dict[str, Any]:
        """The end of the next micro-batch, reconciled with the current metadata.

        A cluster, topic or partition seen for the first time enters the offset at its starting
        position (the metadata's ``startingOffsets`` for a cluster read for the first time, else
        ``discoveryStartingOffsets``), so its first range is exact and checkpointed. Clusters and
        topics removed from the metadata leave the offset. Data loss fails the query or, with
        ``failOnDataLoss=false``, is skipped. With ``Trigger.AvailableNow`` no partition goes past
        the offsets recorded when the query started. The read limit (``maxOffsetsPerTrigger``,
        ``minOffsetsPerTrigger``) applies last; returning ``start`` means "no batch yet".
        With ``removedClusterRetentionMs``, a cluster or topic removed from the metadata keeps
        its offsets under ``retained`` for that long, and resumes from them when re-added
        (:mod:`~pyspark_dynamic_kafka.source.retention`). With ``archive.path`` the query first
        advances through the archive's files (:mod:`~pyspark_dynamic_kafka.source.archive`), then
        switches to Kafka here; archived partitions not assigned are retained without expiry.
        """
        archive = self._archive
        if archive is None:
            reject_archive(start)
        else:
            in_archive = archive.advance(start, limit)
            if in_archive is not None:
                self._latest = in_archive
                return in_archive
        assignment = self._assignment()
        pairs = {(c, t) for c, a in assignment.items() for t in a.topics}
        committed = decode_offsets(start)
        switching = archive is not None and archive.switching(start)
        retention = retain(
            committed,
            decode_retained(start),
            pairs,
            self._options.removed_cluster_retention_ms,
            self._clock,
            expiring=not switching,  # at the switch, pairs left are kept where Kafka starts
        )
        previous = {**retention.resumed, **committed}
        group = self._grouped()
        if group is None:
            state = self._reconcile(previous, discovery_rule(self._options), assignment=assignment)
        else:  # partitions newly assigned start where the group is, else at the start rule's
            rule = start_rule(self._options, batch=False)
            state = self._reconcile(previous, rule, entering=False, assignment=assignment)
            state.offsets, state.entered = group.plan(previous, state.offsets, assignment)
        self._monitor(previous, state, assignment)
        if archive is not None:
            losses = archive.switch_losses(start, previous, self._lister, assignment)
            report_losses(losses, self._options.fail_on_data_loss, self._reported)
        available = state.offsets
        self._latest = encode_offsets(available)
        end = self._within_target(previous, available)
        begin = {
            k: self._rewound.get(k, v) if end.get(k, v) < v else v for k, v in previous.items()
        }
        admitted = self._admission.admit(limit, begin, end, self._target is not None)
        if admitted is None and group is not None and set(end) != set(previous):
            admitted = end  # partitions handed over or sitting out: never wait for more data
        self._status.plan(begin, previous if admitted is None else admitted)
        if group is not None:
            group.planned(previous if admitted is None else admitted)
        if admitted is None:
            return dict(start)
        offset = encode_offsets(admitted) if archive is None else encode_phase(admitted, None)
        return with_retained(offset, retention.retained)

    def _monitor(
        self, previous: Mapping[PartitionKey, int], state: Reconciled, assignment: Assignment
    ) -> None:
        """Report the reconciliation with ``assignment`` (status, log line); commit ``previous``
        (the end of the last micro-batch Spark committed) to the group with
        ``commitOffsetsToKafka``."""
        discovery = self._discovery
        if discovery is None:
            return
        self._status.observe(
            assignment, state.entered, discovery.failures, discovery.last_success_ms
        )
        if self._options.commit_offsets_to_kafka and self._group is None:
            if self._commits is None:
                self._commits = GroupCommits(self._options, admins=self._lister.admin_with)
            self._commits.submit(previous, assignment)

    def _within_target(
        self, previous: Mapping[PartitionKey, int], available: Mapping[PartitionKey, int]
    ) -> dict[PartitionKey, int]:
        target = self._target
        if target is None:
            return dict(available)
        end: dict[PartitionKey, int] = {}
        for key, offset in available.items():
            if key not in previous:  # enters at its starting position
                end[key] = offset
            elif key in target:
                end[key] = min(offset, max(target[key], previous[key]))
            else:  # discovered after the query started: enters, is not read
                end[key] = previous[key]
        return end

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """The offsets available at the last :meth:`latestOffset` call, with the status monitoring
        reads (:mod:`~pyspark_dynamic_kafka.source.status`; ids, offsets and counts only)."""
        report = self._status.report(self._latest)
        if report is not None and self._group is not None:  # where the listener reports batches
            report[STATUS_KEY]["handoff"] = self._group.inbox.path
        return report

    @gc_paused
    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        """Plan the exact ranges between two offsets into few, large tasks.

        A partition retained in ``start`` and back in ``end`` is read from its retained offset.
        """
        archived = self._archive.tasks(start, end) if self._archive is not None else []
        begin = {**decode_retained(start).offsets, **decode_offsets(start)}
        finish = decode_offsets(end)
        went_back = offsets_went_back(begin, finish)  # e.g. a batch replayed from the checkpoint
        report_losses(went_back, self._options.fail_on_data_loss, self._reported)
        ranges = offset_ranges(begin, finish, self._rewound)
        if not ranges:
            return archived
        assignment = self._assignment(refresh=False)  # the metadata latestOffset planned with
        unreadable = sorted({r.cluster for r in ranges if r.cluster not in assignment})
        if unreadable:
            _log.warning(
                "Clusters %s are no longer in the metadata; their pending ranges are not read.",
                unreadable,
            )
            ranges = [r for r in ranges if r.cluster in assignment]
        group = self._grouped()
        if group is not None:  # a replayed micro-batch may hold partitions others read meanwhile
            ranges = group.trim(ranges, assignment)
        properties = {c: a.properties for c, a in assignment.items()}
        tasks = plan_query_tasks(
            ranges, properties, self._options, self._group_id, self._generation
        )
        return [*archived, *tasks]

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: offsets live in Spark's checkpoint (with ``assignment=group`` they
        reach the group at the next ``latestOffset``, or earlier through the listener)."""

    def stop(self) -> None:
        """Leave the consumer groups (``assignment=group``) after the last commit.

        Spark runs this when the source's process ends on its own; a ``query.stop()`` ends it
        with SIGTERM, which does the same (:func:`~pyspark_dynamic_kafka.source.grouping.
        stop_on_sigterm`).
        """
        if self._group is not None:
            self._group.shutdown()

    # ----------------------------------------------------------------- executors
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Read one planned task as Arrow record batches."""
        if isinstance(partition, ArchiveTask):
            return read_archive(partition)
        if not isinstance(partition, ReadTask):
            raise TypeError(f"unexpected input partition {partition!r}")
        return read_task(partition)
