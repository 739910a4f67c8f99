"""The one reader of nested ``{"cluster": {"topic": {"partition": number}}}`` JSON, shared by the
checkpointed offset (:mod:`~pyspark_dynamic_kafka.source.checkpoint`) and the offset and timestamp
options (:mod:`~pyspark_dynamic_kafka.source.config.position_options`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.offset_spec import PartitionKey

__all__ = [
    "EARLIEST",
    "LATEST",
    "MAX_OFFSET",
    "MAX_PARTITION",
    "OFFSET_MEANING",
    "partition_map",
    "shown",
]

EARLIEST = -2
LATEST = -1
#: The largest offset or timestamp Kafka can hold (a signed 64-bit integer).
MAX_OFFSET = 2**63 - 1
#: The largest partition number Kafka can hold (a signed 32-bit integer).
MAX_PARTITION = 2**31 - 1
#: What a number of an offset JSON is, for messages.
OFFSET_MEANING = "an integer offset >= -2 (-2 earliest, -1 latest)"
_MAX_SHOWN = 80


def shown(value: object) -> str:
    """``repr(value)`` for a message, cut to a readable length; safe for any decoded JSON (an
    int too long to write as text, or nesting too deep to write, is described instead)."""
    try:
        text = repr(value)
    except (ValueError, RecursionError):
        text = f"<a {type(value).__name__} too large to show>"
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def _as_json(value: object) -> str:
    """``value`` as JSON text for a message, or as :func:`shown` shows it."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        return shown(value)
    return text if len(text) <= _MAX_SHOWN else shown(value)


def partition_map(
    document: object, where: str, meaning: str, minimum: int, empty: bool = True
) -> dict[PartitionKey, int]:
    """Walk ``{"cluster": {"topic": {"0": number}}}`` into ``{(cluster, topic, 0): number}``.

    The one reader of the nested cluster/topic/partition JSON, shared by the checkpointed offset
    and the offset and timestamp options.

    Parameters
    ----------
    document:
        The decoded JSON.
    where:
        Start of every message, e.g. ``checkpointed offset``.
    meaning:
        What each number must be, for messages, e.g. ``an integer offset >= -2``.
    minimum:
        The smallest number accepted.
    empty:
        Whether a document naming no partition is accepted.

    Raises
    ------
    OffsetsError
        When the structure is not that one, a partition is not a non-negative integer or a number
        is not an integer >= ``minimum``; a partition above :data:`MAX_PARTITION`, a number above
        :data:`MAX_OFFSET`, or a partition given twice (``"1"`` and ``"01"``) is refused too.
    """
    if not isinstance(document, Mapping):
        raise OffsetsError(
            f"{where}: expected a JSON object of cluster ids, got {shown(document)}."
        )
    result: dict[PartitionKey, int] = {}
    for cluster, topics in document.items():
        _name(cluster, where, f"cluster {shown(cluster)}")
        if (
            isinstance(topics, Mapping)
            and topics
            and not any(isinstance(p, Mapping) for p in topics.values())
        ):  # {"orders": {"0": 23}}: Spark's own form, a topic where a cluster goes
            raise OffsetsError(
                f"{where}: {shown(document)} is in Spark's form, topics first; dynamic_kafka's "
                "names each topic's cluster first: "
                f"{_as_json({'<cluster id>': document})} (the cluster ids are the metadata's)."
            )
        by_topic = _mapping(topics, where, f"cluster {shown(cluster)}", "topics to partitions")
        for topic, partitions in by_topic.items():
            _name(topic, where, f"topic {shown(topic)} of {cluster}")
            by_partition = _mapping(
                partitions, where, f"{cluster}/{topic}", f"partitions to {meaning}"
            )
            for partition, number in by_partition.items():
                try:
                    index = int(partition)
                except (TypeError, ValueError):
                    index = -1
                if not 0 <= index <= MAX_PARTITION:
                    raise OffsetsError(
                        f"{where}: partition {shown(partition)} of {cluster}/{topic} is not a "
                        f"partition number (an integer from 0 to {MAX_PARTITION})."
                    )
                if (
                    isinstance(number, bool)
                    or not isinstance(number, int)
                    or not minimum <= number <= MAX_OFFSET
                ):
                    raise OffsetsError(
                        f"{where}: {shown(number)} for {cluster}/{topic}/{partition} must be "
                        f"{meaning}, at most {MAX_OFFSET}."
                    )
                key = (str(cluster), str(topic), index)
                if key in result:
                    raise OffsetsError(
                        f"{where}: partition {index} of {cluster}/{topic} is given twice "
                        f"(as {shown(partition)} and another spelling); give it once."
                    )
                result[key] = number
    if not result and not empty:
        raise OffsetsError(f"{where}: the JSON names no partition.")
    return result


def _name(key: object, where: str, subject: str) -> None:
    """Refuse ``key`` unless it is a name (a string); ``subject`` says which key it is."""
    if not isinstance(key, str):
        raise OffsetsError(f"{where}: {subject} must be a name (a string).")


def _mapping(value: object, where: str, subject: str, maps: str) -> Mapping[Any, Any]:
    """``value``, a JSON object; else refused: ``subject`` must map ``maps`` (what to what)."""
    if not isinstance(value, Mapping):
        raise OffsetsError(f"{where}: {subject} must map {maps}, got {shown(value)}.")
    return value
