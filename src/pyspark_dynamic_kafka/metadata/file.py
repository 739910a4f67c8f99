"""Metadata from a YAML or JSON file, re-read whenever it changed.

The format is described in :mod:`pyspark_dynamic_kafka.metadata.document`. ``.yaml`` and ``.yml``
files are YAML, ``.json`` files JSON; other extensions are refused. Duplicate keys in one mapping
are a syntax error (YAML merge keys ``<<`` may still be overridden). Syntax errors name the line
and column but never quote the file's text.
"""

from __future__ import annotations

import json
import os
from collections.abc import Hashable, Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from pyspark_dynamic_kafka.atomic_file import replace_text
from pyspark_dynamic_kafka.errors import MetadataError, MetadataValidationError
from pyspark_dynamic_kafka.kafka.config import redact
from pyspark_dynamic_kafka.metadata.document import (
    DuplicateKeyError,
    ParsedMetadata,
    dump_metadata_document,
    parse_metadata_document,
    unique_json_object,
    validate_metadata_document,
)
from pyspark_dynamic_kafka.metadata.field_checks import secrets_in_text
from pyspark_dynamic_kafka.metadata.model import KafkaStream
from pyspark_dynamic_kafka.optionspec import OptionSpec, service_options, text

__all__ = [
    "OPTIONS",
    "SUPPORTED_EXTENSIONS",
    "FileMetadataService",
    "load_metadata_file",
    "metadata_file_format",
    "metadata_file_text",
    "read_metadata_document",
    "validate_metadata_file",
    "write_metadata_file",
    "write_metadata_text",
]

#: File extension (lowercase) to format.
SUPPORTED_EXTENSIONS: Mapping[str, str] = {".yaml": "yaml", ".yml": "yaml", ".json": "json"}
#: The options of ``metadataService=file``.
OPTIONS = service_options(
    "file",
    OptionSpec(
        "path",
        text,
        None,
        f"The metadata file ({', '.join(SUPPORTED_EXTENSIONS)}).",
        required=True,
        attr="path",
    ),
)

_MERGE_TAG = "tag:yaml.org,2002:merge"
# What the decoders raise, beyond their syntax errors, for a value they cannot build: a date such
# as 2020-13-01 or an int of over 4,300 digits (ValueError), an explicitly tagged scalar such as
# `!!int ""` or `!!timestamp x` (IndexError, AttributeError, TypeError in PyYAML's constructor).
_UNBUILDABLE = (ValueError, TypeError, IndexError, AttributeError, KeyError, OverflowError)


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe YAML loader that refuses duplicate keys in one mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[object] = set()
        for key_node, _value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
                continue
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r}",
                    key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def metadata_file_format(path: str | os.PathLike[str]) -> str:
    """Return ``"yaml"`` or ``"json"`` from the file's extension.

    Raises
    ------
    MetadataError
        For any other extension.
    """
    suffix = Path(path).suffix.lower()
    fmt = SUPPORTED_EXTENSIONS.get(suffix)
    if fmt is None:
        shown = repr(suffix) if suffix else "no extension"
        raise MetadataError(
            f"Metadata file {os.fspath(path)} has {shown}: name it *.yaml or *.yml (YAML) or "
            "*.json (JSON)."
        )
    return fmt


def _decode(text: str, fmt: str, source: str) -> object:
    try:
        if fmt == "json":
            return json.loads(text, object_pairs_hook=unique_json_object)
        return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass
    except json.JSONDecodeError as exc:
        message = (
            f"Metadata file {source}: JSON syntax error at line {exc.lineno}, column {exc.colno}: "
            f"{exc.msg}. Fix the file."
        )
    except DuplicateKeyError as exc:
        message = (
            f"Metadata file {source}: JSON error: duplicate key {exc.key!r} in one object; "
            "keep only one."
        )
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        problem = exc.problem or "invalid YAML"
        context = f" ({exc.context})" if exc.context else ""
        message = (
            f"Metadata file {source}: YAML syntax error at {where}: {problem}{context}. "
            "Fix the file."
        )
    except yaml.YAMLError as exc:
        message = f"Metadata file {source}: invalid YAML: {exc}. Fix the file."
    except RecursionError:
        message = (
            f"Metadata file {source}: {fmt.upper()} error: lists or mappings are nested too deeply "
            "to read. Fix the file."
        )
    except _UNBUILDABLE as exc:
        message = (
            f"Metadata file {source}: {fmt.upper()} error: a value cannot be read "
            f"({type(exc).__name__}: {exc}). Fix the file."
        )
    raise MetadataValidationError(redact(message, secrets_in_text(text)))


