"""``valueFormat=avro`` / ``keyFormat=avro`` on the driver: each topic's writer schema and its id
in the schema registry of the cluster the batch is routed to.

Schema ids are local to the registry that issued them, so they are resolved where the route is
known, when each batch (micro-batch) is planned: a writer that follows a ``move --write`` writes
ids of the new cluster's registry from the first micro-batch planned on it. With a schema given
(``valueSchema``) it is registered under the topic's subject (an already registered schema keeps
its id), as Confluent's serializers do with ``auto.register.schemas``; with a subject alone its
version (``valueSubjectVersion``, default ``latest``) is looked up. Registrations and numbered
versions are cached by (registry, subject, schema or version) for the process; ``latest`` is
asked again at every batch, so a newer version is picked up at the next micro-batch.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from pyspark_dynamic_kafka.avro.options import LATEST
from pyspark_dynamic_kafka.avro.spark_types import checked_schema
from pyspark_dynamic_kafka.errors import SchemaRegistryError
from pyspark_dynamic_kafka.registry.client import RegisteredSchema, RegistryClient
from pyspark_dynamic_kafka.registry.endpoint import URL, RegistryEndpoint
from pyspark_dynamic_kafka.sink.config.avro_format import AvroFormat
from pyspark_dynamic_kafka.sink.executor.task import AvroTarget, TopicSchema
from pyspark_dynamic_kafka.sink.route import WriteRoute

__all__ = ["ClientFactory", "resolve_schemas"]

#: Builds the registry client of a cluster (the registry's endpoint, the cluster id).
ClientFactory = Callable[[RegistryEndpoint, str], RegistryClient]
#: Numbered subject versions by (registry URLs, subject, version): they never change.
_VERSIONS: dict[tuple[tuple[str, ...], str, int], RegisteredSchema] = {}
_LOCK = threading.Lock()


def resolve_schemas(
    avro: AvroFormat,
    route: WriteRoute,
    topics: Iterable[str],
    client_factory: ClientFactory = RegistryClient,
) -> AvroTarget:
    """The writer schema and id of each of ``topics`` on ``route``'s registry.

    Raises
    ------
    SchemaRegistryError
        When the route's cluster names no registry, or its registry cannot be reached, refuses
        the credentials, does not hold the subject (version), holds a schema that is not Avro or
        has no Spark type; the message names the cluster and the registry's URL, never a secret.
    """
    endpoint = RegistryEndpoint.of(route.properties)
    if endpoint is None:
        error = SchemaRegistryError(
            f"{avro.side}Format=avro: cluster {route.cluster_id!r}, where stream "
            f"{route.stream_id!r} is routed, names no schema registry in its metadata entry "
            f"(its ids are needed to write there): add '{URL}' (e.g. "
            f"'https://registry.example.com:8081') to cluster {route.cluster_id!r}'s entry."
        )
        error.reachable = True
        raise error
    client = client_factory(endpoint, route.cluster_id)
    by_subject: dict[str, RegisteredSchema] = {}
    schemas = []
    for topic in sorted(set(topics)):
        subject = avro.subject_of(topic)
        if subject not in by_subject:
            by_subject[subject] = _registered(avro, client, subject)
        found = by_subject[subject]
        if found.schema_id is None:
            raise SchemaRegistryError(
                f"Cluster {route.cluster_id!r}: schema registry {', '.join(endpoint.urls)} "
                f"answered for subject {subject!r} without a schema id."
            )
        schemas.append(TopicSchema(topic, subject, found.schema_id, found.schema))
    return AvroTarget(avro.side, ", ".join(endpoint.urls), tuple(schemas))


def _registered(avro: AvroFormat, client: RegistryClient, subject: str) -> RegisteredSchema:
    if avro.schema is not None:
        return client.register(subject, avro.schema)
    if avro.version == LATEST:
        found = client.subject_version(subject, LATEST)
        _check(avro, client, subject, found)
        return found
    key = (client.endpoint.urls, subject, int(avro.version))
    with _LOCK:
        cached = _VERSIONS.get(key)
    if cached is not None:
        return cached
    found = client.subject_version(subject, avro.version)
    _check(avro, client, subject, found)
    with _LOCK:
        _VERSIONS[key] = found
    return found


def _check(avro: AvroFormat, client: RegistryClient, subject: str, found: RegisteredSchema) -> None:
    """A looked-up schema must be Avro with a Spark type."""
    where = (
        f"Cluster {client.cluster_id!r}: schema registry {', '.join(client.endpoint.urls)} "
        f"holds, as version {found.version} of subject {subject!r} ({avro.side}Subject)"
    )
    problem = None
    if found.schema_type != "AVRO":
        problem = f"a {found.schema_type} schema, not Avro"
    else:
        try:
            checked_schema(found.schema)
        except ValueError as exc:
            problem = f"a schema the sink cannot write ({exc})"
    if problem is not None:
        error = SchemaRegistryError(
            f"{where}, {problem}: name an Avro subject, or give {avro.side}Schema."
        )
        error.reachable = True
        raise error
