"""Where the command line finds metadata: a file path or the URL of a metadata service."""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pyspark_dynamic_kafka.errors import MetadataNotFoundError, OptionsError
from pyspark_dynamic_kafka.metadata.editing.edit import move_in_file, moved_entries
from pyspark_dynamic_kafka.metadata.editing.write_marker import flipped_entries
from pyspark_dynamic_kafka.metadata.file import FileMetadataService
from pyspark_dynamic_kafka.metadata.http import DEFAULT_TIMEOUT_MS, HttpMetadataService
from pyspark_dynamic_kafka.metadata.http_api.tokens import load_token
from pyspark_dynamic_kafka.metadata.model import KafkaStream
from pyspark_dynamic_kafka.metadata.service import KafkaMetadataService

__all__ = ["TOKEN_ENV", "MetadataLocation", "Move", "select_streams"]

#: Environment variable holding the service token when no ``--token-file`` is given.
TOKEN_ENV = "DYNAMIC_KAFKA_TOKEN"


@dataclass(frozen=True)
class Move:
    """A move as done (or, for a dry run, as it would be done).

    ``streams`` is the stream afterwards, keyed by its id; ``diff`` the change as a unified diff
    (of the file, or of the stream's entries for a service); ``layout_kept`` whether a file's
    comments and formatting outside the changed entries are kept (always true for a service).
    """

    streams: Mapping[str, KafkaStream]
    diff: str
    layout_kept: bool = True


def _diff(before: str, after: str, name: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), name, f"{name} (moved)"
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


@dataclass(frozen=True)
class MetadataLocation:
    """A metadata file or service URL, with what is needed to reach a service.

    Parameters
    ----------
    location:
        A path (``.yaml``, ``.yml``, ``.json``) or an ``http(s)://`` base URL.
    token_file:
        File with the bearer token for a URL; else ``$DYNAMIC_KAFKA_TOKEN`` when set.
    ca_file:
        PEM file of a private CA for an ``https`` URL.
    timeout_ms:
        Timeout of each request to a service.
    """

    location: str
    token_file: str | None = None
    ca_file: str | None = None
    timeout_ms: int = DEFAULT_TIMEOUT_MS

    @property
    def is_url(self) -> bool:
        """Whether the location is a service URL."""
        return re.match(r"https?://", self.location, re.IGNORECASE) is not None

    def _token(self) -> str | None:
        if self.token_file:
            return load_token(self.token_file, "--token-file")
        return os.environ.get(TOKEN_ENV) or None

    def service(self) -> KafkaMetadataService:
        """The metadata service of this location.

        Raises
        ------
        OptionsError
            For a URL given with a malformed token, CA file or timeout, or options that need a
            URL given with a file.
        MetadataError
            For a file with an unsupported extension.
        """
        if self.is_url:
            return HttpMetadataService(
                self.location, self._token(), self.timeout_ms, self.ca_file or None
            )
        if self.token_file or self.ca_file:
            raise OptionsError(
                f"--token-file and --ca-file apply to a service URL, not to file {self.location}."
            )
        return FileMetadataService(self.location)

    def move(
        self, stream_id: str, source: str, target: str, dry_run: bool = False, writes: bool = False
    ) -> Move:
        """Move a stream's topics (with ``writes``, only its write marker) from cluster
        ``source`` to ``target`` in one atomic edit.

        For a file: under the file's edit lock, written with temp file + rename, the file's
        comments and formatting kept outside the changed entries. For a URL: the stream is read
        and written back with ``If-Match`` (re-done if it changed in between). With ``dry_run``
        nothing is written: the answer says what would change.
        """
        edit = flipped_entries if writes else moved_entries
        service = self.service()
        try:
            if isinstance(service, HttpMetadataService):
                entries, _ = service.get_stream(stream_id)
                if dry_run:
                    moved = edit(entries, stream_id, source, target)
                else:
                    moved = service.update_stream(
                        stream_id, lambda e: edit(e, stream_id, source, target)
                    )
                name = f"{self.location} stream {stream_id}"
                diff = _diff(json.dumps(entries, indent=2), json.dumps(moved, indent=2), name)
                return Move({} if dry_run else service.describe_streams([stream_id]), diff)
            done = move_in_file(
                self.location, stream_id, source, target, write=not dry_run, writes_only=writes
            )
            return Move(
                {stream_id: done.parsed.streams[stream_id]},
                _diff(done.before, done.after, self.location),
                done.layout_kept,
            )
        finally:
            service.close()


def select_streams(
    service: KafkaMetadataService, stream_ids: Iterable[str] | None, pattern: str | None
) -> dict[str, KafkaStream]:
    """The streams named by ``stream_ids``, or matching ``pattern`` (``re.search``), or all.

    Raises
    ------
    MetadataNotFoundError
        When a named stream id is unknown.
    OptionsError
        When ``pattern`` is not a valid regular expression.
    """
    if stream_ids is not None:
        wanted = list(dict.fromkeys(stream_ids))
        found = dict(service.describe_streams(wanted))
        missing = [sid for sid in wanted if sid not in found]
        if missing:
            known = sorted(s.stream_id for s in service.get_all_streams())
            raise MetadataNotFoundError(
                f"Unknown stream id(s) {', '.join(missing)}. Known stream ids: "
                f"{', '.join(known) or 'none'}."
            )
        return {sid: found[sid] for sid in wanted}
    streams = {s.stream_id: s for s in service.get_all_streams()}
    if pattern is not None:
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise OptionsError(
                f"--pattern {pattern!r} is not a valid regular expression ({exc})."
            ) from None
        streams = {sid: s for sid, s in streams.items() if compiled.search(sid)}
    return dict(sorted(streams.items()))
