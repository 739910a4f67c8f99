"""pyspark-dynamic-kafka: read Kafka streams spread over many clusters from Spark.

Importing the package is enough for Spark to find the ``dynamic_kafka`` format (Spark registers
the ``DefaultSource`` of every top-level ``pyspark_*`` module). ``DefaultSource`` is imported on
first access, so that the command line and the metadata server run where pyspark is not
installed.
"""

from typing import Any

from pyspark_dynamic_kafka.errors import (
    DataLossError,
    DiscoveryError,
    DynamicKafkaError,
    KafkaClientError,
    MetadataAccessError,
    MetadataConflictError,
    MetadataError,
    MetadataNotFoundError,
    MetadataValidationError,
    OffsetsError,
    OptionsError,
    ReadError,
)

__all__ = [
    "DataLossError",
    "DefaultSource",
    "DiscoveryError",
    "DynamicKafkaDataSource",
    "DynamicKafkaError",
    "KafkaClientError",
    "MetadataAccessError",
    "MetadataConflictError",
    "MetadataError",
    "MetadataNotFoundError",
    "MetadataValidationError",
    "OffsetsError",
    "OptionsError",
    "ReadError",
]

__version__ = "0.1.0"

_DATA_SOURCE_NAMES = ("DefaultSource", "DynamicKafkaDataSource")


def __getattr__(name: str) -> Any:
    """``DefaultSource`` and ``DynamicKafkaDataSource``, imported (with pyspark) on first use."""
    if name in _DATA_SOURCE_NAMES:
        from pyspark_dynamic_kafka.source.datasource import DynamicKafkaDataSource

        return DynamicKafkaDataSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
