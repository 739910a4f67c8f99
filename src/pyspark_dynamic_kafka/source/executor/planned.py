"""Executor side: any task the source planned, read as Arrow record batches.

The one dispatch Spark's readers (:mod:`~pyspark_dynamic_kafka.source.stream`,
:mod:`~pyspark_dynamic_kafka.source.batch`) call: a Kafka task (:class:`ReadTask`) is read by
:func:`~pyspark_dynamic_kafka.source.executor.read.read_task`, cluster by cluster with the
engine the driver planned; a task of a phase before Kafka (the archive's files,
:class:`~pyspark_dynamic_kafka.source.executor.archive.ArchiveTask`) is a :class:`PhaseTask` and
reads itself.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from pyspark_dynamic_kafka.source.executor.read import read_task
from pyspark_dynamic_kafka.source.executor.task import ReadTask

__all__ = ["PhaseTask", "read_planned"]


class PhaseTask(InputPartition, ABC):  # type: ignore[misc]
    """A Spark task of a phase before Kafka, which knows how to read itself on an executor."""

    @abstractmethod
    def read(self) -> Iterator[pa.RecordBatch]:
        """The task's rows in the source's schema."""


def read_planned(partition: object) -> Iterator[pa.RecordBatch] | None:
    """Read a task the source planned: a Kafka task's ranges, or a phase task's own rows;
    ``None`` for any other partition (the adapter decides what that means)."""
    if isinstance(partition, ReadTask):
        return read_task(partition)
    if isinstance(partition, PhaseTask):
        return partition.read()
    return None
