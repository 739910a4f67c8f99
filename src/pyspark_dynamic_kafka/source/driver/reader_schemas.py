"""The reader schemas of a query's Avro keys and values, decided on the driver.

A schema given whole (``valueSchema``) is the reader schema. A subject (``valueSubject``) is
looked up on the registries of the clusters the query reads, in cluster id order: the first
registry that holds it gives the version asked for (``valueSubjectVersion``), or its latest one.
Schema ids and versions are local to a registry; the schema itself is what a query records in
its checkpoint (as the subject, version and the schema's fingerprint), so that a restart decodes
as before: the recorded schema is looked for again on the registries read now
(:func:`check_recorded`), and a restart whose columns would differ fails naming the version to
pin.

Clusters read with an Avro column must name a registry in their metadata entry: the writer
schema of each record comes from the registry of the cluster it was read from.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql.types import StructType

from pyspark_dynamic_kafka.avro.spark_types import checked_schema
from pyspark_dynamic_kafka.errors import OptionsError, SchemaRegistryError
from pyspark_dynamic_kafka.registry.client import (
    RegisteredSchema,
    RegistryClient,
    canonical_text,
)
from pyspark_dynamic_kafka.registry.endpoint import URL, RegistryEndpoint
from pyspark_dynamic_kafka.source.checkpoint import NamedSchema
from pyspark_dynamic_kafka.source.config.formats import Column, ColumnFormat
from pyspark_dynamic_kafka.source.config.parsed import SourceOptions
from pyspark_dynamic_kafka.source.driver.discovery import Discovery, Subscription
from pyspark_dynamic_kafka.source.driver.schema_tracking import SchemaTracking, TrackedSchema
from pyspark_dynamic_kafka.source.schema import AvroColumn, AvroColumns, spark_schema

__all__ = [
    "ReaderSchemas",
    "check_declared",
    "check_recorded",
    "check_registries",
    "fingerprint",
    "planned_schemas",
    "query_schemas",
    "reader_schemas",
    "registries_of",
    "started_schemas",
    "track",
]

_log = logging.getLogger(__name__)

#: cluster id -> its registry, if its metadata entry names one
Registries = Mapping[str, RegistryEndpoint | None]


@dataclass(frozen=True)
class ReaderSchemas:
    """The query's Avro columns, and those whose reader schema a subject named (by column)."""

    columns: AvroColumns | None
    named: Mapping[str, NamedSchema]


def fingerprint(schema: str) -> str:
    """The SHA-256 of a schema's canonical text (:func:`~pyspark_dynamic_kafka.registry.client.
    canonical_text`), first 16 hex digits."""
    return hashlib.sha256(canonical_text(schema).encode()).hexdigest()[:16]


def planned_schemas(
    options: SourceOptions,
    subscription: Subscription,
    declared: StructType | None,
    recorded: Mapping[str, NamedSchema] | None = None,
) -> ReaderSchemas:
    """The reader schemas a read plans with (a batch read once, a stream at its first driver
    call): resolved on the registries of the clusters read (as ``recorded`` in the checkpoint a
    stream restarts from), checked against the ``declared`` columns, every cluster read naming
    a registry. Nothing is asked of the metadata or a registry without Avro columns.

    Raises
    ------
    OptionsError
        As :func:`reader_schemas`, :func:`check_recorded`, :func:`check_declared` and
        :func:`check_registries` do.
    SchemaRegistryError
        As :func:`reader_schemas` does.
    """
    if options.key_format is None and options.value_format is None:
        return ReaderSchemas(None, {})
    registries = registries_of(subscription)
    schemas = reader_schemas(options, registries)
    if recorded:
        schemas = check_recorded(schemas, recorded, registries)
    check_declared(schemas.columns, declared, options.include_headers)
    check_registries(schemas.columns, registries)
    return schemas


def started_schemas(
    options: SourceOptions,
    subscription: Subscription,
    declared: StructType | None,
    recorded: Mapping[str, NamedSchema] | None = None,
) -> ReaderSchemas:
    """:func:`planned_schemas` of a stream's start, recorded in its ``schemaTrackingLocation``
    (:func:`track`).

    Raises
    ------
    OptionsError
        As :func:`planned_schemas` and :func:`track` do.
    SchemaRegistryError
        As :func:`planned_schemas` does.
    """
    schemas = planned_schemas(options, subscription, declared, recorded)
    track(options, schemas)
    return schemas


