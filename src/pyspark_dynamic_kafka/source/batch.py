"""The batch reader (``spark.read.format("dynamic_kafka")``): Spark's API over the driver's plan
of a batch read (:mod:`~pyspark_dynamic_kafka.source.driver.batch_plan`) and the executor's
reader (:mod:`~pyspark_dynamic_kafka.source.executor.planned`); whether an archive comes first
(``archive.path``) is chosen here, as for a stream
(:func:`~pyspark_dynamic_kafka.source.archive.archive_phase`).

As for a stream, the driver's modules are imported where the driver plans and the executor's
where a task reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSourceReader, InputPartition

from pyspark_dynamic_kafka.source.config.parsed import SourceOptions

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

__all__ = ["DynamicKafkaBatchReader"]


class DynamicKafkaBatchReader(DataSourceReader):  # type: ignore[misc]
    """Reads the offsets between the starting and ending options, once.

    Holds only the parsed options: clients are created while planning and closed right after,
    so the pickled copy executors get carries no client.

    Parameters
    ----------
    options:
        Parsed source options (``mode="batch"``).
    declared:
        The columns ``load()`` declared (what Avro reader schemas must give).
    """

    def __init__(self, options: SourceOptions, declared: StructType | None = None) -> None:
        self._options = options
        self._declared = declared

    def partitions(self) -> list[InputPartition]:
        """Resolve the metadata and the offsets, and plan the ranges into few, large tasks
        (:func:`~pyspark_dynamic_kafka.source.driver.batch_plan.plan_batch_read`)."""
        from pyspark_dynamic_kafka.source.archive import archive_phase
        from pyspark_dynamic_kafka.source.driver.batch_plan import plan_batch_read

        return plan_batch_read(self._options, archive_phase(self._options), self._declared)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Read one planned task as Arrow record batches (nothing for Spark's empty partition)."""
        from pyspark_dynamic_kafka.source.executor.planned import read_planned

        batches = read_planned(partition)
        return iter(()) if batches is None else batches
