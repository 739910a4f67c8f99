"""Archive files, listed on the driver: the Parquet files ``archive.path`` holds (each an
:class:`~pyspark_dynamic_kafka.source.executor.archive.ArchiveFile`, served by the filesystem of
:func:`~pyspark_dynamic_kafka.source.executor.archive.filesystem`, which executors resolve too).

``archive.path`` is a directory, a file or a glob (``*``, ``?``, ``[...]`` in any path segment),
with or without a scheme, served as :mod:`pyspark_dynamic_kafka.filesystems` serves a location.

As in Spark, names starting with ``.`` or ``_`` (``_SUCCESS``, ``_temporary``, ``.crc`` files)
are skipped unless they are ``key=value`` directories, and ``key=value`` directories
(``cluster=east/topic=orders/``) give the files under them those column values.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from urllib.parse import unquote

import pyarrow.fs as pafs

from pyspark_dynamic_kafka.errors import ArchiveError
from pyspark_dynamic_kafka.filesystems import location_uri
from pyspark_dynamic_kafka.source.executor.archive import ArchiveFile, filesystem

__all__ = ["Location", "list_files", "parse_location"]

_GLOB = frozenset("*?[")
#: Spark's directory value for a null partition column.
_NULL_VALUE = "__HIVE_DEFAULT_PARTITION__"


@dataclass(frozen=True)
class Location:
    """An ``archive.path`` split into what a filesystem lists and the glob below it.

    Attributes
    ----------
    option:
        The value as given (for messages).
    base:
        The URI (or local absolute path) of the longest prefix without glob characters.
    pattern:
        The glob's path segments below ``base`` (empty: no glob).
    """

    option: str
    base: str
    pattern: tuple[str, ...]


def parse_location(option: str) -> Location:
    """Split ``archive.path`` into its listable base and glob segments."""
    scheme, sep, rest = location_uri(option).partition("://")
    if not sep:
        scheme, rest = "", scheme
    segments = rest.split("/")
    first_glob = next((i for i, s in enumerate(segments) if _GLOB & set(s)), len(segments))
    base_path = "/".join(segments[:first_glob]) or "/"
    base = f"{scheme}://{base_path}" if scheme else base_path
    pattern = tuple(s for s in segments[first_glob:] if s)
    return Location(option, base, pattern)


def _hidden(segment: str) -> bool:
    return segment.startswith(".") or (segment.startswith("_") and "=" not in segment)


def _values(directories: list[str]) -> tuple[tuple[str, str | None], ...]:
    found: dict[str, str | None] = {}
    for segment in directories:
        key, sep, value = segment.partition("=")
        if sep and key:
            text = unquote(value)
            found[unquote(key)] = None if text == _NULL_VALUE else text
    return tuple(found.items())


def _matches(pattern: tuple[str, ...], parts: list[str]) -> bool:
    """Whether a file (path segments below the base) is matched by the glob or lies below a
    directory it matches."""
    if len(parts) < len(pattern):
        return False
    return all(fnmatch.fnmatchcase(p, g) for p, g in zip(parts, pattern, strict=False))


def list_files(location: Location) -> list[ArchiveFile]:
    """Every data file of the archive, sorted by relative path.

    Raises
    ------
    ArchiveError
        When nothing is at the base, or nothing under it is a data file matching the glob.
    """
    fs, base = filesystem(location.base)
    try:
        info = fs.get_file_info(base)
        if info.type == pafs.FileType.NotFound:
            raise ArchiveError(
                f"archive.path {location.option!r}: nothing exists at {location.base!r}."
            )
        if info.type == pafs.FileType.File and not location.pattern:
            infos, root = [info], base.rsplit("/", 1)[0]
        else:
            infos, root = fs.get_file_info(pafs.FileSelector(base, recursive=True)), base
    except OSError as exc:
        raise ArchiveError(f"archive.path {location.option!r} cannot be listed: {exc}") from None
    files = []
    for item in infos:
        if item.type != pafs.FileType.File:
            continue
        relative = item.path[len(root) :].lstrip("/")
        parts = relative.split("/")
        if any(_hidden(p) for p in parts) or not _matches(location.pattern, parts):
            continue
        mtime = item.mtime_ns // 1_000_000 if item.mtime_ns is not None else 0
        files.append(ArchiveFile(item.path, relative, item.size or 0, mtime, _values(parts[:-1])))
    if not files:
        raise ArchiveError(
            f"archive.path {location.option!r} holds no data file (names starting with '.' or "
            "'_' are skipped). Point it at the Parquet files of an archiving job."
        )
    return sorted(files, key=lambda f: f.relative)
