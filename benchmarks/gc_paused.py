"""``dynamic_kafka``'s stream writer with Python's cyclic garbage collector paused for each task,
as the source's tasks already run (:mod:`pyspark_dynamic_kafka.source.gcpause`): a benchmark-only
format, ``bench_dynamic_kafka_gc_paused``, to price that change of the sink before making it
(:mod:`benchmarks.write_floor`'s side ``native_gc_paused``). Pickled by value to the workers; the
product's classes it extends travel by reference."""

from __future__ import annotations

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


class GcPausedDynamicKafka(DynamicKafkaDataSource):
    @classmethod
    def name(cls) -> str:
        return "bench_dynamic_kafka_gc_paused"

    def streamWriter(self, schema: Any, overwrite: bool) -> DataSourceStreamWriter:
        from pyspark_dynamic_kafka.metadata.factory import create_metadata_service
        from pyspark_dynamic_kafka.sink.config.options import parse_sink_options

        options = parse_sink_options(self.options)
        return GcPausedStreamWriter(options, schema, create_metadata_service)
