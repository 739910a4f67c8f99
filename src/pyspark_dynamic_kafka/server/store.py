"""The metadata file the reference server serves: cached reads, serialized atomic writes."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark_dynamic_kafka.errors import (
    MetadataConflictError,
    MetadataError,
    MetadataUnavailableError,
)
from pyspark_dynamic_kafka.metadata.document import ParsedMetadata
from pyspark_dynamic_kafka.metadata.editing.edit import Edit, edit_metadata_file
from pyspark_dynamic_kafka.metadata.file import FileMetadataService
from pyspark_dynamic_kafka.metadata.http_api.wire import compute_etag, etag_matches

__all__ = ["MetadataStore", "Precondition", "guarded_edit"]


class Precondition:
    """The ``If-Match`` / ``If-None-Match`` headers of a write.

    Parameters
    ----------
    if_match, if_none_match:
        The header values, or ``None``.
    """

    def __init__(self, if_match: str | None, if_none_match: str | None) -> None:
        self.if_match = if_match
        self.if_none_match = if_none_match

    def check(self, resource: str, representation: dict[str, Any] | None) -> None:
        """Raise unless the preconditions hold for the resource's current representation.

        Parameters
        ----------
        resource:
            What is written, for the message (e.g. ``stream 'orders'``).
        representation:
            The body a GET of the resource answers now, ``None`` when it does not exist.

        Raises
        ------
        MetadataConflictError
            When ``If-Match`` names another version (or ``*`` and the resource does not exist),
            or ``If-None-Match: *`` and it exists.
        """
        exists = representation is not None
        etag = compute_etag(representation) if representation is not None else ""
        if self.if_match is not None and not etag_matches(
            self.if_match, etag, weak=False, exists=exists
        ):
            now = f"its ETag is now {etag}" if exists else "it does not exist"
            raise MetadataConflictError(
                f"If-Match {self.if_match} does not match {resource}: {now}. It changed since you "
                "read it; read it again and redo the edit."
            )
        if self.if_none_match is not None and etag_matches(
            self.if_none_match, etag, weak=True, exists=exists
        ):
            raise MetadataConflictError(
                f"If-None-Match {self.if_none_match} matches {resource}: it already exists in "
                "that version."
            )


def guarded_edit(
    precondition: Precondition,
    resource: str,
    representation: Callable[[ParsedMetadata], dict[str, Any] | None],
    edit: Edit,
) -> Edit:
    """``edit``, applied only when ``precondition`` holds for the resource's representation.

    The edit is validated first: a write that is invalid is answered as such (422), one that
    is valid but stale as a failed precondition (412).

    Parameters
    ----------
    precondition:
        The write's conditional headers.
    resource:
        What is written, for messages.
    representation:
        The body a GET of the resource answers for given metadata (``None``: absent).
    edit:
        The edit proper.
    """

    def apply(current: ParsedMetadata) -> ParsedMetadata:
        edited = edit(current)  # an invalid write is refused (422) whatever its preconditions
        precondition.check(resource, representation(current))
        return edited

    return apply


class MetadataStore:
    """Serves one metadata file and applies edits to it.

    Reads go through :class:`~pyspark_dynamic_kafka.metadata.file.FileMetadataService` (re-read
    only when the file changed, so edits made by other tools are seen). Writes are serialized
    (in this process and, through a lock file, with other tools) and written atomically; an edit
    that fails leaves the file and the served metadata unchanged.

    Parameters
    ----------
    path:
        The metadata file (``.yaml``, ``.yml`` or ``.json``).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = Path(path)
        self._service = FileMetadataService(self._path)
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        """The metadata file."""
        return self._path

    def current(self) -> ParsedMetadata:
        """The metadata as the file holds it now.

        Raises
        ------
        MetadataUnavailableError
            When the file is missing, unreadable or invalid.
        """
        try:
            return self._service.load()
        except MetadataError as exc:
            raise MetadataUnavailableError(str(exc)) from None

    def update(self, edit: Edit) -> tuple[ParsedMetadata, ParsedMetadata]:
        """Apply ``edit`` to the current metadata and persist the result atomically.

        Returns
        -------
        tuple[ParsedMetadata, ParsedMetadata]
            The metadata before and after the edit.

        Raises
        ------
        MetadataUnavailableError
            When the current file is unreadable or invalid.
        MetadataError
            As raised by ``edit`` (validation, not found, precondition), or when the file cannot
            be written; nothing changed then.
        """
        before: list[ParsedMetadata] = []

        def recorded(current: ParsedMetadata) -> ParsedMetadata:
            before.append(current)
            return edit(current)

        with self._lock:
            try:
                after = edit_metadata_file(self._path, recorded)
            except MetadataError as exc:
                if before:  # the edit ran: its own error, or the write failed
                    raise
                raise MetadataUnavailableError(str(exc)) from None
        return before[0], after
