"""How the sink writes a key or value as Avro (``keyFormat`` / ``valueFormat=avro``): the options'
specs and the rules that combine them into an :class:`AvroFormat`.

Either a writer schema is given (``valueSchema``, Avro JSON) and registered under its subject
in the registry of the cluster each batch is routed to, as Confluent's serializers do with
``auto.register.schemas``; or only a subject (``valueSubject``, at ``valueSubjectVersion``,
default ``latest``) whose schema is looked up there. The subject defaults to ``<topic>-value``
(``<topic>-key``), Confluent's TopicNameStrategy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark_dynamic_kafka.avro.spark_types import checked_schema
from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.optionspec import OptionSpec, ParsedOptions, choice, nonempty

__all__ = ["AVRO", "BYTES", "AvroFormat", "avro_format", "format_specs"]

BYTES = "bytes"
AVRO = "avro"
LATEST = "latest"


def subject_version(value: str) -> int | str:
    """``latest`` or a version number (from 1)."""
    text = value.strip()
    if text.lower() == LATEST:
        return LATEST
    if not text.isdigit() or int(text) < 1:
        raise ValueError("must be 'latest' or a version number from 1")
    return int(text)


def format_specs(side: str) -> tuple[OptionSpec[Any], ...]:
    """The four options of ``side`` (``key`` or ``value``)."""
    column = f"the '{side}' column"
    return (
        OptionSpec(
            f"{side}Format",
            choice(BYTES, AVRO),
            BYTES,
            f"`bytes`: {column} is string or binary, written as it is; `avro`: {column} is a "
            f"value of the Avro schema's Spark type (as from_avro gives it), written as Avro "
            "in Confluent's wire format with the schema id of the registry of the cluster the "
            f"batch is routed to (its metadata entry's schema.registry.url); needs {side}Schema "
            f"or {side}Subject.",
        ),
        OptionSpec(
            f"{side}Schema",
            checked_schema,
            None,
            f"{side}Format=avro: the writer schema (Avro JSON), registered under {side}Subject "
            "in the registry of the cluster each batch is routed to (an already registered "
            "schema keeps its id).",
        ),
        OptionSpec(
            f"{side}Subject",
            nonempty,
            None,
            f"{side}Format=avro: the subject of the schema (default '<topic>-{side}'); without "
            f"{side}Schema, its schema at {side}SubjectVersion is looked up in each route's "
            "registry.",
        ),
        OptionSpec(
            f"{side}SubjectVersion",
            subject_version,
            None,
            f"{side}Format=avro with {side}Subject and no {side}Schema: the version used, a "
            "number or 'latest' (default: latest, asked again at every batch).",
        ),
    )


@dataclass(frozen=True)
class AvroFormat:
    """How one side (``key`` or ``value``) is written as Avro.

    Parameters
    ----------
    side:
        ``key`` or ``value``.
    schema:
        The writer schema (Avro JSON) to register, or ``None`` to look the subject's up.
    subject:
        The subject, or ``None`` for ``<topic>-<side>``.
    version:
        The subject's version looked up (without ``schema``): a number or ``latest``.
    """

    side: str
    schema: str | None
    subject: str | None
    version: int | str = LATEST

    def subject_of(self, topic: str) -> str:
        """The subject of the records of ``topic``."""
        return self.subject if self.subject is not None else f"{topic}-{self.side}"


def avro_format(side: str, parsed: ParsedOptions) -> AvroFormat | None:
    """The Avro format of ``side`` the options give, or ``None`` when it is written as bytes.

    Raises
    ------
    OptionsError
        When the options do not combine: Avro options without ``avro``, ``avro`` without a
        schema nor a subject, a version with a schema or without a subject.
    """
    keys = [f"{side}Schema", f"{side}Subject", f"{side}SubjectVersion"]
    schema, subject, version = (parsed[k] for k in keys)
    if parsed[f"{side}Format"] != AVRO:
        for key in keys:
            if key in parsed.given:
                raise OptionsError(
                    f"Option '{key}' is for {side}Format=avro, and {side}Format is "
                    f"{parsed[f'{side}Format']}: set {side}Format=avro, or remove '{key}'."
                )
        return None
    if schema is None and subject is None:
        raise OptionsError(
            f"Option {side}Format=avro needs '{side}Schema' (the writer schema, Avro JSON, "
            f"registered under '{side}Subject', default '<topic>-{side}', in the registry of "
            f"the routed cluster) or '{side}Subject' (a subject of that registry, whose schema "
            f"at '{side}SubjectVersion', default latest, is used): give one."
        )
    if version is not None and schema is not None:
        raise OptionsError(
            f"Option '{side}SubjectVersion'={version} looks a registered schema up, and "
            f"'{side}Schema' gives the schema to register: give one of the two."
        )
    if version is not None and subject is None:
        raise OptionsError(
            f"Option '{side}SubjectVersion'={version} needs '{side}Subject': the subject "
            "whose version is used."
        )
    return AvroFormat(side, schema, subject, LATEST if version is None else version)
