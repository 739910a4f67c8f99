"""The micro-batch stream reader: Spark's API over the driver's pipeline and the executor's
reader.

Everything a micro-batch decides is :class:`~pyspark_dynamic_kafka.source.driver.pipeline.
MicroBatches`; which partitions are read (``assignment``) and whether an archive comes first
(``archive.path``) are chosen once here, as objects
(:func:`~pyspark_dynamic_kafka.source.group.selection.partition_selection`,
:func:`~pyspark_dynamic_kafka.source.archive.archive_phase`).

Every Spark task unpickles this class, so the driver's modules are imported where the driver
builds the reader and the executor's where a task reads: each role imports only its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from pyspark_dynamic_kafka.source.config.parsed import SourceOptions
from pyspark_dynamic_kafka.source.read_limits import (
    ReadAllAvailable,
    ReadLimit,
    SupportsTriggerAvailableNow,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

    from pyspark_dynamic_kafka.source.driver.pipeline import MicroBatches, Tuning

__all__ = ["DynamicKafkaStreamReader"]


class DynamicKafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):  # type: ignore[misc]
    """Reads the subscribed streams micro-batch by micro-batch.

    On the driver it keeps the metadata discovery and one admin client per cluster (created
    at the first driver call, never pickled); executors get a pickled copy that only runs
    :meth:`read`.

    Parameters
    ----------
    options:
        Parsed source options.
    tuning:
        Knobs benchmarks compare (clusters listed in parallel, the GC pause while planning);
        Spark always builds the reader with the defaults.
    declared:
        The columns ``load()`` declared (what Avro reader schemas must give).
    """

    def __init__(
        self,
        options: SourceOptions,
        tuning: Tuning | None = None,
        declared: StructType | None = None,
    ) -> None:
        self._options = options
        self._tuning = tuning
        self._declared = declared
        self._pipeline: MicroBatches | None = None
        # PySpark 4.0/4.1 call latestOffset() without the start: the last offset Spark gave or
        # took (the initial one, the end of a planned range, a restart's latest seen offset).
        self._seen: dict[str, Any] | None = None

    @property
    def _batches(self) -> MicroBatches:
        """The driver's pipeline, built at the first driver call: pyspark also builds a reader
        in its read planner only to pickle :meth:`read`, which needs none of it."""
        if self._pipeline is None:
            from pyspark_dynamic_kafka.source.archive import archive_phase
            from pyspark_dynamic_kafka.source.driver.cluster_view import ClusterView
            from pyspark_dynamic_kafka.source.driver.listing import OffsetLister
            from pyspark_dynamic_kafka.source.driver.pipeline import MicroBatches, Tuning
            from pyspark_dynamic_kafka.source.driver.start_policy import StartPolicy
            from pyspark_dynamic_kafka.source.group.selection import partition_selection

            options, tuning = self._options, self._tuning or Tuning()
            lister = OffsetLister(options)
            policy = StartPolicy.of(options)
            self._pipeline = MicroBatches(
                ClusterView(options, lister, tuning.parallel_clusters),
                partition_selection(options, lister, policy),
                archive_phase(options),
                policy,
                pause_gc=tuning.pause_gc,
                declared=self._declared,
            )
        return self._pipeline

    def __getstate__(self) -> dict[str, Any]:
        """An executor's copy holds the options only: it runs :meth:`read`, nothing else."""
        return {"_options": self._options}

    # ----------------------------------------------------------------- driver
    def initialOffset(self) -> dict[str, Any]:
        """Resolve the starting options to concrete offsets (cached: Spark may ask twice)."""
        self._seen = self._batches.initial()
        return self._seen

    def prepareForTriggerAvailableNow(self) -> None:
        """Record the latest offsets now: a ``Trigger.AvailableNow`` query reads up to them only.

        Partitions discovered later enter the offset at their starting position but are not read.
        """
        self._batches.available_now()

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxOffsetsPerTrigger`` (or ``minOffsetsPerTrigger``, or with an archive
        ``archive.maxFilesPerTrigger``) as a Spark read limit."""
        batches = self._batches
        return batches.archive.default_limit(batches.admission.default_limit())

    def latestOffset(
        self, start: dict[str, Any] | None = None, limit: Any = None
    ) -> dict[str, Any]:
        """The end of the next micro-batch, reconciled with the current metadata.

        A cluster, topic or partition seen for the first time enters the offset at its starting
        position (:mod:`~pyspark_dynamic_kafka.source.driver.start_policy`), so its first range
        is exact and checkpointed. Clusters and topics removed from the metadata leave the offset
        (or, with ``removedClusterRetentionMs``, are retained for that long). Data loss fails the
        query or, with ``failOnDataLoss=false``, is skipped. With ``Trigger.AvailableNow`` no
        partition goes past the offsets recorded when the query started. The read limit applies
        last; returning ``start`` means "no batch yet". With ``archive.path`` the query first
        advances through the archive's files, then switches to Kafka.

        PySpark 4.0 and 4.1 pass neither ``start`` nor ``limit``: the start is the last offset
        Spark gave or took, and everything available is read (the options that set a read
        limit are refused there: :mod:`~pyspark_dynamic_kafka.spark_versions`).
        """
        if start is None:
            start = self._seen if self._seen is not None else self.initialOffset()
            limit = ReadAllAvailable()
        self._seen = self._batches.latest(start, limit)
        return self._seen

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """The offsets available at the last :meth:`latestOffset` call, with the status monitoring
        reads (:mod:`~pyspark_dynamic_kafka.source.contract`; ids, offsets and counts only)."""
        return self._batches.report()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        """Plan the exact ranges between two offsets into few, large tasks.

        A partition retained in ``start`` and back in ``end`` is read from its retained offset.
        """
        self._seen = end
        return self._batches.tasks(start, end)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: offsets live in Spark's checkpoint (with ``assignment=group`` they
        reach the group at the next ``latestOffset``, or earlier through the listener)."""

    def stop(self) -> None:
        """Leave the consumer groups (``assignment=group``) after the last commit.

        Spark runs this when the source's process ends on its own; a ``query.stop()`` ends it
        with SIGTERM, which does the same (:func:`~pyspark_dynamic_kafka.source.group.coordinator.
        stop_on_sigterm`). A reader that never planned has nothing to leave.
        """
        if self._pipeline is not None:
            self._pipeline.selection.stop()

    # ----------------------------------------------------------------- executors
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Read one planned task as Arrow record batches."""
        from pyspark_dynamic_kafka.source.executor.planned import read_planned

        batches = read_planned(partition)
        if batches is None:
            raise TypeError(f"unexpected input partition {partition!r}")
        return batches
