"""``dynamic_kafka``'s stream writer with Python's cyclic garbage collector handled another way:
a benchmark-only format to price a change of the sink before making it (the side
``native_gc_frozen`` of :mod:`benchmarks.write_floor`):

* ``bench_dynamic_kafka_gc_frozen``: ``gc.freeze()`` after each task, so every object the worker
  holds by then (its modules above all) is left out of later collections, the full one PySpark's
  daemon runs after every task of a reused worker (``gc.collect()`` in ``pyspark/daemon.py``)
  among them.

(The collector paused for each task, the side ``native_gc_paused`` until 2026-11-30, is what the
sink's tasks do since: :mod:`pyspark_dynamic_kafka.gcpause`.)

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


class GcFrozenStreamWriter(DynamicKafkaStreamWriter):
    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        try:
            return super().write(iterator)
        finally:
            gc.freeze()


class GcFrozenDynamicKafka(DynamicKafkaDataSource):
    @classmethod
    def name(cls) -> str:
        return "bench_dynamic_kafka_gc_frozen"

    def streamWriter(self, schema: Any, overwrite: bool) -> DataSourceStreamWriter:
        from pyspark_dynamic_kafka.metadata.factory import create_metadata_service
        from pyspark_dynamic_kafka.sink.config.options import parse_sink_options

        options = parse_sink_options(self.options)
        return GcFrozenStreamWriter(options, schema, create_metadata_service)


FORMATS = [GcFrozenDynamicKafka]
