"""The ``dynamic_kafka`` Spark data source: its readers (:mod:`~pyspark_dynamic_kafka.source`) and
writers (:mod:`~pyspark_dynamic_kafka.sink`), nothing else.

Each Python process Spark starts imports only what its role needs: every Spark task that reads
or writes unpickles this class (so this module imports pyspark's base classes only), the source's
planner imports the readers, the sink's the writers, each in the method Spark calls there
(tests/unit/test_import_roles.py keeps them apart).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.spark_versions import needing_a_later_spark, pyspark_version

if TYPE_CHECKING:
    from pyspark_dynamic_kafka.source.config.parsed import SourceOptions

__all__ = ["DynamicKafkaDataSource"]


class DynamicKafkaDataSource(DataSource):  # type: ignore[misc]
    """Reads and writes logical Kafka streams that a metadata service maps to clusters and topics.

    Options are validated when the DataFrame is created (``load()``), so a typo fails at once;
    options valid for only one kind of read (``endingOffsets``: batch; ``latest`` as a start:
    streams) are checked when Spark asks for that reader.
    """

    @classmethod
    def name(cls) -> str:
        """The format name: ``dynamic_kafka``."""
        return "dynamic_kafka"

    def schema(self) -> StructType:
        """Spark's kafka-source columns (``headers`` with ``includeHeaders``) plus ``cluster``."""
        from pyspark_dynamic_kafka.source.config.options import parse_options
        from pyspark_dynamic_kafka.source.schema import spark_schema

        options = parse_options(self.options, mode="any")
        if options.key_format is None and options.value_format is None:
            return spark_schema(options.include_headers)
        from pyspark_dynamic_kafka.source.driver.reader_schemas import query_schemas

        return spark_schema(options.include_headers, query_schemas(options).columns)

    def reader(self, schema: StructType) -> DataSourceReader:
        """A bounded reader for ``spark.read``."""
        from pyspark_dynamic_kafka.source.batch import DynamicKafkaBatchReader
        from pyspark_dynamic_kafka.source.config.options import parse_options

        options = parse_options(self.options, mode="batch")
        _check_schema(schema, options)
        return DynamicKafkaBatchReader(options, schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """A micro-batch reader for ``spark.readStream``."""
        from pyspark_dynamic_kafka.source.config.options import parse_options
        from pyspark_dynamic_kafka.source.stream import DynamicKafkaStreamReader

        options = parse_options(self.options, mode="stream")
        _check_schema(schema, options)
        later = needing_a_later_spark(self.options, pyspark_version())
        if later is not None:
            raise OptionsError(f"Format dynamic_kafka: {later}.")
        return DynamicKafkaStreamReader(options, declared=schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """A writer for ``df.write``: the stream's write route, resolved now."""
        from pyspark_dynamic_kafka.metadata.factory import create_metadata_service
        from pyspark_dynamic_kafka.sink.config.options import parse_sink_options
        from pyspark_dynamic_kafka.sink.writer import DynamicKafkaBatchWriter

        _check_append(overwrite)
        return DynamicKafkaBatchWriter(
            parse_sink_options(self.options), schema, create_metadata_service
        )

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """A writer for ``writeStream``; Spark asks for one before each micro-batch, which is when
        the micro-batch's write route is resolved."""
        from pyspark_dynamic_kafka.metadata.factory import create_metadata_service
        from pyspark_dynamic_kafka.sink.config.options import parse_sink_options
        from pyspark_dynamic_kafka.sink.writer import DynamicKafkaStreamWriter

        _check_append(overwrite)
        return DynamicKafkaStreamWriter(
            parse_sink_options(self.options), schema, create_metadata_service
        )


def _check_append(overwrite: bool) -> None:
    if overwrite:
        raise OptionsError(
            "Format dynamic_kafka only appends records: use mode('append') (outputMode "
            "'append' or 'update' for streams); overwriting a Kafka topic is not possible."
        )


def _check_schema(schema: StructType, options: SourceOptions) -> None:
    from pyspark_dynamic_kafka.source.schema import spark_schema

    formats = [f for f in (options.key_format, options.value_format) if f is not None]
    if any(f.subject is not None for f in formats):
        return  # the registry says the columns: checked when the reader resolves the subject
    if formats:
        from pyspark_dynamic_kafka.source.driver.reader_schemas import reader_schemas

        expected = spark_schema(options.include_headers, reader_schemas(options, None).columns)
    else:
        expected = spark_schema(options.include_headers)
    if schema is not None and schema != expected:
        raise OptionsError(
            "Format dynamic_kafka has a fixed schema and does not accept a user-specified one "
            f"(got {schema.simpleString()}, the source gives {expected.simpleString()}). Remove "
            ".schema(...) and select or cast columns after load()."
        )
