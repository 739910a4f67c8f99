"""The key and value formats: ``valueFormat`` (``bytes`` or ``avro``) with the reader schema and
mode of an Avro column, and the same for keys.

With ``avro`` the column is decoded to its reader schema's Spark types: given whole
(``valueSchema``, Avro JSON) or named in the registry of the clusters read (``valueSubject``,
with ``valueSubjectVersion``, else the latest version when the query first starts). ``valueMode``
is ``FAILFAST`` (a record that cannot be decoded fails the query) or ``PERMISSIVE`` (its value is
null and its bytes go to ``_corrupt_value``), as ``from_avro``'s ``mode``. These options are
declared here and combined by :func:`column_formats` into one :class:`ColumnFormat` per column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pyspark_dynamic_kafka.avro.spark_types import checked_schema
from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.optionspec import OptionSpec, ParsedOptions, choice, integer, nonempty

__all__ = ["FORMAT_OPTIONS", "ColumnFormat", "column_formats"]

Column = Literal["key", "value"]
BYTES, AVRO = "bytes", "avro"
FAILFAST, PERMISSIVE = "FAILFAST", "PERMISSIVE"


def _mode(value: str) -> str:
    return choice("failfast", "permissive")(value).upper()


def _declared(column: Column) -> tuple[OptionSpec[Any], ...]:
    return (
        OptionSpec(
            f"{column}Format",
            choice(BYTES, AVRO),
            BYTES,
            f"`bytes` (the {column} column as binary) or `avro`: decoded to the reader schema's "
            f"Spark types, with {column}SchemaId (Confluent's wire formats, the writer schema "
            "from the record's cluster's registry).",
        ),
        OptionSpec(
            f"{column}Schema",
            checked_schema,
            None,
            f"With {column}Format=avro: the reader schema, Avro JSON. Or {column}Subject.",
        ),
        OptionSpec(
            f"{column}Subject",
            nonempty,
            None,
            f"With {column}Format=avro: the registry subject whose schema is the reader schema "
            "(looked up on the registries of the clusters read, in cluster id order).",
        ),
        OptionSpec(
            f"{column}SubjectVersion",
            integer(1),
            None,
            f"The version of {column}Subject; default the latest when the query first starts "
            "(recorded in the checkpoint).",
        ),
        OptionSpec(
            f"{column}Mode",
            _mode,
            FAILFAST,
            f"`FAILFAST` (a {column} that cannot be decoded fails the query, naming it) or "
            f"`PERMISSIVE` (null {column}, its bytes in _corrupt_{column}).",
        ),
    )


#: The format options of keys and values, declared once, and where a stream keeps the reader
#: schemas its subjects named (``source/driver/schema_tracking.py``).
FORMAT_OPTIONS: tuple[OptionSpec[Any], ...] = (
    *_declared("key"),
    *_declared("value"),
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
        The subject's version; ``None``: the latest when the query first starts.
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
        given = [k for k in (schema, subject, version, mode) if k in parsed.given]
        if given:
            raise OptionsError(
                f"Option '{given[0]}' ({parsed.given[given[0]]!r}) applies to Avro {column}s "
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
    return ColumnFormat(
        column, parsed[schema], parsed[subject], parsed[version], parsed[mode] == PERMISSIVE
    )
