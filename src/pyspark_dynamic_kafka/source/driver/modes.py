"""What differs between streams, each behind one seam chosen when the reader is built:

- :class:`PartitionSelection`, which partitions are read (option ``assignment``): every partition
  the metadata assigns or the ones Kafka's consumer group assigns
  (:mod:`~pyspark_dynamic_kafka.source.group.selection`);
- :class:`ArchivePhase`, what comes before Kafka (option ``archive.path``): nothing
  (:class:`NoArchive`) or an archive's files
  (:class:`~pyspark_dynamic_kafka.source.archive.hybrid.HybridArchive`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.offset_spec import PartitionKey
from pyspark_dynamic_kafka.source.checkpoint import Retained, SourceOffset
from pyspark_dynamic_kafka.source.driver.cluster_view import ClusterView
from pyspark_dynamic_kafka.source.driver.discovery import Subscription
from pyspark_dynamic_kafka.source.driver.listing import OffsetLister
from pyspark_dynamic_kafka.source.driver.reconcile import Loss, Reconciled
from pyspark_dynamic_kafka.source.driver.start_policy import PositionRule
from pyspark_dynamic_kafka.source.executor.task import OffsetRange
from pyspark_dynamic_kafka.source.read_limits import ReadLimit

__all__ = ["ArchivePhase", "NoArchive", "Offsets", "PartitionSelection"]

#: Next offset to read of each partition.
Offsets = Mapping[PartitionKey, int]


class PartitionSelection(Protocol):
    """Which partitions a stream reads (``assignment``), and what that mode adds to a step.

    An implementation subclasses it and defines :meth:`initial` and :meth:`select`; every other
    step does nothing unless overridden.
    """

    def initial(self, driver: ClusterView, rule: PositionRule) -> dict[PartitionKey, int]:
        """The offsets a stream starts with, partitions placed by ``rule``."""
        ...

    def select(
        self, driver: ClusterView, previous: Offsets, subscription: Subscription
    ) -> Reconciled:
        """Reconcile ``previous`` with ``subscription``: the offsets of the partitions read now."""
        ...

    def submit(self, previous: Offsets, subscription: Subscription) -> None:
        """Hand ``previous`` (the end of the last committed micro-batch) to Kafka, if asked."""

    def settle(
        self, admitted: dict[PartitionKey, int] | None, previous: Offsets, end: Offsets
    ) -> dict[PartitionKey, int] | None:
        """The micro-batch's end after admission (``None``: no micro-batch yet)."""
        return admitted

    def planned(self, end: Offsets, batch: bool) -> None:
        """Record the offset ``latestOffset`` returns (``batch``: a new micro-batch)."""

    def trim(self, ranges: Sequence[OffsetRange], subscription: Subscription) -> list[OffsetRange]:
        """The parts of a micro-batch's ranges this query may read."""
        return list(ranges)

    def report(self, status: dict[str, Any]) -> None:
        """Add what monitoring needs of this mode to the reported status."""

    def available_now(self) -> None:
        """Fail when this mode cannot serve ``Trigger.AvailableNow``."""

    def stop(self) -> None:
        """Release what the mode holds (group memberships)."""


class ArchivePhase(Protocol):
    """What comes before Kafka; what each step does without an archive (:class:`NoArchive`)."""

    def start_rule(self, rule: PositionRule) -> PositionRule:
        """``rule`` with where the archive hands each partition over to Kafka first."""
        return rule

    def covers(self, key: PartitionKey) -> bool:
        """Whether the archive decides where ``key`` starts in Kafka (a batch read then reads
        nothing of it from Kafka when that start is past its end)."""
        return False

    def initial(self, offsets: Offsets) -> SourceOffset:
        """The first offset of a stream whose Kafka partitions start at ``offsets``."""
        return SourceOffset(offsets)

    def default_limit(self, limit: ReadLimit) -> ReadLimit:
        """The read limit, with the archive's own when nothing else limits reads."""
        return limit

    def advance(self, start: SourceOffset, limit: Any) -> SourceOffset | None:
        """The end of the next micro-batch of the archive; ``None``: Kafka is read now."""
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
        previous: Offsets,
        lister: OffsetLister,
        subscription: Subscription,
    ) -> list[Loss]:
        """At the switch to Kafka, partitions whose first live offset is gone."""
        return []

    def live(self, offsets: Offsets, retained: Retained) -> SourceOffset:
        """The offset of a micro-batch that reads Kafka."""
        return SourceOffset(offsets, retained)

    def tasks(self, start: SourceOffset | None, end: SourceOffset | None) -> list[Any]:
        """Spark tasks of the archive's files between two offsets."""
        return []


class NoArchive(ArchivePhase):
    """No archive: Kafka from the start (the offset JSON has no ``phase``)."""
