"""The driver's micro-batch pipeline, the same for every mode.

:meth:`MicroBatches.latest` is one pass through short steps::

    decode -> (archive) -> retain -> reconcile + select -> target -> admit -> report -> encode

The two things that differ between queries are objects behind one seam each, chosen once when
the reader is built: *which partitions* are read (:class:`PartitionSelection`: every partition
the metadata assigns, or the ones Kafka's consumer group assigns, :mod:`~pyspark_dynamic_kafka.
source.group.selection`) and *whether an archive comes first* (:class:`ArchivePhase`:
:class:`NoArchive`, or :class:`~pyspark_dynamic_kafka.source.archive.hybrid.HybridArchive`).
Where a newly seen partition starts is :mod:`~pyspark_dynamic_kafka.source.driver.start_policy`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from pyspark.sql.streaming.datasource import ReadLimit

from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.position import PartitionKey
from pyspark_dynamic_kafka.source.checkpoint import Retained, SourceOffset, decode, encode
from pyspark_dynamic_kafka.source.config.parsed import SourceOptions
from pyspark_dynamic_kafka.source.driver.admission import Admission
from pyspark_dynamic_kafka.source.driver.discovery import Assignment, Discovery
from pyspark_dynamic_kafka.source.driver.listing import OffsetLister
from pyspark_dynamic_kafka.source.driver.planning import (
    new_group_id,
    offset_ranges,
    plan_query_tasks,
)
from pyspark_dynamic_kafka.source.driver.reconcile import (
    Loss,
    Reconciled,
    offsets_went_back,
    reconcile,
    report_losses,
)
from pyspark_dynamic_kafka.source.driver.retention import retain
from pyspark_dynamic_kafka.source.driver.start_policy import LATEST_RULE, PositionRule
from pyspark_dynamic_kafka.source.driver.status import SourceStatus
from pyspark_dynamic_kafka.source.executor.task import OffsetRange

__all__ = ["ArchivePhase", "Driver", "MicroBatches", "NoArchive", "PartitionSelection"]

_log = logging.getLogger(__name__)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class Driver:
    """The driver's view of the clusters: metadata, listing, reconciliation and its log lines.

    Parameters
    ----------
    options:
        Parsed source options.
    lister:
        The driver's listing clients.
    """

    def __init__(self, options: SourceOptions, lister: OffsetLister) -> None:
        self.options = options
        self.lister = lister
        self.discovery: Discovery | None = None
        self.rewound: dict[PartitionKey, int] = {}
        self.generation = 0
        self._reported: set[Loss] = set()
        self._absent: dict[str, frozenset[str]] = {}

    def assignment(self, refresh: bool = True) -> Assignment:
        """The current assignment; ``refresh=False`` never re-reads metadata once it has some."""
        if self.discovery is None:
            self.discovery = Discovery(self.options)
        snapshot = self.discovery.snapshot
        assignment = snapshot if not refresh and snapshot is not None else self.discovery.current()
        self.lister.retire_except(assignment)
        return assignment

    def report(self, losses: list[Loss]) -> None:
        """Fail on data loss, or (``failOnDataLoss=false``) log each loss once."""
        report_losses(losses, self.options.fail_on_data_loss, self._reported)

    def reconcile(
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
            assignment = self.assignment()
        state = reconcile(assignment, previous, self.lister, rule)
        self.report(state.losses)
        if state.losses:  # a deleted or recreated topic: pooled consumers are not reused
            self.generation += 1
        self.rewound.update(state.rewound)
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


class PartitionSelection(Protocol):
    """Which partitions a stream reads (``assignment``), and what that mode adds to a step."""

    def initial(self, driver: Driver, rule: PositionRule) -> dict[PartitionKey, int]:
        """The offsets a stream starts with, partitions placed by ``rule``."""

    def select(
        self, driver: Driver, previous: Mapping[PartitionKey, int], assignment: Assignment
    ) -> Reconciled:
        """Reconcile ``previous`` with ``assignment``: the offsets of the partitions read now."""

    def submit(self, previous: Mapping[PartitionKey, int], assignment: Assignment) -> None:
        """Hand ``previous`` (the end of the last committed micro-batch) to Kafka, if asked."""

    def settle(
        self,
        admitted: dict[PartitionKey, int] | None,
        previous: Mapping[PartitionKey, int],
        end: Mapping[PartitionKey, int],
    ) -> dict[PartitionKey, int] | None:
        """The micro-batch's end after admission (``None``: no micro-batch yet)."""

    def planned(self, end: Mapping[PartitionKey, int], batch: bool) -> None:
        """Record the offset ``latestOffset`` returns (``batch``: a new micro-batch)."""

    def trim(self, ranges: Sequence[OffsetRange], assignment: Assignment) -> list[OffsetRange]:
        """The parts of a micro-batch's ranges this query may read."""

    def report(self, status: dict[str, Any]) -> None:
        """Add what monitoring needs of this mode to the reported status."""

    def available_now(self) -> None:
        """Fail when this mode cannot serve ``Trigger.AvailableNow``."""

    def stop(self) -> None:
        """Release what the mode holds (group memberships)."""


