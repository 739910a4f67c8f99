"""When a batch starts, on the driver: read the metadata, resolve the route, build the task.

Spark builds the writer (``DataSource.writer`` / ``streamWriter``) on the driver once per batch
write and once before **each** micro-batch (verified: PySpark 4.3 calls ``streamWriter()`` in
the driver's planning worker before every micro-batch's tasks, and again in the worker that runs
``commit``), so a metadata change takes effect at the next micro-batch and never inside one.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace

from pyspark_dynamic_kafka.engines.choice import write_engine
from pyspark_dynamic_kafka.events import log_event
from pyspark_dynamic_kafka.kafka.config import merge_client_properties
from pyspark_dynamic_kafka.metadata.factory import create_metadata_service
from pyspark_dynamic_kafka.metadata.model import KafkaStream
from pyspark_dynamic_kafka.metadata.service import KafkaMetadataService
from pyspark_dynamic_kafka.registry.client import RegistryClient
from pyspark_dynamic_kafka.sink.config.options import EXACTLY_ONCE, SinkOptions
from pyspark_dynamic_kafka.sink.driver.schemas import ClientFactory, resolve_schemas
from pyspark_dynamic_kafka.sink.executor.task import MarkerCluster, WriteTask
from pyspark_dynamic_kafka.sink.route import resolve_write_route

__all__ = ["ServiceFactory", "plan_write"]

_LOG = logging.getLogger(__name__)

#: Creates the metadata service from its kind and its ``metadataService.*`` options.
ServiceFactory = Callable[[str, Mapping[str, str]], KafkaMetadataService]


def plan_write(
    options: SinkOptions,
    service_factory: ServiceFactory = create_metadata_service,
    client_factory: ClientFactory = RegistryClient,
) -> WriteTask:
    """Resolve the stream's write route now (and, with ``valueFormat=avro`` or
    ``keyFormat=avro``, the schema ids on its cluster's registry) and return the task every
    partition runs.

    Raises
    ------
    MetadataError
        When the service cannot answer.
    WriteRouteError
        When the stream is unknown or its route is ambiguous.
    SchemaRegistryError
        With Avro, when the route's cluster names no registry or its registry cannot give an id
        (:func:`~pyspark_dynamic_kafka.sink.driver.schemas.resolve_schemas`).
    """
    # closed by ``with``: a failure's traceback shows where it was raised, not close()
    service = service_factory(options.metadata_service, options.metadata_options)
    with contextlib.closing(service):
        streams = service.describe_streams([options.stream_id])
    route = resolve_write_route(streams, options.stream_id)
    if options.topic is not None:
        route.topic_of(options.topic)  # fail on the driver, before any task starts
    log_event(
        _LOG,
        logging.INFO,
        "write_route",
        stream=route.stream_id,
        cluster=route.cluster_id,
        topics=sorted(route.topics),
    )
    exactly_once = options.delivery_guarantee == EXACTLY_ONCE
    # The topics this batch may write: the option's, else every topic of the route.
    topics = route.topics if options.topic is None else {options.topic}
    value_avro, key_avro = (
        None if avro is None else resolve_schemas(avro, route, topics, client_factory)
        for avro in (options.value_avro, options.key_avro)
    )
    task = WriteTask(
        route,
        kafka_properties=options.kafka_properties,
        topic=options.topic,
        flush_timeout_ms=options.flush_timeout_ms,
        exactly_once=exactly_once,
        sink_id=options.sink_id,
        marker_clusters=_marker_clusters(options, streams[route.stream_id]) if exactly_once else (),
        sink_id_takeover=options.sink_id_takeover,
        dedupe_headers=options.dedupe_headers,
        value_avro=value_avro,
        key_avro=key_avro,
    )
    engine = write_engine(
        options.writer, route.cluster_id, task.producer_properties(), exactly_once
    )
    return replace(task, engine=engine.name)


def _marker_clusters(options: SinkOptions, stream: KafkaStream) -> tuple[MarkerCluster, ...]:
    """Every cluster of the stream with a topic, and all its topics: where a replayed
    micro-batch may be marked."""
    return tuple(
        MarkerCluster(
            cluster_id,
            merge_client_properties(options.kafka_properties, cluster.properties, cluster_id),
            tuple(sorted(cluster.topics)),
        )
        for cluster_id, cluster in sorted(stream.clusters.items())
        if cluster.topics
    )
