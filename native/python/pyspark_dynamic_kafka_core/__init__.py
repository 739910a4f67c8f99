"""The compiled core of pyspark-dynamic-kafka (librdkafka straight into Arrow columns, and Arrow
columns straight to librdkafka).

pyspark-dynamic-kafka uses it when it is installed (its ``reader`` and ``writer`` options); the
API here is the core's only contract with that package.
"""

from pyspark_dynamic_kafka_core._core import (
    AvroDecoder,
    AvroEncoder,
    ClientError,
    Consumer,
    DataLossError,
    Producer,
    Reader,
    ReadError,
    WriteFailure,
    arrow_schema,
    config_problem,
    direct_problem,
    librdkafka_version,
)

__all__ = [
    "AvroDecoder",
    "AvroEncoder",
    "ClientError",
    "Consumer",
    "DataLossError",
    "Producer",
    "ReadError",
    "Reader",
    "WriteFailure",
    "arrow_schema",
    "config_problem",
    "direct_problem",
    "librdkafka_version",
]