def registries_of(subscription: Subscription) -> dict[str, RegistryEndpoint | None]:
    """The registry of each cluster of ``subscription`` (from its metadata entry's keys)."""
    return {c: RegistryEndpoint.of(a.properties) for c, a in subscription.items()}


def query_schemas(options: SourceOptions) -> ReaderSchemas:
    """The query's Avro columns as ``load()`` declares them: the metadata is read (and the
    registries asked) only when a subject names a reader schema."""
    named = [f for f in (options.key_format, options.value_format) if f and f.subject]
    if not named:
        return reader_schemas(options, None)
    with contextlib.closing(Discovery(options)) as discovery:
        return reader_schemas(options, registries_of(discovery.current()))


def check_declared(columns: AvroColumns | None, declared: StructType | None, headers: bool) -> None:
    """Refuse decoding into other columns than the query declared (``load()`` resolved the
    subject's latest version, and another version came since).

    Raises
    ------
    OptionsError
        Naming both schemas.
    """
    if declared is None or columns is None:
        return
    resolved = spark_schema(headers, columns)
    if resolved != declared:
        raise OptionsError(
            f"The query declared the columns {declared.simpleString()}, but its Avro reader "
            f"schemas now give {resolved.simpleString()} (a new version of the subject was "
            "registered since load()): define the query again, pin the version with "
            "valueSubjectVersion/keySubjectVersion, or give schemaTrackingLocation to keep the "
            "reader schemas of a stream's first start."
        )


def reader_schemas(options: SourceOptions, registries: Registries | None) -> ReaderSchemas:
    """Resolve the query's Avro columns.

    Parameters
    ----------
    options:
        The query's options.
    registries:
        The registry of each cluster read; only needed (and only asked) when a subject names a
        reader schema.

    Raises
    ------
    OptionsError
        No registry holds the subject, or its schema has no Spark type.
    SchemaRegistryError
        No registry that could hold it answered.
    """
    formats = [f for f in (options.key_format, options.value_format) if f is not None]
    if not formats:
        return ReaderSchemas(None, {})
    resolved: dict[str, AvroColumn] = {}
    named: dict[str, NamedSchema] = {}
    tracking = _tracking(options, formats)
    recorded = tracking.read() if tracking is not None else {}
    for fmt in formats:
        if fmt.schema is not None:
            resolved[fmt.column] = AvroColumn(fmt.schema, fmt.permissive)
            continue
        tracked = tracking.tracked_for(fmt, recorded) if tracking is not None else None
        if tracked is not None:
            was = tracked.named
            label = f"subject {was.subject!r} version {was.version}"
            resolved[fmt.column] = AvroColumn(tracked.schema, fmt.permissive, label)
            named[fmt.column] = was
            continue
        schema, version = _from_subject(fmt, registries or {})
        label = f"subject {fmt.subject!r} version {version}"
        resolved[fmt.column] = AvroColumn(schema, fmt.permissive, label)
        named[fmt.column] = NamedSchema(str(fmt.subject), version, fingerprint(schema))
    columns = AvroColumns(resolved.get("key"), resolved.get("value"), options.include_headers)
    return ReaderSchemas(columns, named)


def _tracking(options: SourceOptions, formats: list[ColumnFormat]) -> SchemaTracking | None:
    """The query's ``schemaTrackingLocation``, when a subject names a reader schema."""
    location = options.schema_tracking_location
    if location is None or not any(f.subject is not None for f in formats):
        return None
    return SchemaTracking(location)


def track(options: SourceOptions, schemas: ReaderSchemas) -> None:
    """Record the reader schemas a stream starts with in its ``schemaTrackingLocation`` (those
    its subjects named, beside the columns recorded already); nothing without the option.

    Raises
    ------
    OptionsError
        The location cannot be written.
    """
    location = options.schema_tracking_location
    if location is None or schemas.columns is None or not schemas.named:
        return
    by_column = dict(schemas.columns.decoded())
    SchemaTracking(location).record(
        {c: TrackedSchema(n, by_column[c].reader_schema) for c, n in schemas.named.items()}
    )