class ArchivePhase(Protocol):
    """What comes before Kafka: nothing (:class:`NoArchive`) or an archive's files."""

    def start_rule(self, rule: PositionRule) -> PositionRule:
        """``rule`` with where the archive hands each partition over to Kafka first."""

    def initial(self, offsets: Mapping[PartitionKey, int]) -> SourceOffset:
        """The first offset of a stream whose Kafka partitions start at ``offsets``."""

    def default_limit(self, limit: ReadLimit) -> ReadLimit:
        """The read limit, with the archive's own when nothing else limits reads."""

    def advance(self, start: SourceOffset, limit: Any) -> SourceOffset | None:
        """The end of the next micro-batch of the archive; ``None``: Kafka is read now."""

    def switch_losses(
        self,
        start: SourceOffset,
        previous: Mapping[PartitionKey, int],
        lister: OffsetLister,
        assignment: Assignment,
    ) -> list[Loss]:
        """At the switch to Kafka, partitions whose first live offset is gone."""

    def live(self, offsets: Mapping[PartitionKey, int], retained: Retained) -> SourceOffset:
        """The offset of a micro-batch that reads Kafka."""

    def tasks(self, start: SourceOffset | None, end: SourceOffset | None) -> list[Any]:
        """Spark tasks of the archive's files between two offsets."""


class NoArchive:
    """No archive: Kafka from the start (the offset JSON has no ``phase``)."""

    def start_rule(self, rule: PositionRule) -> PositionRule:
        return rule

    def initial(self, offsets: Mapping[PartitionKey, int]) -> SourceOffset:
        return SourceOffset(offsets)

    def default_limit(self, limit: ReadLimit) -> ReadLimit:
        return limit

    def advance(self, start: SourceOffset, limit: Any) -> SourceOffset | None:
        if start.in_archive:  # going live would skip the archive's unread files
            raise OffsetsError(
                "The checkpoint is in the archive phase of a hybrid read, but the query has no "
                "'archive.path': set it back to the archive the query started with (it switches "
                "to Kafka by itself once the archive is read)."
            )
        return None

    def switch_losses(
        self,
        start: SourceOffset,
        previous: Mapping[PartitionKey, int],
        lister: OffsetLister,
        assignment: Assignment,
    ) -> list[Loss]:
        return []

    def live(self, offsets: Mapping[PartitionKey, int], retained: Retained) -> SourceOffset:
        return SourceOffset(offsets, retained)

    def tasks(self, start: SourceOffset | None, end: SourceOffset | None) -> list[Any]:
        return []


