"""``schemaTrackingLocation``: the reader schemas a stream resolved from registry subjects, kept
where its next ``load()`` finds them.

Spark fixes a query's columns in ``load()`` (``DataSource.schema()``), before a source sees its
checkpoint, and a subject's latest version may change between two starts of a query: without a
pinned version the restart's columns would be the new version's, and the checkpoint's reader
schema would be refused (:func:`~pyspark_dynamic_kafka.source.driver.reader_schemas.
check_recorded`). Delta Lake and Auto Loader answer this with a location the user gives for
schema state (``schemaTrackingLocation``, ``schemaLocation``); so does this option.

The first start of a stream records, for each column whose reader schema a subject named, the
subject, its version, the schema's fingerprint and the schema itself, in
``<location>/reader-schemas.json``. Every later ``load()`` and start with the same location
decodes that column with the recorded schema (no registry is asked for it), whatever version is
latest by then. The record is never changed for a column it holds; another subject, or a pinned
version other than the recorded one, is refused naming the record. A column the record lacks is
resolved as without the option and added to it.

The location is a directory: a local path (absolute paths are what the driver and a restarted
driver agree on) or a URI (``s3a://``, ``gs://``, ``abfs://``, ``hdfs://``, ...,
:mod:`pyspark_dynamic_kafka.filesystems`). The record holds schemas, never a registry's address
or credentials.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow.fs as pafs

from pyspark_dynamic_kafka.atomic_file import replace_text
from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.filesystems import filesystem, location_uri
from pyspark_dynamic_kafka.source.checkpoint import NamedSchema
from pyspark_dynamic_kafka.source.config.formats import ColumnFormat

__all__ = ["OPTION", "RECORD", "SchemaTracking", "TrackedSchema"]

OPTION = "schemaTrackingLocation"
RECORD = "reader-schemas.json"
_FORMAT = 1


@dataclass(frozen=True)
class TrackedSchema:
    """A column's reader schema as recorded: the subject's version that named it, and the
    schema (Avro JSON)."""

    named: NamedSchema
    schema: str


class SchemaTracking:
    """The record of reader schemas in one ``schemaTrackingLocation``.

    Parameters
    ----------
    location:
        The option's value.
    """

    def __init__(self, location: str) -> None:
        self.location = location
        self._uri = location_uri(location)

    @property
    def record_path(self) -> str:
        """Where the record is (for messages)."""
        return f"{self.location.rstrip('/')}/{RECORD}"

    def read(self) -> dict[str, TrackedSchema]:
        """The recorded reader schemas by column (empty before the first start).

        Raises
        ------
        OptionsError
            The location cannot be read, or its record is not one this package wrote.
        """
        fs, base = filesystem(self._uri, OPTION, OptionsError)
        path = f"{base.rstrip('/')}/{RECORD}"
        try:
            if fs.get_file_info(path).type == pafs.FileType.NotFound:
                return {}
            with fs.open_input_stream(path) as stream:
                text = stream.read().decode("utf-8")
        except OSError as exc:
            raise self._error(f"cannot be read ({exc})") from None
        return self._parsed(text)

    def record(self, schemas: Mapping[str, TrackedSchema]) -> None:
        """Record ``schemas`` (by column) beside the columns already recorded, which stay as
        they are; nothing is written when every column is recorded already.

        Raises
        ------
        OptionsError
            The location cannot be written.
        """
        recorded = self.read()
        added = {c: s for c, s in schemas.items() if c not in recorded}
        if not added:
            return
        text = json.dumps(
            {"format": _FORMAT, "columns": _document({**recorded, **added})},
            indent=2,
            sort_keys=True,
        )
        fs, base = filesystem(self._uri, OPTION, OptionsError)
        path = f"{base.rstrip('/')}/{RECORD}"
        try:
            fs.create_dir(base, recursive=True)
            if isinstance(fs, pafs.LocalFileSystem):
                replace_text(path, text, durable=True)
            else:  # object stores make an object visible whole when its upload ends
                with fs.open_output_stream(path) as stream:
                    stream.write(text.encode("utf-8"))
        except OSError as exc:
            raise self._error(f"cannot be written ({exc})") from None

    def tracked_for(
        self, fmt: ColumnFormat, recorded: Mapping[str, TrackedSchema]
    ) -> TrackedSchema | None:
        """The recorded reader schema of ``fmt``'s column, checked against the options (``None``:
        not recorded yet).

        Raises
        ------
        OptionsError
            The options name another subject, or pin another version, than the record holds.
        """
        tracked = recorded.get(fmt.column)
        if tracked is None:
            return None
        was = tracked.named
        if fmt.subject != was.subject:
            raise OptionsError(
                f"Option '{fmt.column}Subject' ({fmt.subject!r}): {OPTION} {self.location!r} "
                f"records the reader schema of subject {was.subject!r} for the {fmt.column} "
                f"column ({self.record_path}). Name {was.subject!r} again, or give a new "
                f"{OPTION} (with a new checkpoint) to read another subject."
            )
        if fmt.version is not None and fmt.version != was.version:
            raise OptionsError(
                f"Option '{fmt.column}SubjectVersion' ({fmt.version}): {OPTION} "
                f"{self.location!r} records version {was.version} of {was.subject!r} as the "
                f"{fmt.column} column's reader schema ({self.record_path}), and a stream keeps "
                f"its reader schema. Remove {fmt.column}SubjectVersion, or give a new {OPTION} "
                "(with a new checkpoint) to read with another version."
            )
        return tracked

    def _parsed(self, text: str) -> dict[str, TrackedSchema]:
        try:
            document = json.loads(text)
            if document.get("format") != _FORMAT:
                raise ValueError(f"format {document.get('format')!r}, expected {_FORMAT}")
            return {
                column: TrackedSchema(
                    NamedSchema(str(v["subject"]), int(v["version"]), str(v["fingerprint"])),
                    str(v["schema"]),
                )
                for column, v in document["columns"].items()
            }
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise self._error(
                f"is not a record of reader schemas ({exc}); give {OPTION} a directory of its own"
            ) from None

    def _error(self, problem: str) -> OptionsError:
        return OptionsError(f"Option '{OPTION}' ({self.location!r}): {self.record_path} {problem}.")


def _document(schemas: Mapping[str, TrackedSchema]) -> dict[str, Any]:
    return {
        column: {
            "subject": s.named.subject,
            "version": s.named.version,
            "fingerprint": s.named.fingerprint,
            "schema": s.schema,
        }
        for column, s in sorted(schemas.items())
    }
