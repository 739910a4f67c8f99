"""How the sink writes a key or value as Avro (``keyFormat`` / ``valueFormat=avro``): the rules
that combine its options (declared with the source's in
:mod:`pyspark_dynamic_kafka.avro.options`) into an :class:`AvroFormat`.

Either a writer schema is given (``valueSchema``, Avro JSON) and registered under its subject
in the registry of the cluster each batch is routed to, as Confluent's serializers do with
``auto.register.schemas``; or only a subject (``valueSubject``, at ``valueSubjectVersion``,
default ``latest``) whose schema is looked up there. The subject defaults to ``<topic>-value``
(``<topic>-key``), Confluent's TopicNameStrategy.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark_dynamic_kafka.avro.options import AVRO, BYTES, LATEST, Side, given_without_avro
from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.optionspec import ParsedOptions

__all__ = ["AVRO", "BYTES", "LATEST", "AvroFormat", "avro_format"]


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


def avro_format(side: Side, parsed: ParsedOptions) -> AvroFormat | None:
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
        key = given_without_avro(parsed, side)
        if key is not None:
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