class MicroBatches:
    """The offsets and tasks of a stream's micro-batches (what the stream reader delegates to).

    Parameters
    ----------
    driver:
        Metadata, listing and reconciliation.
    selection:
        Which partitions are read.
    archive:
        What comes before Kafka.
    rule:
        Where partitions start (:func:`~pyspark_dynamic_kafka.source.driver.start_policy.
        start_rule`; ``archive`` puts its hand-over to Kafka first).
    clock:
        Epoch milliseconds (the retention window's).
    """

    def __init__(
        self,
        driver: Driver,
        selection: PartitionSelection,
        archive: ArchivePhase,
        rule: PositionRule,
        clock: Callable[[], int] = _now_ms,
    ) -> None:
        options = driver.options
        self.driver = driver
        self.selection = selection
        self.archive = archive
        self.rule = rule
        self.clock = clock
        self.admission = Admission(options)
        self.status = SourceStatus(
            options.subscription_description(), options.discovery_failure_threshold
        )
        self.latest_offset: dict[str, Any] | None = None
        self._initial: dict[str, Any] | None = None
        self._target: dict[PartitionKey, int] | None = None
        self._group_id = new_group_id(options)

    def initial(self) -> dict[str, Any]:
        """The first offset (cached: Spark may ask twice)."""
        if self._initial is None:
            offsets = self.selection.initial(self.driver, self.archive.start_rule(self.rule))
            spec = self.driver.options.starting
            unknown = sorted(spec.topics() - {(c, t) for c, t, _ in offsets})
            if unknown:
                _log.warning(
                    "%s names cluster/topic pairs that are not read now: %s",
                    spec.option,
                    ", ".join(f"{c}/{t}" for c, t in unknown),
                )
            self._initial = encode(self.archive.initial(offsets))
        return self._initial

    def available_now(self) -> None:
        """Record the latest offsets now: the stream reads up to them only."""
        self.selection.available_now()
        self._target = self.driver.reconcile({}, LATEST_RULE, entering=False).offsets
        _log.info("Trigger.AvailableNow reads up to %s", encode(SourceOffset(self._target)))

    def latest(self, start_offset: dict[str, Any], limit: Any) -> dict[str, Any]:
        """The end of the next micro-batch (``start_offset`` itself: no micro-batch yet)."""
        start = decode(start_offset)
        ahead = self.archive.advance(start, limit)
        if ahead is not None:
            self.latest_offset = encode(ahead)
            return self.latest_offset
        driver = self.driver
        assignment = driver.assignment()
        retention = retain(
            start.offsets,
            start.retained,
            {(c, t) for c, a in assignment.items() for t in a.topics},
            driver.options.removed_cluster_retention_ms,
            self.clock,
            expiring=not start.in_archive,  # at the switch, pairs left are kept where Kafka starts
        )
        previous = {**retention.resumed, **start.offsets}
        state = self.selection.select(driver, previous, assignment)
        self._observe(state, assignment)
        self.selection.submit(previous, assignment)
        driver.report(self.archive.switch_losses(start, previous, driver.lister, assignment))
        self.latest_offset = encode(SourceOffset(state.offsets))
        end = self._within_target(previous, state.offsets)
        begin = {
            k: driver.rewound.get(k, v) if end.get(k, v) < v else v for k, v in previous.items()
        }
        admitted = self.admission.admit(limit, begin, end, self._target is not None)
        admitted = self.selection.settle(admitted, previous, end)
        self.status.plan(begin, previous if admitted is None else admitted)
        self.selection.planned(previous if admitted is None else admitted, admitted is not None)
        if admitted is None:
            return dict(start_offset)
        return encode(self.archive.live(admitted, retention.retained))

    def _observe(self, state: Reconciled, assignment: Assignment) -> None:
        discovery = self.driver.discovery
        if discovery is not None:
            self.status.observe(
                assignment, state.entered, discovery.failures, discovery.last_success_ms
            )

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

    def report(self) -> dict[str, Any] | None:
        """The latest offsets with the status monitoring reads."""
        report = self.status.report(self.latest_offset)
        if report is not None:
            self.selection.report(report)
        return report

    def tasks(self, start_offset: dict[str, Any], end_offset: dict[str, Any]) -> list[Any]:
        """The exact ranges between two offsets, planned into few, large tasks."""
        start, end = decode(start_offset), decode(end_offset)
        archived = self.archive.tasks(start, end)
        begin = {**start.retained.offsets, **start.offsets}
        went_back = offsets_went_back(begin, end.offsets)  # e.g. a batch replayed
        self.driver.report(went_back)
        ranges = offset_ranges(begin, end.offsets, self.driver.rewound)
        if not ranges:
            return archived
        assignment = self.driver.assignment(refresh=False)  # what latestOffset planned with
        unreadable = sorted({r.cluster for r in ranges if r.cluster not in assignment})
        if unreadable:
            _log.warning(
                "Clusters %s are no longer in the metadata; their pending ranges are not read.",
                unreadable,
            )
            ranges = [r for r in ranges if r.cluster in assignment]
        ranges = self.selection.trim(ranges, assignment)
        properties = {c: a.properties for c, a in assignment.items()}
        tasks = plan_query_tasks(
            ranges, properties, self.driver.options, self._group_id, self.driver.generation
        )
        return [*archived, *tasks]
