"""Offsets kept in the checkpointed offset for partitions not read now, resumed when their
cluster and topic are assigned: the one place for such offsets.

Two kinds of partitions are kept, under ``"retained"`` beside ``"clusters"``:

- **Removed** clusters and topics (``removedClusterRetentionMs``). A cluster or topic that leaves
  the metadata normally leaves the offset JSON at once; when it comes back it starts again at
  ``discoveryStartingOffsets``. A cluster that flaps (removed by mistake, a failover reverted)
  would then be read again from its earliest offset, or skip what arrived meanwhile. With a
  retention window its offsets are kept with the time of removal (``removedAtMs``); re-added
  within the window, its partitions resume exactly where they stopped; after it they are dropped.
- **Archived** partitions of a hybrid read (``archive.path``) whose cluster and topic the metadata
  does not assign (yet): they start where the archive ends whenever they are assigned, so they
  are kept without ``removedAtMs`` and never expire.

The block::

    "retained": {"east": {"orders": {"removedAtMs": 1732350000000, "offsets": {"0": 10}}},
                 "west": {"orders": {"offsets": {"0": 120}}}}

Checkpoints written before this block held archived partitions read the old form too:
``"archive": {"pending": {cluster: {topic: {partition: offset}}}}`` (kept without expiry).

Everything here is pure: the caller passes the assignment's (cluster, topic) pairs and the clock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.position import PartitionKey
from pyspark_dynamic_kafka.source.checkpoint import OFFSET_MEANING, partition_map

__all__ = [
    "RETAINED",
    "Retained",
    "Retention",
    "decode_retained",
    "encode_retained",
    "retain",
    "with_retained",
]

_log = logging.getLogger(__name__)

RETAINED = "retained"
"""The key of the retained block in the offset JSON."""

TopicKey = tuple[str, str]


@dataclass(frozen=True)
class Retained:
    """Offsets of partitions not read now, kept until their (cluster, topic) is assigned.

    Attributes
    ----------
    offsets:
        Next offset to read of every retained partition.
    removed_at:
        Epoch milliseconds at which each removed (cluster, topic) left the metadata: these expire
        after the retention window. A pair of ``offsets`` without an entry here never expires
        (archived partitions of a hybrid read).
    """

    offsets: Mapping[PartitionKey, int] = field(default_factory=dict)
    removed_at: Mapping[TopicKey, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.removed_at or self.offsets)

    def pairs(self) -> set[TopicKey]:
        """Every retained (cluster, topic)."""
        return {(c, t) for c, t, _ in self.offsets} | set(self.removed_at)


@dataclass(frozen=True)
class Retention:
    """The outcome of one step: what resumes, what stays retained.

    Attributes
    ----------
    resumed:
        Offsets of the partitions whose (cluster, topic) is in the metadata now: they are read
        from there, as if they had never left.
    retained:
        What stays retained after this step (newly removed pairs added, expired ones dropped).
    """

    resumed: dict[PartitionKey, int]
    retained: Retained


def encode_retained(retained: Retained) -> dict[str, Any]:
    """The ``"retained"`` block, in canonical order (Spark compares offsets as strings)."""
    block: dict[str, dict[str, dict[str, Any]]] = {}
    for cluster, topic in sorted(retained.pairs()):
        partitions = sorted(
            (p, o) for (c, t, p), o in retained.offsets.items() if (c, t) == (cluster, topic)
        )
        entry: dict[str, Any] = {}
        if (cluster, topic) in retained.removed_at:
            entry["removedAtMs"] = int(retained.removed_at[(cluster, topic)])
        entry["offsets"] = {str(p): int(o) for p, o in partitions}
        block.setdefault(cluster, {})[topic] = entry
    return block


def with_retained(offset: dict[str, Any], retained: Retained) -> dict[str, Any]:
    """``offset`` with the ``"retained"`` block (last) when anything is retained."""
    if retained:
        offset[RETAINED] = encode_retained(retained)
    return offset


def decode_retained(offset: Mapping[str, Any]) -> Retained:
    """Read the ``"retained"`` block of a checkpointed offset (none: nothing retained), and the
    archived partitions of the old ``"archive": {"pending": ...}`` form.

    Raises
    ------
    OffsetsError
        When the block is not the structure :func:`encode_retained` writes.
    """
    block = offset.get(RETAINED)
    old = offset.get("archive")
    pending = old.get("pending", {}) if isinstance(old, Mapping) else {}
    where = "checkpointed offset (archive.pending)"
    kept = partition_map(pending, where, OFFSET_MEANING, 0)
    if block is None:
        return Retained(kept)
    where = f"checkpointed offset, {RETAINED!r}"
    if not isinstance(block, Mapping):
        raise OffsetsError(f"{where}: expected a JSON object of cluster ids, got {block!r}.")
    removed_at: dict[TopicKey, int] = {}
    nested: dict[str, dict[str, Any]] = {}
    for cluster, topics in block.items():
        if not isinstance(topics, Mapping):
            raise OffsetsError(f"{where}: cluster {cluster!r} must map topics, got {topics!r}.")
        for topic, entry in topics.items():
            stamp = _removed_at(entry)
            if stamp is None:
                raise OffsetsError(
                    f"{where}: {cluster}/{topic} must be an object with 'removedAtMs' (epoch "
                    "ms >= 0) and 'offsets', or with non-empty 'offsets' only (archived "
                    f"partitions, kept without expiry), got {entry!r}."
                )
            if stamp >= 0:
                removed_at[(str(cluster), str(topic))] = stamp
            nested.setdefault(str(cluster), {})[str(topic)] = entry.get("offsets", {})
    offsets = partition_map(nested, where, "a next offset to read (an integer >= 0)", 0)
    return Retained({**kept, **offsets}, removed_at)


def _removed_at(entry: object) -> int | None:
    """An entry's ``removedAtMs``; -1 for an entry kept without expiry; ``None``: malformed."""
    if not isinstance(entry, Mapping):
        return None
    if "removedAtMs" not in entry:
        offsets = entry.get("offsets")
        return -1 if isinstance(offsets, Mapping) and offsets else None
    stamp = entry["removedAtMs"]
    return stamp if isinstance(stamp, int) and not isinstance(stamp, bool) and stamp >= 0 else None


