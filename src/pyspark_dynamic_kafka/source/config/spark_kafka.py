"""What a query moved over from Spark's ``format("kafka")`` meets: Spark's own option names
pointed at their ``dynamic_kafka`` counterparts (``subscribe`` -> ``streamIds``, ...), the
``kafka.*`` keys Spark's source refuses refused the same way, ``kafka.bootstrap.servers`` (the
metadata names clusters), and Java client properties translated or refused with what to write
instead (:mod:`~pyspark_dynamic_kafka.kafka.java_properties`), all when the query is defined.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.kafka.config import check_client_options

__all__ = ["check_client_keys", "check_spark_names"]

_SINGLE_CLUSTER = (
    "metadataService=singleCluster with metadataService.bootstrap.servers=<host:port> (and "
    "its other client properties as metadataService.<property>) to read plain topics of one "
    "cluster, each topic a stream named after it"
)
_STREAMS = (
    "A dynamic_kafka query reads logical streams that the metadata maps to clusters and "
    "topics, not topics"
)
#: Spark's ``kafka`` source option -> what to write for ``dynamic_kafka``.
_SPARK_NAMES: Mapping[str, str] = {
    "subscribe": f"Did you mean 'streamIds'? {_STREAMS}: set streamIds=<stream ids>, or "
    f"{_SINGLE_CLUSTER}",
    "subscribePattern": f"Did you mean 'streamPattern'? {_STREAMS}: set streamPattern=<Python "
    f"regular expression over stream ids>, or {_SINGLE_CLUSTER}",
    "assign": "A dynamic_kafka query reads every partition of its streams' topics; to read "
    "some partitions from given offsets, give per-cluster offsets: startingOffsets (and, for "
    'a batch read, endingOffsets) as JSON {"<cluster>": {"<topic>": {"0": 23}}}',
    "kafka.bootstrap.servers": "A dynamic_kafka read takes its clusters and their "
    "bootstrap.servers from the metadata (clusters.<id>.bootstrap.servers in a metadata file), "
    f"or from {_SINGLE_CLUSTER}",
}
#: ``kafka.*`` keys Spark's kafka source rejects too, with the reason.
_FORBIDDEN_CLIENT_KEYS: Mapping[str, str] = {
    "auto.offset.reset": "set 'startingOffsets' (or a starting timestamp) to choose where a new "
    "query starts; later offsets live in the Spark checkpoint and 'failOnDataLoss' decides what "
    "happens when they are no longer available",
    "enable.auto.commit": "offsets are never committed to Kafka by the consumers: the source "
    "tracks them in the Spark checkpoint (set 'commitOffsetsToKafka' to also commit each "
    "micro-batch's end offsets to 'kafka.group.id')",
    "key.deserializer": "keys are always read as bytes (the binary column 'key'); deserialize "
    "them with DataFrame operations, e.g. cast(key as string)",
    "value.deserializer": "values are always read as bytes (the binary column 'value'); "
    "deserialize them with DataFrame operations, e.g. cast(value as string) or from_json",
    "interceptor.classes": "consumer interceptors are not supported: the source reads exact "
    "offset ranges and an interceptor could change the records it sees",
}


def check_spark_names(declared: Mapping[str, str]) -> None:
    """Refuse Spark's ``kafka`` source options, naming what to write instead.

    Parameters
    ----------
    declared:
        The options that are neither ``kafka.*`` nor ``metadataService.*``.

    Raises
    ------
    OptionsError
        Naming the option and its ``dynamic_kafka`` counterpart.
    """
    spelled = {name.lower(): name for name in _SPARK_NAMES}
    for key in declared:
        name = spelled.get(key.lower())
        if name is not None:
            raise OptionsError(
                f"Unknown option '{name}' for format dynamic_kafka: it is an option of Spark's "
                f"kafka source. {_SPARK_NAMES[name]}."
            )


def check_client_keys(kafka: Mapping[str, str]) -> None:
    """Refuse the ``kafka.*`` keys a read cannot take: those Spark's kafka source refuses,
    ``bootstrap.servers``, Java client properties without a librdkafka equivalent and malformed
    secret references.

    Raises
    ------
    OptionsError
        Naming the key, the reason and what to write instead (never a value).
    """
    for key in kafka:
        reason = _FORBIDDEN_CLIENT_KEYS.get(key.lower())
        if reason is not None:
            raise OptionsError(
                f"Option 'kafka.{key}' is not supported: {reason}. Remove the option."
            )
        if key.lower() == "bootstrap.servers":
            raise OptionsError(
                f"Option 'kafka.{key}' is not used by format dynamic_kafka. "
                f"{_SPARK_NAMES['kafka.bootstrap.servers']}."
            )
    check_client_options(kafka, "kafka.")
