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

from collections.abc import Iterator, Mapping

import pyarrow as pa

from pyspark_dynamic_kafka.engines.choice import on_core
from pyspark_dynamic_kafka.engines.implementations import range_reader
from pyspark_dynamic_kafka.engines.roles import ReadOptions
from pyspark_dynamic_kafka.kafka.pool import consumer_pool
from pyspark_dynamic_kafka.source.executor.task import ReadTask
from pyspark_dynamic_kafka.source.gcpause import cyclic_gc_paused
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
    with cyclic_gc_paused():  # every message is a GC-tracked object (see gcpause)
        for cluster_id, ranges in task.by_cluster().items():
            properties = task.properties[cluster_id]
            engine = settings.engine(cluster_id)
            reader = range_reader(engine)
            factory = reader.factory
            consumer = pool.acquire(cluster_id, properties, generation, factory)
            reusable = False
            try:
                batches = reader.read(consumer, cluster_id, ranges, options, properties)
                if settings.avro is not None:
                    core = on_core(engine)
                    batches = _decoded(batches, cluster_id, properties, settings.avro, core)
                yield from batches
                reusable = True
            finally:
                timeout_ms = settings.cache_timeout_ms
                pool.release(
                    cluster_id, properties, consumer, reusable, timeout_ms, generation, factory
                )


def _decoded(
    batches: Iterator[pa.RecordBatch],
    cluster_id: str,
    properties: Mapping[str, str],
    avro: AvroColumns,
    native: bool,
) -> Iterator[pa.RecordBatch]:
    """``batches`` with their Avro columns decoded (only queries with Avro columns import the
    decoders)."""
    from pyspark_dynamic_kafka.source.executor.avro_columns import decode_avro

    for batch in batches:
        yield decode_avro(batch, cluster_id, properties, avro, native)