def _from_subject(fmt: ColumnFormat, registries: Registries) -> tuple[str, int]:
    subject, wanted = str(fmt.subject), fmt.version or "latest"
    option = f"{fmt.column}Subject"
    down: list[str] = []
    for cluster_id in sorted(registries):
        endpoint = registries[cluster_id]
        if endpoint is None:
            continue
        try:
            found = RegistryClient(endpoint, cluster_id).subject_version(subject, wanted)
        except SchemaRegistryError as exc:
            if not exc.reachable:
                down.append(str(exc))
            continue
        return _checked(found, option, subject, cluster_id), int(found.version or 0)
    if down:
        raise SchemaRegistryError(
            f"Option '{option}' ({subject!r}): no registry that answered holds version "
            f"{wanted}, and some could not be asked: {'; '.join(down)}"
        )
    asked = sorted(c for c, e in registries.items() if e is not None)
    raise OptionsError(
        f"Option '{option}' ({subject!r}): version {wanted} of this subject is on none of the "
        f"registries of the clusters read ({', '.join(asked) or 'none names one'}). Register "
        f"the schema, fix the subject, or give the reader schema whole with "
        f"{fmt.column}Schema."
    )


def _checked(found: RegisteredSchema, option: str, subject: str, cluster_id: str) -> str:
    if found.schema_type != "AVRO":
        raise OptionsError(
            f"Option '{option}' ({subject!r}): version {found.version} on the registry of "
            f"cluster '{cluster_id}' is a {found.schema_type} schema, not Avro."
        )
    try:
        return checked_schema(found.schema)
    except ValueError as exc:
        raise OptionsError(
            f"Option '{option}' ({subject!r}): version {found.version} on the registry of "
            f"cluster '{cluster_id}' cannot be read into Spark's columns: {exc}"
        ) from None


def check_registries(columns: AvroColumns | None, registries: Registries) -> None:
    """Refuse reading Avro from a cluster whose metadata entry names no registry.

    Raises
    ------
    OptionsError
        Naming the clusters and the key to add.
    """
    if columns is None:
        return
    missing = sorted(c for c, e in registries.items() if e is None)
    if missing:
        which = " and ".join(f"{name}Format=avro" for name, _ in columns.decoded())
        raise OptionsError(
            f"{which} reads each record's writer schema from its cluster's schema registry, "
            f"but the metadata of cluster(s) {', '.join(missing)} names none: add '{URL}' "
            "(and its credentials, if any) to their entries."
        )


def check_recorded(
    schemas: ReaderSchemas, recorded: Mapping[str, NamedSchema], registries: Registries
) -> ReaderSchemas:
    """The reader schemas a query restarted from its checkpoint decodes with: those recorded
    when it first started.

    When the subject's version resolved now is another schema than the recorded one, the
    recorded version is looked up on the registries read now; a schema with the same
    fingerprint and the same Spark columns is used instead (logged). Else the restart fails.

    Raises
    ------
    OptionsError
        The recorded schema is gone, or gives other columns than this query declares.
    """
    columns = schemas.columns
    if columns is None or not recorded:
        return schemas
    adopted: dict[str, AvroColumn] = {}
    for name, column in columns.decoded():
        was, now = recorded.get(name), schemas.named.get(name)
        if was is None or now is None or was.fingerprint == now.fingerprint:
            continue
        option = f"{name}Subject"
        side: Column = "key" if name == "key" else "value"
        fmt = ColumnFormat(side, subject=was.subject, version=was.version)
        try:
            schema, _ = _from_subject(fmt, registries)
        except (OptionsError, SchemaRegistryError):
            schema = None
        same = schema is not None and fingerprint(schema) == was.fingerprint
        if not same or AvroColumn(str(schema)).spark_type() != column.spark_type():
            raise OptionsError(
                f"Option '{option}' ({was.subject!r}): the checkpoint's reader schema is version "
                f"{was.version} (fingerprint {was.fingerprint}); the query now resolves version "
                f"{now.version}, which gives other columns. Set {name}SubjectVersion="
                f"{was.version} to decode as before, or start from a new checkpoint (with "
                "schemaTrackingLocation, a stream keeps the reader schemas of its first start "
                "across restarts without a pinned version)."
            )
        _log.info(
            "%s: decoding with the checkpoint's reader schema, version %d of %r (same columns "
            "as version %d)",
            option,
            was.version,
            was.subject,
            now.version,
        )
        label = f"subject {was.subject!r} version {was.version}"
        adopted[name] = AvroColumn(str(schema), column.permissive, label)
        # the recorded version stays what the checkpoint says
    if not adopted:
        return ReaderSchemas(columns, {**schemas.named, **recorded})
    key = adopted.get("key", columns.key)
    value = adopted.get("value", columns.value)
    return ReaderSchemas(AvroColumns(key, value, columns.include_headers), dict(recorded))
