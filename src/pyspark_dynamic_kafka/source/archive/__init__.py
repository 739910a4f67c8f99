"""Hybrid reads (``archive.path``), planned on the driver: a Parquet archive of this source's own
columns first, then Kafka from where the archive ends, per partition.

- :mod:`~pyspark_dynamic_kafka.source.archive.files`: the data files of ``archive.path``
  (directories, globs, ``key=value`` directories).
- :mod:`~pyspark_dynamic_kafka.source.archive.survey`: rows and per-partition offset spans of
  each file, from Parquet footers.
- :mod:`~pyspark_dynamic_kafka.source.archive.plan`: read order, switch offsets, micro-batches
  and tasks of whole files.
- :mod:`~pyspark_dynamic_kafka.source.archive.hybrid`: what the stream and batch readers call
  (the phase in the checkpointed offset is :mod:`~pyspark_dynamic_kafka.source.checkpoint`'s),
  through :func:`archive_phase` here, which imports it (and Parquet) only for ``archive.path``.

The executor's side, a task's files read as Arrow batches of the output schema, is
:mod:`~pyspark_dynamic_kafka.source.executor.archive`, below the driver: it imports none of
these modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark_dynamic_kafka.source.driver.modes import ArchivePhase, NoArchive

if TYPE_CHECKING:
    from pyspark_dynamic_kafka.source.config.parsed import SourceOptions

__all__ = ["archive_phase"]


def archive_phase(options: SourceOptions) -> ArchivePhase:
    """What a stream reads before Kafka: the archive of ``archive.path``, or nothing."""
    if options.archive_path is None:
        return NoArchive()
    from pyspark_dynamic_kafka.source.archive.hybrid import HybridArchive

    return HybridArchive(options)