def read_metadata_document(path: str | os.PathLike[str]) -> object:
    """Read and decode a metadata file, without validating its content.

    Raises
    ------
    MetadataError
        When the file is missing or unreadable, or has an unsupported extension.
    MetadataValidationError
        When it is empty, not UTF-8, or has a syntax error (line and column given).
    """
    source = os.fspath(path)
    fmt = metadata_file_format(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise MetadataError(
            f"Metadata file {source} does not exist: create it or fix the path."
        ) from None
    except OSError as exc:
        raise MetadataError(
            f"Metadata file {source} cannot be read: {exc.strerror or exc}. Check the path and "
            "its permissions."
        ) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MetadataValidationError(
            f"Metadata file {source} is not valid UTF-8 (byte {exc.start}): save it as UTF-8."
        ) from None
    if not text.strip():
        raise MetadataValidationError(
            f"Metadata file {source} is empty: it must hold 'clusters' and 'streams' (if it is "
            "being rewritten, write it atomically: temp file + rename)."
        )
    return _decode(text, fmt, source)


def load_metadata_file(path: str | os.PathLike[str]) -> ParsedMetadata:
    """Read, decode and validate a metadata file.

    Raises
    ------
    MetadataError
        When the file cannot be read.
    MetadataValidationError
        When its syntax or content is invalid; every content problem is listed.
    """
    data = read_metadata_document(path)
    if data is None:
        raise MetadataValidationError(
            f"Metadata file {os.fspath(path)} is empty (only comments): it must hold 'clusters' "
            "and 'streams'."
        )
    return parse_metadata_document(data, os.fspath(path))


def validate_metadata_file(path: str | os.PathLike[str]) -> list[str]:
    """Return every problem of a metadata file; an empty list when it is valid.

    A file that cannot be read or decoded gives a single problem (the error message); otherwise
    each problem is ``path-inside-the-document: message``.
    """
    try:
        data = read_metadata_document(path)
    except MetadataError as exc:
        return [str(exc)]
    return validate_metadata_document(data, os.fspath(path))


def write_metadata_file(path: str | os.PathLike[str], parsed: ParsedMetadata) -> None:
    """Write ``parsed`` to ``path`` atomically (temp file in the same directory + rename).

    The format follows the extension. An existing file's permission bits are kept; a new file is
    readable by its owner only (it may hold secrets). Comments of an existing file are not kept.

    Raises
    ------
    MetadataValidationError
        When ``parsed`` is inconsistent (e.g. a stream names a cluster missing from ``clusters``);
        nothing is written.
    MetadataError
        When the file cannot be written.
    """
    write_metadata_text(path, metadata_file_text(path, parsed))


def metadata_file_text(path: str | os.PathLike[str], parsed: ParsedMetadata) -> str:
    """The text :func:`write_metadata_file` writes for ``parsed`` (format from the extension).

    Raises
    ------
    MetadataValidationError
        When ``parsed`` is inconsistent.
    """
    source = os.fspath(path)
    fmt = metadata_file_format(path)
    document = dump_metadata_document(parsed)
    parse_metadata_document(document, source)  # never write a file the service would refuse
    if fmt == "json":
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    return _yaml_text(document)


def write_metadata_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` atomically, as :func:`write_metadata_file` does.

    Raises
    ------
    MetadataError
        When the file cannot be written.
    """
    try:
        replace_text(path, text, durable=True)
    except OSError as exc:
        raise MetadataError(
            f"Cannot write metadata file {os.fspath(path)}: {exc.strerror or exc}. Check that the "
            "directory exists and is writable; the previous file, if any, is unchanged."
        ) from None


def _yaml_text(document: dict[str, Any]) -> str:
    """The YAML of ``document``, readable (non-ASCII written as it is) when that reads back
    exactly; else with non-ASCII characters escaped (PyYAML writes U+0085, U+2028 and U+2029 raw,
    and its reader takes them for line breaks)."""
    for allow_unicode in (True, False):
        text = yaml.safe_dump(
            document, sort_keys=False, default_flow_style=False, allow_unicode=allow_unicode
        )
        if allow_unicode and yaml.safe_load(text) != document:
            continue
        return text
    return text  # pragma: no cover - the escaped form always reads back


class FileMetadataService:
    """A metadata service backed by a YAML or JSON file, re-read whenever it changed.

    Every call looks at the file (one ``stat``) and reads it again only when its inode, size or
    modification time changed since the last good read; otherwise it answers from that read.
    A cluster is active iff it is listed under ``clusters``. An invalid or half-written file
    raises :class:`~pyspark_dynamic_kafka.errors.MetadataValidationError`, never an empty answer.

    Parameters
    ----------
    path:
        The metadata file; its extension (``.yaml``, ``.yml`` or ``.json``) selects the format.

    Raises
    ------
    MetadataError
        When the extension is not supported (the file itself is only read when asked).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        metadata_file_format(path)
        self._path = Path(path)
        self._cache: tuple[tuple[int, int, int], ParsedMetadata] | None = None

    @property
    def path(self) -> Path:
        """The metadata file."""
        return self._path

    def load(self) -> ParsedMetadata:
        """Read and validate the file, unless it is unchanged since the last good read.

        "Unchanged" means same inode, size and modification time (nanoseconds), so the calls of
        one discovery see one consistent version of the file and an atomic replace (temp file +
        rename) is always seen.
        """
        try:
            status = os.stat(self._path)
        except OSError:
            return load_metadata_file(self._path)  # raises the error that names the file
        version = (status.st_ino, status.st_size, status.st_mtime_ns)
        if self._cache is not None and self._cache[0] == version:
            return self._cache[1]
        parsed = load_metadata_file(self._path)
        self._cache = (version, parsed)
        return parsed

    def get_all_streams(self) -> frozenset[KafkaStream]:
        """Return every stream of the file."""
        return frozenset(self.load().streams.values())

    def describe_streams(self, stream_ids: Iterable[str]) -> Mapping[str, KafkaStream]:
        """Return the streams of the file among ``stream_ids``; unknown ids are absent."""
        streams = self.load().streams
        return {sid: streams[sid] for sid in stream_ids if sid in streams}

    def is_cluster_active(self, cluster_id: str) -> bool:
        """Return whether ``cluster_id`` is listed under ``clusters`` in the file."""
        return cluster_id in self.load().clusters

    def close(self) -> None:
        """Nothing to release: the file is opened and closed at each read."""

    def __repr__(self) -> str:
        return f"FileMetadataService({os.fspath(self._path)!r})"
