"""What each archive file holds, read from its Parquet footer: rows, columns, and the smallest and
largest offset of every (cluster, topic, partition) in it.

The footer is one read per file (files are surveyed in parallel threads). Offsets come from the
row groups' column statistics where a row group holds one partition only (its ``cluster``,
``topic`` and ``partition`` statistics have min = max, or the values come from ``key=value``
directories) and ``offset`` has statistics; otherwise only that row group's four key columns are
read and grouped. Columns missing from a file may come from its directories; the offset switch
needs all four somewhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from pyspark_dynamic_kafka.errors import ArchiveError
from pyspark_dynamic_kafka.offset_spec import PartitionKey
from pyspark_dynamic_kafka.source.executor.archive import ArchiveFile

__all__ = ["KEY_COLUMNS", "FileSurvey", "Span", "survey_files"]

#: The columns that say which partition a record is of.
KEY_COLUMNS = ("cluster", "topic", "partition")
#: Their output types (values from directories are cast to these).
_KEY_TYPES = {"cluster": pa.string(), "topic": pa.string(), "partition": pa.int32()}
#: Smallest and largest offset of one partition in one file.
Span = tuple[int, int]
_THREADS = 8
_VARIES = object()


@dataclass(frozen=True)
class FileSurvey:
    """One archive file as its footer (and, where needed, its key columns) describe it.

    Attributes
    ----------
    file:
        The file.
    rows:
        Its row count.
    columns:
        Its top-level column names.
    spans:
        Smallest and largest offset per (cluster, topic, partition); empty when not asked for.
    """

    file: ArchiveFile
    rows: int
    columns: frozenset[str]
    spans: Mapping[PartitionKey, Span]


def survey_files(
    fs: pafs.FileSystem, files: Sequence[ArchiveFile], offsets: bool
) -> list[FileSurvey]:
    """Survey every file (in parallel), in the order given.

    Parameters
    ----------
    fs:
        The archive's filesystem.
    files:
        The files.
    offsets:
        Whether the offset spans are needed (the exact switch); then each file must have the
        ``offset`` column and the key columns (in the file or its directories).

    Raises
    ------
    ArchiveError
        For a file that is not Parquet, or lacks a column the switch needs.
    """
    if not files:
        return []
    with ThreadPoolExecutor(max_workers=min(_THREADS, len(files))) as pool:
        return list(pool.map(lambda f: _survey(fs, f, offsets), files))


def _survey(fs: pafs.FileSystem, file: ArchiveFile, offsets: bool) -> FileSurvey:
    try:
        with fs.open_input_file(file.path) as handle:
            parquet = pq.ParquetFile(handle)
            columns = frozenset(parquet.schema_arrow.names)
            spans = _spans(parquet, file, columns) if offsets else {}
            return FileSurvey(file, parquet.metadata.num_rows, columns, spans)
    except (OSError, pa.ArrowException) as exc:
        raise ArchiveError(
            f"archive.path: {file.path!r} cannot be read as Parquet ({exc}). Keep only the "
            "archiving job's Parquet files under the archive path."
        ) from None


def _spans(parquet: pq.ParquetFile, file: ArchiveFile, columns: frozenset[str]) -> dict[Any, Span]:
    values = dict(file.values)
    missing = [c for c in (*KEY_COLUMNS, "offset") if c not in columns and c not in values]
    if missing:
        raise ArchiveError(
            f"archive.path: {file.path!r} has no column {', '.join(missing)} (neither in the file "
            "nor as a key=value directory). The exact switch needs cluster, topic, partition and "
            "offset; for an archive without them set archive.switchTimestamp."
        )
    meta = parquet.metadata
    index = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
    spans: dict[Any, Span] = {}
    for group in range(meta.num_row_groups):
        row_group = meta.row_group(group)
        if row_group.num_rows == 0:
            continue
        key = tuple(
            _directory_value(c, values[c]) if c not in columns else _constant(row_group, index[c])
            for c in KEY_COLUMNS
        )
        stats = row_group.column(index["offset"]).statistics
        if _VARIES not in key and stats is not None and stats.has_min_max:
            found: list[tuple[Any, Span]] = [(key, (stats.min, stats.max))]
        else:
            found = _grouped(parquet, group, columns, values)
        for partition_key, (low, high) in found:
            if partition_key in spans:
                old = spans[partition_key]
                low, high = min(low, old[0]), max(high, old[1])
            spans[partition_key] = (int(low), int(high))
    return spans


def _directory_value(column: str, value: str | None) -> Any:
    if value is None:
        return _VARIES
    return int(value) if column == "partition" else value


def _constant(row_group: Any, index: int) -> Any:
    """The column's only value in the row group, per its statistics, or ``_VARIES``."""
    stats = row_group.column(index).statistics
    if stats is None or not stats.has_min_max or stats.null_count != 0:
        return _VARIES
    if getattr(stats, "is_min_value_exact", None) is False or stats.min != stats.max:
        return _VARIES
    value = stats.min
    return value.decode() if isinstance(value, bytes) else value


def _grouped(
    parquet: pq.ParquetFile, group: int, columns: frozenset[str], values: Mapping[str, str | None]
) -> list[tuple[Any, Span]]:
    """Read the key columns of one row group and group its offsets by partition."""
    wanted = [c for c in (*KEY_COLUMNS, "offset") if c in columns]
    table = parquet.read_row_group(group, columns=wanted)
    arrays = {}
    for column in KEY_COLUMNS:
        if column in columns:
            arrays[column] = table.column(column).cast(_KEY_TYPES[column])
        else:
            arrays[column] = pa.array([values[column]] * table.num_rows, pa.string()).cast(
                _KEY_TYPES[column]
            )
    arrays["offset"] = table.column("offset").cast(pa.int64())
    keyed = pa.table(arrays).filter(pc.is_valid(arrays["offset"]))
    grouped = keyed.group_by(list(KEY_COLUMNS)).aggregate([("offset", "min"), ("offset", "max")])
    found = []
    for row in grouped.to_pylist():
        if any(row[c] is None for c in KEY_COLUMNS):
            continue  # a record of no known partition cannot be placed; it is read, not switched
        key = (row["cluster"], row["topic"], row["partition"])
        found.append((key, (row["offset_min"], row["offset_max"])))
    return found
