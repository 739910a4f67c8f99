"""Executor side of the archive phase (``archive.path``): Parquet files straight into the
source's Arrow schema. What a task carries (:class:`ArchiveTask`: :class:`ArchiveFile` values and
:class:`ArchiveRead`) is planned by :mod:`~pyspark_dynamic_kafka.source.archive`; nothing here
imports the driver's modules.

Each file is read with pyarrow in record batches (only the columns the output needs), in the
order the task lists its files. Every output column comes from the file when it has it (cast to
the output type), else from the file's ``key=value`` directories, else is null; columns of the
file the output does not have (a ``date`` partition, ``headers`` without ``includeHeaders``) are
dropped. With a timestamp switch only records before the switch timestamp are kept (and records
without a timestamp).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from pyspark_dynamic_kafka import filesystems
from pyspark_dynamic_kafka.engines.batches import EARLIEST_MS, LATEST_MS
from pyspark_dynamic_kafka.errors import ArchiveError
from pyspark_dynamic_kafka.source.executor.planned import PhaseTask
from pyspark_dynamic_kafka.source.schema import arrow_schema

__all__ = ["ArchiveFile", "ArchiveRead", "ArchiveTask", "filesystem", "read_archive"]

_BATCH_ROWS = 65536


@dataclass(frozen=True)
class ArchiveFile:
    """One Parquet file of the archive.

    Attributes
    ----------
    path:
        Its path in the filesystem of the archive's base.
    relative:
        Its path below the base (what identifies it in a checkpoint).
    size:
        Bytes.
    mtime_ms:
        Modification time, epoch milliseconds (0 when the filesystem has none).
    values:
        Column values of its ``key=value`` directories (``None``: Spark's null directory).
    """

    path: str
    relative: str
    size: int
    mtime_ms: int
    values: tuple[tuple[str, str | None], ...] = ()


def filesystem(base: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem serving ``base`` and the path of ``base`` in it (cached per process).

    Raises
    ------
    ArchiveError
        When neither pyarrow nor fsspec serves its scheme.
    """
    return filesystems.filesystem(base, "archive.path", ArchiveError)


@dataclass(frozen=True)
class ArchiveRead:
    """What every archive task of a query needs besides its files.

    Attributes
    ----------
    base:
        The archive's base location (executors resolve the same filesystem from it).
    include_headers:
        Whether the output has the ``headers`` column.
    before_ms:
        With a timestamp switch: keep records whose timestamp is before it (epoch ms).
    """

    base: str
    include_headers: bool = False
    before_ms: int | None = None


class ArchiveTask(PhaseTask):
    """One Spark task of the archive phase: whole files, read in this order.

    Parameters
    ----------
    files:
        The files.
    settings:
        The query's archive read settings.
    """

    def __init__(self, files: tuple[ArchiveFile, ...], settings: ArchiveRead) -> None:
        self.files = files
        self.settings = settings

    def __repr__(self) -> str:
        shown = ", ".join(f.relative for f in self.files[:3])
        more = f", +{len(self.files) - 3} more" if len(self.files) > 3 else ""
        return f"ArchiveTask({shown}{more})"

    def read(self) -> Iterator[pa.RecordBatch]:
        """The files' rows (:func:`read_archive`)."""
        return read_archive(self)


def read_archive(task: ArchiveTask) -> Iterator[pa.RecordBatch]:
    """Read a task's files as record batches of the output schema.

    Raises
    ------
    ArchiveError
        When a file cannot be read or a column cannot be cast to the output type.
    """
    settings = task.settings
    fs, _ = filesystem(settings.base)
    schema = arrow_schema(settings.include_headers)
    for file in task.files:
        try:
            with fs.open_input_file(file.path) as handle:
                parquet = pq.ParquetFile(handle, coerce_int96_timestamp_unit="us")
                present = set(parquet.schema_arrow.names)
                wanted = [name for name in schema.names if name in present]
                # A Spark task is the unit of parallelism: Arrow's decoding threads would only
                # compete with the other tasks for the same cores (docs/benchmarks.md, hybrid).
                batches = parquet.iter_batches(
                    batch_size=_BATCH_ROWS, columns=wanted, use_threads=False
                )
                for batch in batches:
                    out = conform(batch, schema, dict(file.values), settings.before_ms)
                    if out.num_rows:
                        yield out
        except (OSError, pa.ArrowException) as exc:
            raise ArchiveError(f"Reading archive file {file.path!r} failed: {exc}") from None


def conform(
    batch: pa.RecordBatch,
    schema: pa.Schema,
    values: dict[str, str | None],
    before_ms: int | None = None,
) -> pa.RecordBatch:
    """A batch of an archive file as a batch of ``schema``.

    Parameters
    ----------
    batch:
        Columns read from the file.
    schema:
        The output schema.
    values:
        The file's ``key=value`` directory values.
    before_ms:
        Keep only records with a timestamp before it (and those without one).
    """
    rows = batch.num_rows
    columns = []
    for field in schema:
        if field.name in batch.schema.names:
            columns.append(_cast(batch.column(field.name), field.type))
        elif values.get(field.name) is not None:  # one value, repeated in C
            value = pa.scalar(values[field.name], pa.string()).cast(field.type)
            columns.append(pa.repeat(value, rows))
        else:
            columns.append(pa.nulls(rows, field.type))
    out = pa.RecordBatch.from_arrays(columns, schema=schema)
    if before_ms is None:
        return out
    if before_ms > LATEST_MS:  # every timestamp Spark can hold is before it
        return out
    stamp = out.column(schema.get_field_index("timestamp"))
    bound = pa.scalar(before_ms * 1000, pa.int64()).cast(stamp.type)
    keep = pc.or_kleene(pc.less(stamp, bound), pc.is_null(stamp))
    return out.filter(keep)


#: Timestamp units, coarsest first.
_UNITS = ("s", "ms", "us", "ns")


def _cast(array: Any, target: pa.DataType) -> Any:
    if array.type == target:
        return array
    if not (pa.types.is_timestamp(array.type) and pa.types.is_timestamp(target)):
        return array.cast(target)
    if _UNITS.index(array.type.unit) > _UNITS.index(target.unit):
        # Finer units (Parquet's nanoseconds) lose only sub-microsecond digits; Kafka
        # timestamps are milliseconds.
        return array.cast(target, safe=False)
    # Coarser units (milliseconds) are multiplied: one past Spark's range fails, as Spark's
    # Parquet reader fails (Math.multiplyExact), instead of wrapping.
    try:
        return array.cast(target)
    except pa.ArrowInvalid as exc:
        raise pa.ArrowInvalid(
            f"its {array.type} column holds a timestamp past Spark's timestamp range "
            f"({EARLIEST_MS} to {LATEST_MS} ms): {exc}"
        ) from None
