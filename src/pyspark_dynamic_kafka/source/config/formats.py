"""The key and value formats: ``valueFormat`` (``bytes`` or ``avro``) with the reader schema and
mode of an Avro column, and the same for keys.

With ``avro`` the column is decoded to its reader schema's Spark types: given whole
(``valueSchema``, Avro JSON) or named in the registry of the clusters read (``valueSubject``,
with ``valueSubjectVersion``, a number; ``latest``, as without it, is the latest version when the
query first starts). ``valueMode`` is ``FAILFAST`` (a record that cannot be decoded fails the
query) or ``PERMISSIVE`` (its value is null and its bytes go to ``_corrupt_value``), as
``from_avro``'s ``mode``. These options are declared with the sink's in
:mod:`pyspark_dynamic_kafka.avro.options` and combined here by :func:`column_formats` into one
:class:`ColumnFormat` per column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark_dynamic_kafka.avro.options import (
    AVRO,
    LATEST,
    PERMISSIVE,
    avro_options,
    given_without_avro,
)
from pyspark_dynamic_kafka.avro.options import Side as Column
from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.optionspec import OptionSpec, ParsedOptions, nonempty

__all__ = ["FORMAT_OPTIONS", "Column", "ColumnFormat", "column_formats"]


#: The format options of keys and values (the Avro family :mod:`~pyspark_dynamic_kafka.avro.
#: options` declares for the source and the sink), and where a stream keeps the reader
#: schemas its subjects named (``source/driver/schema_tracking.py``).
FORMAT_OPTIONS: tuple[OptionSpec[Any], ...] = (
    *avro_options("key", "read"),
    *avro_options("value", "read"),
    OptionSpec(
        "schemaTrackingLocation",
        nonempty,
        None,
        "Streams: a directory (local path or URI, one per query) where the query records the "
        "reader schemas keySubject/valueSubject resolved when it first started; later starts "
        "take load()'s columns and their decoding from that record, whatever version is latest "
        "by then (Delta Lake's option of the same name).",
        scope="stream",
        attr="schema_tracking_location",
    ),
)


@dataclass(frozen=True)
class ColumnFormat:
    """How the key or value column is decoded as Avro (``keyFormat``/``valueFormat=avro``).

    Attributes
    ----------
    column:
        ``key`` or ``value``.
    schema:
        The reader schema (Avro JSON) when given whole, else ``None``.
    subject:
        The registry subject of the reader schema, when named there.
    version:
        The subject's version; ``None`` (no version, or ``latest``): the latest when the query
        first starts.
    permissive:
        ``PERMISSIVE`` mode (else ``FAILFAST``).
    """

    column: Column
    schema: str | None = None
    subject: str | None = None
    version: int | None = None
    permissive: bool = False


def column_formats(parsed: ParsedOptions) -> tuple[ColumnFormat | None, ColumnFormat | None]:
    """The key's and the value's format (``None``: bytes), from the parsed options.

    Raises
    ------
    OptionsError
        Naming the option and the fix: ``avro`` without a schema or with two, a schema option
        without ``avro``, a version without a subject.
    """
    return _column(parsed, "key"), _column(parsed, "value")


def _column(parsed: ParsedOptions, column: Column) -> ColumnFormat | None:
    fmt, schema, subject = (f"{column}{s}" for s in ("Format", "Schema", "Subject"))
    version, mode = f"{column}SubjectVersion", f"{column}Mode"
    if parsed[fmt] != AVRO:
        given = given_without_avro(parsed, column)
        if given is not None:
            raise OptionsError(
                f"Option '{given}' ({parsed.given[given]!r}) applies to Avro {column}s "
                f"only: set {fmt}=avro, or remove the option."
            )
        return None
    if (parsed[schema] is None) == (parsed[subject] is None):
        got = "both" if parsed[schema] is not None else "neither"
        raise OptionsError(
            f"Option '{fmt}' (avro) needs exactly one of '{schema}' (the reader schema, Avro "
            f"JSON) and '{subject}' (its subject in the clusters' registries); got {got}."
        )
    if parsed[version] is not None and parsed[subject] is None:
        raise OptionsError(
            f"Option '{version}' ({parsed[version]}) is a version of '{subject}': set "
            f"{subject}, or remove the option."
        )
    pinned = None if parsed[version] == LATEST else parsed[version]  # latest: as no pin
    return ColumnFormat(column, parsed[schema], parsed[subject], pinned, parsed[mode] == PERMISSIVE)
