"""``dynamic_kafka``'s stream writer with Python's cyclic garbage collector handled two other
ways: benchmark-only formats to price a change of the sink before making it
(:mod:`benchmarks.write_floor`'s sides ``native_gc_paused`` and ``native_gc_frozen``):

* ``bench_dynamic_kafka_gc_paused``: the collector paused for each task, as the source's tasks run
  (:mod:`pyspark_dynamic_kafka.source.gcpause`);
* ``bench_dynamic_kafka_gc_frozen``: ``gc.freeze()`` after each task, so every object the worker
  holds by then (its modules above all) is left out of later collections, the full one PySpark's
  daemon runs after every task of a reused worker (``gc.collect()`` in ``pyspark/daemon.py``)
  among them.

Pickled by value to the workers; the product's classes they extend travel by reference.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamWriter, WriterCommitMessage

from pyspark_dynamic_kafka.datasource import DynamicKafkaDataSource
from pyspark_dynamic_kafka.sink.writer import DynamicKafkaStreamWriter
from pyspark_dynamic_kafka.source.gcpause import cyclic_gc_paused


class GcPausedStreamWriter(DynamicKafkaStreamWriter):
    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        with cyclic_gc_paused():
            return super().write(iterator)


class GcFrozenStreamWriter(DynamicKafkaStreamWriter):
    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        try:
            return super().write(iterator)
        finally:
            gc.freeze()


class GcPausedDynamicKafka(DynamicKafkaDataSource):
    writer_class: type[DynamicKafkaStreamWriter] = GcPausedStreamWriter

    @classmethod
    def name(cls) -> str:
        return "bench_dynamic_kafka_gc_paused"

    def streamWriter(self, schema: Any, overwrite: bool) -> DataSourceStreamWriter:
        from pyspark_dynamic_kafka.metadata.factory import create_metadata_service
        from pyspark_dynamic_kafka.sink.config.options import parse_sink_options

        options = parse_sink_options(self.options)
        return self.writer_class(options, schema, create_metadata_service)


class GcFrozenDynamicKafka(GcPausedDynamicKafka):
    writer_class = GcFrozenStreamWriter

    @classmethod
    def name(cls) -> str:
        return "bench_dynamic_kafka_gc_frozen"


FORMATS = [GcPausedDynamicKafka, GcFrozenDynamicKafka]
