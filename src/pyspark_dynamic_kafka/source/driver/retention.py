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

The block (encoded and decoded by :mod:`~pyspark_dynamic_kafka.source.checkpoint`)::

    "retained": {"east": {"orders": {"removedAtMs": 1732350000000, "offsets": {"0": 10}}},
                 "west": {"orders": {"offsets": {"0": 120}}}}

Everything here is pure: the caller passes the subscription's (cluster, topic) pairs and the clock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from pyspark_dynamic_kafka.offset_spec import PartitionKey
from pyspark_dynamic_kafka.source.checkpoint import Retained

__all__ = ["Retention", "retain"]

_log = logging.getLogger(__name__)

TopicKey = tuple[str, str]


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


def retain(
    previous: Mapping[PartitionKey, int],
    retained: Retained,
    assigned: Collection[TopicKey],
    retention_ms: int,
    now_ms: Callable[[], int],
    expiring: bool = True,
) -> Retention:
    """One step of the retention window, before the subscription is reconciled.

    Parameters
    ----------
    previous:
        The offsets being read (the ``"clusters"`` of the last offset).
    retained:
        What the last offset retained.
    assigned:
        Every (cluster, topic) of the current subscription.
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
