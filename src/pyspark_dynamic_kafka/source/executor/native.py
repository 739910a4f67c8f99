"""The native read path: the compiled core (``pyspark-dynamic-kafka-core``) reads a task's ranges.

The core is a separate distribution (module ``pyspark_dynamic_kafka_core``): Rust fills Arrow
columns directly, so no Python object is made per record. It reads a cluster with its direct
fetch path or with librdkafka's consumer: which one (or the Python reader,
:mod:`~pyspark_dynamic_kafka.source.executor.read`) the driver decided once per cluster
(:mod:`~pyspark_dynamic_kafka.kafka.engine`), and the task carries the decision in
:attr:`~pyspark_dynamic_kafka.source.executor.task.ReadSettings.engines`: the executor never
decides again nor re-parses options. A reader planned on the direct path that hands its ranges
to librdkafka's consumer (a broker error, a lost connection) is logged once per cluster and
reason (:func:`~pyspark_dynamic_kafka.kafka.engine.report_handover`); each request the direct
path sent again on a new connection (its first one broke, or went unanswered past the request
timeout) is one INFO line, as the Java consumer logs a disconnection after ``request.timeout.ms``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from pyspark_dynamic_kafka.errors import DataLossError, KafkaClientError, ReadError
from pyspark_dynamic_kafka.kafka.config import redact_secrets
from pyspark_dynamic_kafka.kafka.engine import DIRECT, core, report_handover
from pyspark_dynamic_kafka.kafka.pool import ConsumerFactory, consumer_config
from pyspark_dynamic_kafka.source.executor.task import OffsetRange, ReadSettings

__all__ = ["core", "direct_consumer", "librdkafka_consumer", "native_factory", "read_native"]

_log = logging.getLogger(__name__)


def _consumer(cluster_id: str, properties: Mapping[str, str], direct: bool) -> Any:
    module = core()
    if module is None:
        raise ReadError(
            f"Cluster '{cluster_id}' was planned for the native reader, but this Python worker "
            "has no pyspark-dynamic-kafka-core: install it on the executors or set reader=python."
        )
    config = consumer_config(properties, cluster_id)
    try:
        return module.Consumer(sorted(config.items()), direct=direct)
    except module.ClientError as exc:
        detail = redact_secrets(str(exc), config)
        raise KafkaClientError(
            f"Cluster '{cluster_id}': could not create a consumer: {detail}. Check the "
            "cluster's client properties in the metadata and the query's kafka.* options."
        ) from None


def direct_consumer(cluster_id: str, properties: Mapping[str, str]) -> Any:
    """A consumer of the compiled core that reads with its direct fetch path, for a cluster's
    merged properties (a :data:`~pyspark_dynamic_kafka.kafka.pool.ConsumerFactory`: the pool
    keeps it across tasks).

    Raises
    ------
    ReadError
        This Python worker has no compiled core.
    KafkaClientError
        librdkafka refused the client properties.
    """
    return _consumer(cluster_id, properties, True)


def librdkafka_consumer(cluster_id: str, properties: Mapping[str, str]) -> Any:
    """As :func:`direct_consumer`, for a consumer that reads with librdkafka's consumer only."""
    return _consumer(cluster_id, properties, False)


def native_factory(engine: str) -> ConsumerFactory:
    """The pool's factory of the compiled core's consumers for a cluster planned on ``engine``
    (:data:`~pyspark_dynamic_kafka.kafka.engine.DIRECT` or ``LIBRDKAFKA``)."""
    return direct_consumer if engine == DIRECT else librdkafka_consumer


def read_native(
    consumer: Any,
    cluster_id: str,
    ranges: list[OffsetRange],
    settings: ReadSettings,
    properties: Mapping[str, str],
) -> Iterator[pa.RecordBatch]:
    """Read one cluster's ranges with a consumer of :func:`native_factory`: the Python reader's
    batches, exactly. The consumer is lent to the core's reader while it reads and is
    unassigned when it is given back (also when reading fails or stops early).

    Raises
    ------
    DataLossError
        Records of a range are gone and ``failOnDataLoss`` is on.
    ReadError
        No progress within the poll timeout, or the cluster answered with an error.
    """
    module = core()
    if module is None:  # the consumer came from the core
        raise ReadError(f"Cluster '{cluster_id}': the compiled core is gone")
    reader = module.Reader(
        cluster_id,
        consumer,
        [(r.topic, r.partition, r.start, r.end) for r in ranges],
        settings.poll_timeout_ms,
        settings.include_headers,
        settings.fail_on_data_loss,
    )
    try:
        yield from _batches(module, reader)
    finally:
        reader.close()
        for reconnect in reader.reconnects():
            reason = redact_secrets(reconnect, properties)
            _log.info(
                "Cluster '%s': the direct fetch path sent a request again on a new connection: %s",
                cluster_id,
                reason,
            )
        handover = reader.fallback()
        if handover is not None and settings.engine(cluster_id) == DIRECT:
            report_handover(cluster_id, handover, properties)


def _batches(module: Any, reader: Any) -> Iterator[pa.RecordBatch]:
    while True:
        try:
            batch = next(reader, None)
        except module.DataLossError as exc:
            raise DataLossError(str(exc)) from None
        except module.ReadError as exc:
            raise ReadError(str(exc)) from None
        finally:
            for warning in reader.take_warnings():
                _log.warning("%s", warning)
        if batch is None:
            return
        yield batch
