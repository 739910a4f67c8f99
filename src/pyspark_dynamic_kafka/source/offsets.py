"""Offsets: the checkpointed offset JSON.

The checkpointed offset is ``{"version": 1, "clusters": {cluster: {topic: {"partition": next}}}}``
built in canonical order (clusters and topics sorted, partitions in numeric order), because Spark
compares offsets as strings. It holds ids, topics, partitions and offsets only: never a client
property.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyspark_dynamic_kafka.errors import OffsetsError

__all__ = [
    "EARLIEST",
    "LATEST",
    "OFFSET_VERSION",
    "PartitionKey",
    "decode_offsets",
    "encode_offsets",
    "names",
]

OFFSET_VERSION = 1
EARLIEST = -2
LATEST = -1

#: (cluster id, topic, partition)
PartitionKey = tuple[str, str, int]


def encode_offsets(offsets: Mapping[PartitionKey, int]) -> dict[str, Any]:
    """Build the canonical offset dict Spark checkpoints.

    Parameters
    ----------
    offsets:
        Next offset to read for each (cluster, topic, partition).
    """
    clusters: dict[str, dict[str, dict[str, int]]] = {}
    for cluster, topic, partition in sorted(offsets):
        topics = clusters.setdefault(cluster, {})
        topics.setdefault(topic, {})[str(partition)] = int(offsets[(cluster, topic, partition)])
    return {"version": OFFSET_VERSION, "clusters": clusters}


def _nested_positions(clusters: object, where: str) -> dict[PartitionKey, int]:
    if not isinstance(clusters, Mapping):
        raise OffsetsError(f"{where}: expected an object of cluster ids, got {clusters!r}")
    result: dict[PartitionKey, int] = {}
    for cluster, topics in clusters.items():
        if not isinstance(topics, Mapping):
            raise OffsetsError(
                f"{where}: cluster {cluster!r} must map topics to partitions, got {topics!r}"
            )
        for topic, partitions in topics.items():
            if not isinstance(partitions, Mapping):
                raise OffsetsError(
                    f"{where}: {cluster}/{topic} must map partitions to offsets, got {partitions!r}"
                )
            for partition, offset in partitions.items():
                try:
                    number = int(partition)
                except (TypeError, ValueError):
                    raise OffsetsError(
                        f"{where}: partition {partition!r} of {cluster}/{topic} is not an integer"
                    ) from None
                if isinstance(offset, bool) or not isinstance(offset, int) or offset < EARLIEST:
                    raise OffsetsError(
                        f"{where}: offset {offset!r} of {cluster}/{topic}/{partition} must be an "
                        "integer >= -2 (-2 earliest, -1 latest)"
                    )
                result[(str(cluster), str(topic), number)] = offset
    return result


def decode_offsets(offset: Mapping[str, Any]) -> dict[PartitionKey, int]:
    """Read an offset dict produced by :func:`encode_offsets` (e.g. from a checkpoint).

    Raises
    ------
    OffsetsError
        When the version is unknown or the structure is not the expected one.
    """
    version = offset.get("version") if isinstance(offset, Mapping) else None
    if version != OFFSET_VERSION:
        raise OffsetsError(
            f"Checkpointed offset has version {version!r}; this release reads version "
            f"{OFFSET_VERSION}. Use the release that wrote the checkpoint, or a new checkpoint."
        )
    positions = _nested_positions(offset.get("clusters", {}), "checkpointed offset")
    negative = [key for key, value in positions.items() if value < 0]
    if negative:
        raise OffsetsError(f"checkpointed offset holds negative offsets for {negative[:3]}")
    return positions


def names(keys: Iterable[PartitionKey]) -> str:
    """Render partition keys for messages: ``east/orders/0, west/orders/1``."""
    return ", ".join(f"{c}/{t}/{p}" for c, t, p in keys)
