"""The Avro option family of keys and values, declared once for the source and the sink.

``valueFormat`` (``bytes`` or ``avro``), ``valueSchema`` (Avro JSON), ``valueSubject``,
``valueSubjectVersion`` and, when reading, ``valueMode``; the same with ``key``. Each option has
one parser, one default and one rule whichever side uses it; only its meaning is worded for the
reader (the source: the schema is the reader schema, decoded into its Spark types) or for the
writer (the sink: the schema is the writer schema, registered or looked up per routed cluster).

A subject's version is ``latest`` or a version number from 1 (:func:`subject_version`), on both
sides. An absent version means ``latest``: the source resolves it when the query first starts
(and records it), the sink asks for it at every batch. How the options combine (which of schema
and subject a side needs) is each side's rule: :func:`~pyspark_dynamic_kafka.source.config.
formats.column_formats` and :func:`~pyspark_dynamic_kafka.sink.config.avro_format.avro_format`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pyspark_dynamic_kafka.avro.spark_types import checked_schema
from pyspark_dynamic_kafka.optionspec import OptionSpec, ParsedOptions, choice, nonempty

__all__ = [
    "AVRO",
    "BYTES",
    "FAILFAST",
    "LATEST",
    "PERMISSIVE",
    "Side",
    "Use",
    "avro_options",
    "given_without_avro",
    "subject_version",
]

#: The column an option family is of.
Side = Literal["key", "value"]
#: Who uses the family: the source reads (decodes) Avro, the sink writes (encodes) it.
Use = Literal["read", "write"]

BYTES, AVRO = "bytes", "avro"
FAILFAST, PERMISSIVE = "FAILFAST", "PERMISSIVE"
#: The subject version that names the subject's latest version.
LATEST = "latest"


def subject_version(value: str) -> int | str:
    """``latest`` (any case) or a version number from 1.

    Raises
    ------
    ValueError
        Saying what the value may be.
    """
    text = value.strip()
    if text.lower() == LATEST:
        return LATEST
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise ValueError("must be 'latest' or a version number from 1")
    return int(text)


def _mode(value: str) -> str:
    return choice("failfast", "permissive")(value).upper()


@dataclass(frozen=True)
class _Member:
    """One option of the family: ``<side><suffix>``, its parser and default, and its meaning
    when reading and when writing (``{side}`` stands for the side; ``None``: not an option of
    that use)."""

    suffix: str
    parse: Callable[[str], Any]
    default: str | None
    read: str | None
    write: str | None


_FAMILY = (
    _Member(
        "Format",
        choice(BYTES, AVRO),
        BYTES,
        "`bytes` (the {side} column as binary) or `avro`: decoded to the reader schema's "
        "Spark types, with {side}SchemaId (Confluent's wire formats, the writer schema "
        "from the record's cluster's registry).",
        "`bytes`: the '{side}' column is string or binary, written as it is; `avro`: the "
        "'{side}' column is a value of the Avro schema's Spark type (as from_avro gives it), "
        "written as Avro in Confluent's wire format with the schema id of the registry of the "
        "cluster the batch is routed to (its metadata entry's schema.registry.url); needs "
        "{side}Schema or {side}Subject.",
    ),
    _Member(
        "Schema",
        checked_schema,
        None,
        "With {side}Format=avro: the reader schema, Avro JSON. Or {side}Subject.",
        "{side}Format=avro: the writer schema (Avro JSON), registered under {side}Subject "
        "in the registry of the cluster each batch is routed to (an already registered "
        "schema keeps its id).",
    ),
    _Member(
        "Subject",
        nonempty,
        None,
        "With {side}Format=avro: the registry subject whose schema is the reader schema "
        "(looked up on the registries of the clusters read, in cluster id order).",
        "{side}Format=avro: the subject of the schema (default '<topic>-{side}'); without "
        "{side}Schema, its schema at {side}SubjectVersion is looked up in each route's "
        "registry.",
    ),
    _Member(
        "SubjectVersion",
        subject_version,
        None,
        "The version of {side}Subject, a number or 'latest' (default: latest, resolved when "
        "the query first starts and recorded in the checkpoint).",
        "{side}Format=avro with {side}Subject and no {side}Schema: the version used, a "
        "number or 'latest' (default: latest, asked again at every batch).",
    ),
    _Member(
        "Mode",
        _mode,
        FAILFAST,
        "`FAILFAST` (a {side} that cannot be decoded fails the query, naming it) or "
        "`PERMISSIVE` (null {side}, its bytes in _corrupt_{side}).",
        None,
    ),
)


def avro_options(side: Side, use: Use) -> tuple[OptionSpec[Any], ...]:
    """The options of ``side``'s Avro format, as ``use`` declares them (in family order)."""
    return tuple(
        OptionSpec(f"{side}{member.suffix}", member.parse, member.default, doc.format(side=side))
        for member in _FAMILY
        if (doc := member.read if use == "read" else member.write) is not None
    )


def given_without_avro(parsed: ParsedOptions, side: Side) -> str | None:
    """The first option of ``side``'s family given although ``<side>Format`` is not ``avro``
    (``None``: none, or the format is ``avro``)."""
    if parsed[f"{side}Format"] == AVRO:
        return None
    keys = [f"{side}{member.suffix}" for member in _FAMILY[1:]]
    return next((key for key in keys if key in parsed.given), None)
