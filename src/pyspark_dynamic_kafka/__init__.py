"""pyspark-dynamic-kafka: read Kafka streams spread over many clusters from Spark.

Importing the package is enough for Spark to find the ``dynamic_kafka`` format (Spark registers
the ``DefaultSource`` of every top-level ``pyspark_*`` module).
"""

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
from pyspark_dynamic_kafka.source.datasource import DynamicKafkaDataSource

DefaultSource = DynamicKafkaDataSource

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
