"""Executor side: read a task's exact offset ranges, cluster by cluster, with a pooled consumer of
the engine the driver planned for each, and emit Arrow batches (Avro columns decoded).

What a task carries (ranges, client properties, settings) is the driver -> executor contract of
:mod:`~pyspark_dynamic_kafka.source.executor.task`. The range readers are the engines' (the
Python reader, :mod:`~pyspark_dynamic_kafka.engines.read_python`, and the compiled core's,
:mod:`~pyspark_dynamic_kafka.engines.read_core`), asked of
:func:`~pyspark_dynamic_kafka.engines.implementations.range_reader` by the planned engine's name:
how ranges end, and records that are gone, are theirs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pyarrow as pa

from pyspark_dynamic_kafka.engines.choice import on_core
from pyspark_dynamic_kafka.engines.implementations import range_reader
from pyspark_dynamic_kafka.engines.roles import RangeRead, RangeReader, ReadOptions
from pyspark_dynamic_kafka.gcpause import executor_task_gc
from pyspark_dynamic_kafka.kafka.pool import consumer_pool
from pyspark_dynamic_kafka.source.executor.task import ReadTask
from pyspark_dynamic_kafka.source.schema import AvroColumns

__all__ = ["read_task"]


def read_task(task: ReadTask) -> Iterator[pa.RecordBatch]:
    """Read every range of a task, cluster by cluster, as Arrow record batches."""
    pool = consumer_pool()
    settings = task.settings
    pool.retire_clusters_except(settings.live_clusters)
    generation = settings.generation
    options = ReadOptions(
        settings.poll_timeout_ms, settings.include_headers, settings.fail_on_data_loss
    )
    with executor_task_gc():  # every message is a GC-tracked object (see gcpause)
        for cluster_id, ranges in task.by_cluster().items():
            properties = task.properties[cluster_id]
            engine = settings.engine(cluster_id)
            reader = range_reader(engine)
            factory = reader.factory
            consumer = pool.acquire(cluster_id, properties, generation, factory)
            reusable = False
            try:
                request = RangeRead(cluster_id, ranges, options, properties)
                if settings.avro is None:
                    yield from (batch for batch, _ in reader.read(consumer, request))
                else:
                    core = on_core(engine)
                    yield from _decoded(reader, consumer, request, settings.avro, core)
                reusable = True
            finally:
                timeout_ms = settings.cache_timeout_ms
                pool.release(
                    cluster_id, properties, consumer, reusable, timeout_ms, generation, factory
                )


def _decoded(
    reader: RangeReader, consumer: Any, request: RangeRead, avro: AvroColumns, native: bool
) -> Iterator[pa.RecordBatch]:
    """The batches ``reader`` reads with their Avro columns decoded as it reads them (the
    compiled core's reader decodes them in the core); only queries with Avro columns import the
    decoders."""
    from pyspark_dynamic_kafka.source.executor.avro_columns import (
        assemble,
        column_decoders,
        decode_avro,
    )

    cluster_id, properties = request.cluster_id, request.properties
    decoders = column_decoders(cluster_id, properties, avro, native)
    if decoders is None:  # no registry: the first batch says so, as decode_avro does
        for batch, _ in reader.read(consumer, request):
            yield decode_avro(batch, cluster_id, properties, avro, native)
        return
    for batch, decoded in reader.read(consumer, replace(request, decoders=decoders)):
        yield assemble(batch, decoded, avro)
