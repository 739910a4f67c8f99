"""The compiled read core of pyspark-dynamic-kafka (librdkafka straight into Arrow columns).

pyspark-dynamic-kafka uses it when it is installed (its ``reader`` option); the API here is the
core's only contract with that package.
"""

from pyspark_dynamic_kafka_core._core import (
    ClientError,
    Consumer,
    DataLossError,
    Reader,
    ReadError,
    arrow_schema,
    config_problem,
    librdkafka_version,
)

__all__ = [
    "ClientError",
    "Consumer",
    "DataLossError",
    "ReadError",
    "Reader",
    "arrow_schema",
    "config_problem",
    "librdkafka_version",
]
