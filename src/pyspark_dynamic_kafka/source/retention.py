"""Offsets of removed clusters and topics, kept for a while (``removedClusterRetentionMs``).

A cluster or topic that leaves the metadata normally leaves the offset JSON at once; when it comes
back it starts again at ``discoveryStartingOffsets``. A cluster that flaps (removed by mistake,
a failover reverted) would then be read again from its earliest offset, or skip what arrived
meanwhile. With a retention window, the offsets of each removed (cluster, topic) stay in the
offset JSON under ``"retained"``, with the time of removal, and are not read. Re-added within the
window, its partitions resume exactly where they stopped; after the window they are dropped.

The block, beside ``"clusters"`` in the checkpointed offset::

    "retained": {"east": {"orders": {"removedAtMs": 1732350000000, "offsets": {"0": 10}}}}

Everything here is pure: the caller passes the assignment's (cluster, topic) pairs and the clock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.position import PartitionKey
from pyspark_dynamic_kafka.source.offsets import partition_map

__all__ = ["RETAINED", "Retained", "Retention", "decode_retained", "encode_retained", "retain"]

_log = logging.getLogger(__name__)

RETAINED = "retained"
"""The key of the retained block in the offset JSON."""

TopicKey = tuple[str, str]


@dataclass(frozen=True)
class Retained:
    """Offsets of removed (cluster, topic) pairs, not read, and when each was removed.

    Attributes
    ----------
    offsets:
        Next offset to read of every retained partition.
    removed_at:
        Epoch milliseconds at which each (cluster, topic) left the metadata.
    """

    offsets: Mapping[PartitionKey, int] = field(default_factory=dict)
    removed_at: Mapping[TopicKey, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.removed_at)


@dataclass(frozen=True)
class Retention:
    """The outcome of one step: what resumes, what stays retained.

    Attributes
    ----------
    resumed:
        Offsets of the partitions whose (cluster, topic) is back in the metadata: they are read
        from there, as if they had never left.
    retained:
        What stays retained after this step (newly removed pairs added, expired ones dropped).
    """

    resumed: dict[PartitionKey, int]
    retained: Retained


def encode_retained(retained: Retained) -> dict[str, Any]:
    """The ``"retained"`` block, in canonical order (Spark compares offsets as strings)."""
    block: dict[str, dict[str, dict[str, Any]]] = {}
    for cluster, topic in sorted(retained.removed_at):
        partitions = sorted(
            (p, o) for (c, t, p), o in retained.offsets.items() if (c, t) == (cluster, topic)
        )
        block.setdefault(cluster, {})[topic] = {
            "removedAtMs": int(retained.removed_at[(cluster, topic)]),
            "offsets": {str(p): int(o) for p, o in partitions},
        }
    return block


def decode_retained(offset: Mapping[str, Any]) -> Retained:
    """Read the ``"retained"`` block of a checkpointed offset (none: nothing retained).

    Raises
    ------
    OffsetsError
        When the block is not the structure :func:`encode_retained` writes.
    """
    block = offset.get(RETAINED)
    if block is None:
        return Retained()
    where = f"checkpointed offset, {RETAINED!r}"
    if not isinstance(block, Mapping):
        raise OffsetsError(f"{where}: expected a JSON object of cluster ids, got {block!r}.")
    removed_at: dict[TopicKey, int] = {}
    nested: dict[str, dict[str, Any]] = {}
    for cluster, topics in block.items():
        if not isinstance(topics, Mapping):
            raise OffsetsError(f"{where}: cluster {cluster!r} must map topics, got {topics!r}.")
        for topic, entry in topics.items():
            stamp = entry.get("removedAtMs") if isinstance(entry, Mapping) else None
            if isinstance(stamp, bool) or not isinstance(stamp, int) or stamp < 0:
                raise OffsetsError(
                    f"{where}: {cluster}/{topic} must be an object with 'removedAtMs' (epoch "
                    f"ms >= 0) and 'offsets', got {entry!r}."
                )
            removed_at[(str(cluster), str(topic))] = stamp
            nested.setdefault(str(cluster), {})[str(topic)] = entry.get("offsets", {})
    offsets = partition_map(nested, where, "a next offset to read (an integer >= 0)", 0)
    return Retained(offsets, removed_at)


def retain(
    previous: Mapping[PartitionKey, int],
    retained: Retained,
    assigned: Collection[TopicKey],
    retention_ms: int,
    now_ms: Callable[[], int],
) -> Retention:
    """One step of the retention window, before the assignment is reconciled.

    Parameters
    ----------
    previous:
        The offsets being read (the ``"clusters"`` of the last offset).
    retained:
        What the last offset retained.
    assigned:
        Every (cluster, topic) of the current assignment.
    retention_ms:
        ``removedClusterRetentionMs``; 0 retains nothing (and drops what a checkpoint retained).
    now_ms:
        The clock, epoch milliseconds.

    Returns
    -------
    Retention
        The partitions that resume (re-added pairs) and what stays retained: pairs of
        ``previous`` that left ``assigned`` (removed now), and earlier ones still in their window.
    """
    assigned = set(assigned)
    now = now_ms()
    resumed = {k: o for k, o in retained.offsets.items() if (k[0], k[1]) in assigned}
    for pair in sorted({(k[0], k[1]) for k in resumed}):
        _log.info(
            "%s/%s is back in the metadata within removedClusterRetentionMs: it resumes at its "
            "retained offsets",
            *pair,
        )
    removed_at = {
        pair: stamp
        for pair, stamp in retained.removed_at.items()
        if pair not in assigned and _within(pair, stamp, now, retention_ms)
    }
    offsets = {k: o for k, o in retained.offsets.items() if (k[0], k[1]) in removed_at}
    if retention_ms > 0:
        for key, offset in previous.items():
            pair = (key[0], key[1])
            if pair not in assigned:
                removed_at.setdefault(pair, now)
                offsets[key] = offset
    return Retention(resumed, Retained(offsets, removed_at))


def _within(pair: TopicKey, removed_at: int, now: int, retention_ms: int) -> bool:
    """Whether a retained pair is still in its window; logs the ones dropped."""
    if now - removed_at < retention_ms:
        return True
    _log.info(
        "%s/%s left the metadata %d ms ago, more than removedClusterRetentionMs=%d: its "
        "retained offsets are dropped (re-added, it starts at discoveryStartingOffsets)",
        *pair,
        now - removed_at,
        retention_ms,
    )
    return False
