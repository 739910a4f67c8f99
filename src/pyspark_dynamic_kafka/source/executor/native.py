"""The native read path: the compiled core (``pyspark-dynamic-kafka-core``) reads a task's ranges.

The core is a separate distribution (module ``pyspark_dynamic_kafka_core``): librdkafka,
vendored and statically linked, fills Arrow columns directly, so no Python object is made per
record. The option ``reader`` chooses: ``auto`` (the default) reads a cluster natively when the
core is installed and the cluster's client properties allow it, else with the Python reader
(:mod:`~pyspark_dynamic_kafka.source.executor.read`) and one log line naming the cluster and
the reason; ``native`` fails at query start naming the reason; ``python`` is the Python reader.

The driver decides, per cluster, in :func:`native_clusters`; the task carries the decision in
:attr:`~pyspark_dynamic_kafka.source.executor.task.ReadSettings.native_clusters` and the
executor reads those clusters with :func:`read_native` (it never re-parses options).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from pyspark_dynamic_kafka.errors import DataLossError, KafkaClientError, ReadError
from pyspark_dynamic_kafka.kafka.config import redact_secrets
from pyspark_dynamic_kafka.kafka.core import CoreChoice, core, core_problem, core_serves
from pyspark_dynamic_kafka.kafka.pool import consumer_config
from pyspark_dynamic_kafka.source.executor.task import OffsetRange, ReadSettings

__all__ = ["READERS", "core", "native_clusters", "native_consumer", "native_problem", "read_native"]

_log = logging.getLogger(__name__)

#: The values of the ``reader`` option.
READERS = ("auto", "native", "python")
_CHOICE = CoreChoice("reader", "read", "read", "with the Python reader", _log)


def native_problem(properties: Mapping[str, str]) -> str | None:
    """Why the native reader cannot read a cluster with these client properties, or ``None``
    (asked of librdkafka once per properties value)."""
    return core_problem(consumer_config(properties))


def native_clusters(reader: str, properties: Mapping[str, Mapping[str, str]]) -> frozenset[str]:
    """The clusters the native reader reads, given the ``reader`` option and each cluster's
    client properties (as tasks carry them).

    Raises
    ------
    OptionsError
        With ``reader=native``, when a cluster cannot be read natively (naming it and why).
    """
    return frozenset(
        cluster_id
        for cluster_id in sorted(properties)
        if core_serves(_CHOICE, reader, cluster_id, consumer_config(properties[cluster_id]))
    )


def native_consumer(cluster_id: str, properties: Mapping[str, str]) -> Any:
    """A consumer of the compiled core for a cluster's merged properties (a
    :data:`~pyspark_dynamic_kafka.kafka.pool.ConsumerFactory`: the pool keeps it across tasks).

    Raises
    ------
    ReadError
        This Python worker has no compiled core.
    KafkaClientError
        librdkafka refused the client properties.
    """
    module = core()
    if module is None:
        raise ReadError(
            f"Cluster '{cluster_id}' was planned for the native reader, but this Python worker "
            "has no pyspark-dynamic-kafka-core: install it on the executors or set reader=python."
        )
    config = consumer_config(properties)
    try:
        return module.Consumer(sorted(config.items()))
    except module.ClientError as exc:
        detail = redact_secrets(str(exc), config)
        raise KafkaClientError(
            f"Cluster '{cluster_id}': could not create a consumer: {detail}. Check the "
            "cluster's client properties in the metadata and the query's kafka.* options."
        ) from None


def read_native(
    consumer: Any, cluster_id: str, ranges: list[OffsetRange], settings: ReadSettings
) -> Iterator[pa.RecordBatch]:
    """Read one cluster's ranges with a consumer of :func:`native_consumer`: the Python
    reader's batches, exactly. The consumer is lent to the core's reader while it reads and is
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