def retain(
    previous: Mapping[PartitionKey, int],
    retained: Retained,
    assigned: Collection[TopicKey],
    retention_ms: int,
    now_ms: Callable[[], int],
    expiring: bool = True,
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
        ``removedClusterRetentionMs``; 0 retains no removed pair (and drops the removed pairs a
        checkpoint retained). Pairs kept without expiry stay whatever it is.
    now_ms:
        The clock, epoch milliseconds.
    expiring:
        Whether pairs of ``previous`` that left ``assigned`` are removed ones (kept for the
        window); ``False`` at a hybrid read's switch to Kafka, where ``previous`` holds where
        Kafka starts and none of it was read: those are kept without expiry.

    Returns
    -------
    Retention
        The partitions that resume (pairs assigned now) and what stays retained: pairs of
        ``previous`` that left ``assigned``, and earlier ones still in their window or kept
        without expiry.
    """
    assigned = set(assigned)
    now = now_ms()
    resumed = {k: o for k, o in retained.offsets.items() if (k[0], k[1]) in assigned}
    for pair in sorted({(k[0], k[1]) for k in resumed}):
        _log.info("%s/%s is assigned: its partitions resume at their retained offsets", *pair)
    removed_at = {
        pair: stamp
        for pair, stamp in retained.removed_at.items()
        if pair not in assigned and _within(pair, stamp, now, retention_ms)
    }
    offsets = {
        k: o
        for k, o in retained.offsets.items()
        if (k[0], k[1]) not in assigned
        and ((k[0], k[1]) in removed_at or (k[0], k[1]) not in retained.removed_at)
    }
    if retention_ms > 0 or not expiring:
        for key, offset in previous.items():
            pair = (key[0], key[1])
            if pair not in assigned:
                if expiring:
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
