"""Edits of the metadata: replace or remove a stream, add or remove a cluster, move a stream.

Each edit takes a validated :class:`ParsedMetadata` and returns a new one, validated again with
:func:`~pyspark_dynamic_kafka.metadata.document.parse_metadata_document`, so an edit that would
make the metadata invalid raises and changes nothing. An edit (or a look-up) that names a
stream or a cluster the metadata does not have raises :class:`MetadataNotFoundError`, said here
once for all of them. The command line (file or URL) and the reference server share them;
:func:`edit_metadata_file` applies one to a file atomically.
"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark_dynamic_kafka.errors import MetadataNotFoundError, MetadataValidationError
from pyspark_dynamic_kafka.metadata.document import (
    ParsedMetadata,
    dump_metadata_document,
    parse_metadata_document,
)
from pyspark_dynamic_kafka.metadata.editing.text_edit import replace_entries
from pyspark_dynamic_kafka.metadata.editing.write_marker import flipped_entries
from pyspark_dynamic_kafka.metadata.file import (
    load_metadata_file,
    metadata_file_format,
    metadata_file_text,
    read_metadata_document,
    write_metadata_file,
    write_metadata_text,
)

try:  # POSIX; elsewhere edits of one file are not serialized between processes
    import fcntl
except ImportError:  # pragma: no cover - not on Linux
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "Edit",
    "FileMove",
    "edit_metadata_file",
    "metadata_file_lock",
    "move_in_file",
    "move_stream",
    "moved_entries",
    "put_cluster",
    "remove_cluster",
    "remove_stream",
    "replace_stream",
    "stream_entries",
]

#: A function from the current metadata to the edited metadata.
Edit = Callable[[ParsedMetadata], ParsedMetadata]


def _known(names: Mapping[str, object]) -> str:
    return ", ".join(repr(n) for n in names) or "none"


def _require(names: Mapping[str, object], kind: str, name: str) -> None:
    """Raise :class:`MetadataNotFoundError` unless ``name`` is one of ``names`` (streams or
    clusters, as ``kind`` says)."""
    if name not in names:
        raise MetadataNotFoundError(
            f"{kind.capitalize()} {name!r} is not in the metadata (known {kind}s: {_known(names)})."
        )


_REMOVED = object()


def _with(
    parsed: ParsedMetadata, section: str, key: str, value: object, source: str = "the edit"
) -> ParsedMetadata:
    """``parsed`` with ``document[section][key]`` set to ``value``, or removed (``_REMOVED``)."""
    document = dump_metadata_document(parsed)
    if value is _REMOVED:
        del document[section][key]
    else:
        document[section][key] = copy.deepcopy(value)
    return parse_metadata_document(document, source)


def stream_entries(parsed: ParsedMetadata, stream_id: str) -> list[dict[str, Any]]:
    """The entries of one stream as written in a metadata document (one per cluster)."""
    _require(parsed.streams, "stream", stream_id)
    entries: list[dict[str, Any]] = dump_metadata_document(parsed)["streams"][stream_id]
    return entries


def replace_stream(
    parsed: ParsedMetadata, stream_id: str, entries: object, source: str = "the edit"
) -> ParsedMetadata:
    """Set a stream's entries (a list of ``{cluster, topics[, startingOffsets]}``), adding it.

    Raises
    ------
    MetadataValidationError
        When the result is invalid (every problem listed with its path, e.g.
        ``streams.orders[0].cluster``); ``parsed`` is untouched.
    """
    return _with(parsed, "streams", stream_id, entries, source)


def remove_stream(parsed: ParsedMetadata, stream_id: str) -> ParsedMetadata:
    """Remove a stream."""
    _require(parsed.streams, "stream", stream_id)
    return _with(parsed, "streams", stream_id, _REMOVED)


def put_cluster(
    parsed: ParsedMetadata, cluster_id: str, properties: object, source: str = "the edit"
) -> ParsedMetadata:
    """Add a cluster or replace its client properties (``bootstrap.servers`` required).

    Raises
    ------
    MetadataValidationError
        When the result is invalid; messages never show a secret property's value.
    """
    return _with(parsed, "clusters", cluster_id, properties, source)


def remove_cluster(parsed: ParsedMetadata, cluster_id: str) -> ParsedMetadata:
    """Remove a cluster that no stream uses any more.

    Raises
    ------
    MetadataValidationError
        When a stream still has topics on it.
    """
    _require(parsed.clusters, "cluster", cluster_id)
    users = sorted(sid for sid, s in parsed.streams.items() if cluster_id in s.clusters)
    if users:
        raise MetadataValidationError(
            f"Cluster {cluster_id!r} is still used by stream(s) {', '.join(users)}: move them "
            "to another cluster or remove their entries first."
        )
    return _with(parsed, "clusters", cluster_id, _REMOVED)


def _cluster_of(entry: object) -> object:
    return entry.get("cluster") if isinstance(entry, Mapping) else None


def _topics(entry: Mapping[str, Any]) -> list[str]:
    topics = entry.get("topics")
    return [t for t in topics if isinstance(t, str)] if isinstance(topics, list) else []


def moved_entries(
    entries: list[dict[str, Any]], stream_id: str, source: str, target: str
) -> list[dict[str, Any]]:
    """A stream's entries with its topics on ``source`` moved to ``target``.

    The topics of every entry on ``source`` join those ``target`` already has (the target entry
    keeps its ``startingOffsets``, else takes the source's; ``write: true`` on the source moves
    with the topics) and the source entries go. The result
    is not validated here: ``target`` must be an active cluster where it is applied.

    Raises
    ------
    MetadataValidationError
        When ``source`` and ``target`` are the same, or the stream has no entry on ``source``.
    """
    if source == target:
        raise MetadataValidationError(
            f"Cannot move stream {stream_id!r} from cluster {source!r} to itself: name two "
            "different clusters."
        )
    moving = [e for e in entries if _cluster_of(e) == source]
    if not moving:
        on = sorted({str(_cluster_of(e)) for e in entries})
        raise MetadataValidationError(
            f"Stream {stream_id!r} has no entry on cluster {source!r} (it is on: "
            f"{', '.join(repr(c) for c in on) or 'no cluster'}); nothing to move."
        )
    on_target = [e for e in entries if _cluster_of(e) == target]
    merged: dict[str, Any] = copy.deepcopy(on_target[0]) if on_target else {"cluster": target}
    topics: list[str] = []
    for entry in on_target + moving:
        topics.extend(t for t in _topics(entry) if t not in topics)
    merged["topics"] = topics
    starting = next((e["startingOffsets"] for e in moving if "startingOffsets" in e), None)
    if starting is not None and "startingOffsets" not in merged:
        merged["startingOffsets"] = copy.deepcopy(starting)
    if any(e.get("write") is True for e in moving):  # the write route follows the topics
        merged["write"] = True
    result: list[dict[str, Any]] = []
    placed = False
    for entry in entries:
        if _cluster_of(entry) not in (source, target):
            result.append(copy.deepcopy(entry))
        elif not placed:  # where the first source or target entry was
            result.append(merged)
            placed = True
    return result


def move_stream(
    parsed: ParsedMetadata, stream_id: str, source: str, target: str, writes_only: bool = False
) -> ParsedMetadata:
    """Move a stream's topics from cluster ``source`` to cluster ``target`` in one edit; with
    ``writes_only``, only its write marker (both clusters stay listed, see
    :func:`~pyspark_dynamic_kafka.metadata.editing.write_marker.flipped_entries`).

    Raises
    ------
    MetadataValidationError
        When ``target`` is not an active cluster, ``source`` equals it, or the stream has no
        entry on ``source`` (with ``writes_only``: on either, or its writes go elsewhere).
    """
    entries = stream_entries(parsed, stream_id)
    if target not in parsed.clusters:
        raise MetadataValidationError(
            f"Cannot move stream {stream_id!r} to cluster {target!r}: it is not in the metadata "
            f"(known clusters: {_known(parsed.clusters)}). Add the cluster first."
        )
    edit = flipped_entries if writes_only else moved_entries
    return replace_stream(parsed, stream_id, edit(entries, stream_id, source, target))


@contextlib.contextmanager
def metadata_file_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the lock that serializes edits of one metadata file between processes.

    The lock is ``flock`` on a file beside the metadata file (``.NAME.lock``); readers never
    need it, since the metadata file is only ever replaced atomically.
    """
    if fcntl is None:  # pragma: no cover - not on Linux
        yield
        return
    target = Path(path)
    lock_path = target.with_name(f".{target.name}.lock")
    with open(lock_path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def edit_metadata_file(path: str | os.PathLike[str], edit: Edit) -> ParsedMetadata:
    """Apply ``edit`` to a metadata file and write the result atomically (temp file + rename).

    Edits through this function are serialized between processes by a lock file beside the
    metadata file (``.NAME.lock``). An edit that raises leaves the file untouched.

    Returns
    -------
    ParsedMetadata
        The metadata as written.

    Raises
    ------
    MetadataError
        When the file cannot be read, is invalid, or cannot be written.
    MetadataValidationError, MetadataNotFoundError
        As raised by ``edit``.
    """
    target = Path(path)
    with metadata_file_lock(target):
        edited = edit(load_metadata_file(target))
        write_metadata_file(target, edited)
    return edited


@dataclass(frozen=True)
class FileMove:
    """A move in a metadata file: the text before and after, and whether everything outside
    the stream's changed entries (comments, formatting) is kept byte for byte."""

    parsed: ParsedMetadata
    before: str
    after: str
    layout_kept: bool


def move_in_file(
    path: str | os.PathLike[str],
    stream_id: str,
    source: str,
    target: str,
    *,
    write: bool = True,
    writes_only: bool = False,
) -> FileMove:
    """Move a stream from cluster ``source`` to ``target`` in a metadata file, keeping the rest
    of the file as it is (comments and formatting; see
    :mod:`~pyspark_dynamic_kafka.metadata.editing.text_edit`), under the file's edit lock and
    atomically.
    With ``writes_only`` only the stream's write marker moves.

    Where the text cannot be edited in place, the whole document is written (comments lost):
    ``layout_kept`` says which. With ``write=False`` nothing is written (a dry run).

    Raises
    ------
    MetadataNotFoundError, MetadataValidationError
        As :func:`move_stream` does; nothing is written.
    MetadataError
        When the file cannot be read or written.
    """
    target_path = Path(path)
    with metadata_file_lock(target_path) if write else contextlib.nullcontext():
        raw_bytes = target_path.read_bytes()
        bom = "\ufeff" if raw_bytes.startswith(b"\xef\xbb\xbf") else ""
        before = raw_bytes.decode("utf-8-sig")
        entries_edit = flipped_entries if writes_only else moved_entries
        edited = move_stream(
            load_metadata_file(target_path), stream_id, source, target, writes_only
        )
        raw = read_metadata_document(target_path)
        after: str | None = None
        if isinstance(raw, dict) and isinstance(raw.get("streams"), dict):
            entries = raw["streams"].get(stream_id)
            if isinstance(entries, list):
                expected = copy.deepcopy(raw)
                expected["streams"][stream_id] = entries_edit(entries, stream_id, source, target)
                as_parsed = parse_metadata_document(expected, os.fspath(path))
                if dump_metadata_document(as_parsed) == dump_metadata_document(edited):
                    after = replace_entries(
                        before,
                        stream_id,
                        expected["streams"][stream_id],
                        (source, target),
                        expected,
                        as_json=metadata_file_format(path) == "json",
                    )
        layout_kept = after is not None
        if after is None:
            after = metadata_file_text(target_path, edited)
        if write:
            write_metadata_text(target_path, bom + after)
    return FileMove(edited, before, after, layout_kept)
