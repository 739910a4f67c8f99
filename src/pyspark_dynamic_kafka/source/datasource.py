"""The ``dynamic_kafka`` Spark data source: schema and readers, nothing else."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceStreamReader
from pyspark.sql.types import StructType

from pyspark_dynamic_kafka.source.arrow import SPARK_SCHEMA
from pyspark_dynamic_kafka.source.options import parse_options
from pyspark_dynamic_kafka.source.stream import DynamicKafkaStreamReader

__all__ = ["DynamicKafkaDataSource"]


class DynamicKafkaDataSource(DataSource):  # type: ignore[misc]
    """Reads logical Kafka streams that a metadata service maps to clusters and topics.

    Options are validated when the DataFrame is created (``load()``), so a typo fails at once.
    """

    @classmethod
    def name(cls) -> str:
        """The format name: ``dynamic_kafka``."""
        return "dynamic_kafka"

    def schema(self) -> StructType:
        """Spark's kafka-source columns plus ``cluster``."""
        parse_options(self.options)
        return SPARK_SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """A micro-batch reader for ``spark.readStream``."""
        return DynamicKafkaStreamReader(parse_options(self.options))
