"""pyspark-dynamic-kafka: read and write Kafka streams spread over many clusters from Spark.

Importing the package is enough for Spark to find the ``dynamic_kafka`` format (Spark registers
the ``DefaultSource`` of every top-level ``pyspark_*`` module). ``DefaultSource`` is imported on
first access, so that the command line and the metadata server run where pyspark is not
installed. Every exception of :mod:`pyspark_dynamic_kafka.errors` is importable from here too.
"""

from typing import Any

from pyspark_dynamic_kafka import errors, logs
from pyspark_dynamic_kafka.errors import *  # noqa: F403 - the package re-exports errors.__all__

__all__ = ["DefaultSource", "DynamicKafkaDataSource"]  # noqa: F405 - from __getattr__
__all__ += errors.__all__

__version__ = "0.1.0"

logs.configure_from_environment()  # DYNAMIC_KAFKA_LOG_LEVEL, also in Spark's Python workers

_DATA_SOURCE_NAMES = ("DefaultSource", "DynamicKafkaDataSource")


def __getattr__(name: str) -> Any:
    """``DefaultSource`` and ``DynamicKafkaDataSource``, imported (with pyspark) on first use."""
    if name in _DATA_SOURCE_NAMES:
        from pyspark_dynamic_kafka.spark_versions import check_supported

        check_supported()  # before pyspark.sql.datasource, which PySpark 3 lacks
        from pyspark_dynamic_kafka.datasource import DynamicKafkaDataSource

        return DynamicKafkaDataSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
