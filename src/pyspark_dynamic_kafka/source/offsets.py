"""Offsets: the checkpointed offset JSON and the starting-offset specifications.

The checkpointed offset is ``{"version": 1, "clusters": {cluster: {topic: {"partition": next}}}}``
built in canonical order (clusters and topics sorted, partitions in numeric order), because Spark
compares offsets as strings. It holds ids, topics, partitions and offsets only: never a client
property.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark_dynamic_kafka.errors import OffsetsError

__all__ = [
    "EARLIEST",
    "LATEST",
    "OFFSET_VERSION",
    "PartitionKey",
    "StartingOffsets",
    "decode_offsets",
    "encode_offsets",
    "parse_starting_offsets",
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


@dataclass(frozen=True)
class StartingOffsets:
    """A parsed starting-offsets option.

    Attributes
    ----------
    default:
        ``EARLIEST`` or ``LATEST``: for every partition not named in ``specific``.
    specific:
        Offsets named in JSON (-2 earliest, -1 latest), or empty.
    explicit_json:
        Whether the option was JSON (partitions it does not name use the discovery default).
    """

    default: int
    specific: Mapping[PartitionKey, int]
    explicit_json: bool = False

    def clusters(self) -> set[str]:
        """Cluster ids named in the JSON."""
        return {cluster for cluster, _, _ in self.specific}

    def topics(self) -> set[tuple[str, str]]:
        """(cluster, topic) pairs named in the JSON."""
        return {(cluster, topic) for cluster, topic, _ in self.specific}

    def position(self, key: PartitionKey, fallback: int) -> int:
        """One partition's spec: its named offset, else the default (``fallback`` for JSON)."""
        if key in self.specific:
            return self.specific[key]
        return fallback if self.explicit_json else self.default


def parse_starting_offsets(value: str, option: str) -> StartingOffsets:
    """Parse ``earliest``, ``latest`` or a JSON ``{"cluster": {"topic": {"0": 23}}}``.

    Parameters
    ----------
    value:
        The option value.
    option:
        The option key, named in errors.
    """
    text = value.strip()
    lowered = text.lower()
    if lowered == "earliest":
        return StartingOffsets(EARLIEST, {})
    if lowered == "latest":
        return StartingOffsets(LATEST, {})
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OffsetsError(
            f"Invalid value {value!r} for option '{option}': expected 'earliest', 'latest' or "
            f'JSON like {{"cluster": {{"topic": {{"0": 23}}}}}} ({exc.msg} at column {exc.colno}).'
        ) from None
    try:
        specific = _nested_positions(document, f"option '{option}'")
    except OffsetsError as exc:
        raise OffsetsError(f"Invalid value {value!r}: {exc}") from None
    if not specific:
        raise OffsetsError(
            f"Invalid value {value!r} for option '{option}': the JSON names no partition."
        )
    return StartingOffsets(LATEST, specific, explicit_json=True)


def names(keys: Iterable[PartitionKey]) -> str:
    """Render partition keys for messages: ``east/orders/0, west/orders/1``."""
    return ", ".join(f"{c}/{t}/{p}" for c, t, p in keys)
