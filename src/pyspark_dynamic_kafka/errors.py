"""The exception hierarchy of pyspark-dynamic-kafka.

Every error raised on purpose by this package is a :class:`DynamicKafkaError`. Messages name the
offending key and value and say what to do; they never contain secrets.
"""

from __future__ import annotations

__all__ = [
    "DataLossError",
    "DiscoveryError",
    "DynamicKafkaError",
    "KafkaClientError",
    "MetadataError",
    "MetadataValidationError",
    "OffsetsError",
    "OptionsError",
    "ReadError",
]


class DynamicKafkaError(Exception):
    """Root of every error raised by pyspark-dynamic-kafka."""


class OptionsError(DynamicKafkaError, ValueError):
    """A source option is unknown, missing, malformed or conflicts with another option."""


class OffsetsError(OptionsError):
    """An offsets specification (option value or checkpointed offset JSON) cannot be used."""


class MetadataError(DynamicKafkaError):
    """The Kafka metadata service could not provide usable metadata."""


class MetadataValidationError(MetadataError, ValueError):
    """Metadata content is invalid: wrong type, missing key, unknown cluster, syntax error, ..."""


class DiscoveryError(MetadataError):
    """Metadata discovery failed more often than the configured threshold tolerates."""


class KafkaClientError(DynamicKafkaError):
    """A Kafka cluster could not be reached or answered with an error."""


class ReadError(KafkaClientError):
    """An executor could not read an exact offset range."""


class DataLossError(KafkaClientError):
    """Records the query should have read are no longer available."""
