"""Driver side: what the stream reader tells monitoring, through Spark's progress reports.

:class:`SourceStatus` follows subscription changes and discovery outcomes and builds the status
the stream reports beside its latest offsets, in the form
:mod:`~pyspark_dynamic_kafka.source.contract` declares: ``changes`` holds the last few
reconciliations that changed what is read (numbered by ``seq``), ``planned`` the offsets the
micro-batch planned with these latest offsets covers, per cluster and topic, ``readPaths`` the
engine that reads each cluster (``direct``, ``librdkafka`` or ``python``), ``dataLoss`` (once
there was any, with ``failOnDataLoss=false``) the last few losses, by partition. Each such
reconciliation is also logged as one structured line (event ``reconciliation``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from pyspark_dynamic_kafka.events import log_event
from pyspark_dynamic_kafka.offset_spec import PartitionKey
from pyspark_dynamic_kafka.source.contract import STATUS_KEY, Status
from pyspark_dynamic_kafka.source.driver.discovery import Subscription
from pyspark_dynamic_kafka.source.driver.reconcile import Loss

__all__ = ["SourceStatus", "planned_offsets"]

_log = logging.getLogger(__name__)

#: Reconciliations kept in the status (a progress report may follow several of them).
_KEPT_CHANGES = 8


def planned_offsets(
    begin: Mapping[PartitionKey, int], end: Mapping[PartitionKey, int]
) -> dict[str, dict[str, int]]:
    """Offsets from ``begin`` to ``end`` per cluster and topic (partitions entering: none)."""
    planned: dict[str, dict[str, int]] = {}
    for key, stop in end.items():
        cluster, topic, _ = key
        count = max(stop - begin[key], 0) if key in begin else 0
        topics = planned.setdefault(cluster, {})
        topics[topic] = topics.get(topic, 0) + count
    return planned


def _topics(subscription: Subscription) -> dict[str, list[str]]:
    return {cluster: sorted(a.topics) for cluster, a in sorted(subscription.items())}


class SourceStatus:
    """Follows subscription changes and discovery outcomes; builds the reported status.

    Parameters
    ----------
    subscription:
        The subscription, for log lines (``streamIds=orders``).
    threshold:
        ``metadataDiscoveryFailureThreshold``.
    wall:
        Wall clock in seconds since the epoch.
    """

    def __init__(
        self, subscription: str, threshold: int, wall: Callable[[], float] = time.time
    ) -> None:
        self._subscription = subscription
        self._threshold = threshold
        self._wall = wall
        self._read_topics: dict[str, list[str]] = {}  # cluster -> topics, as last observed
        self._changes: list[dict[str, Any]] = []
        self._seq = 0
        self._discovery: dict[str, Any] = {}
        self._planned: dict[str, dict[str, int]] = {}
        self._read_paths: dict[str, str] = {}
        self._losses: list[dict[str, Any]] = []

    def observe(
        self,
        subscription: Subscription,
        entered: Mapping[PartitionKey, int],
        failures: int,
        last_success_ms: int | None,
        left: int = 0,
    ) -> dict[str, Any] | None:
        """Record a reconciliation; log and return it when it changed what is read.

        ``entered``: the partitions entering the offset; ``left``: how many partitions left it
        (a group's revocation or hand-over, a removed topic's partitions).
        """
        self._discovery = {
            "lastSuccessMs": last_success_ms,
            "consecutiveFailures": failures,
            "threshold": self._threshold,
        }
        now = _topics(subscription)
        before = self._read_topics
        self._read_topics = now
        pairs_now = {f"{c}/{t}" for c, ts in now.items() for t in ts}
        pairs_before = {f"{c}/{t}" for c, ts in before.items() for t in ts}
        change = {
            "clustersAdded": sorted(set(now) - set(before)),
            "clustersRemoved": sorted(set(before) - set(now)),
            "topicsAdded": sorted(pairs_now - pairs_before),
            "topicsRemoved": sorted(pairs_before - pairs_now),
            "partitionsEntered": len(entered),
            "partitionsLeft": left,
        }
        if not any(change.values()):
            return None
        self._seq += 1
        record = {"seq": self._seq, "atMs": int(self._wall() * 1000), **change}
        self._changes = [*self._changes, record][-_KEPT_CHANGES:]
        log_event(  # a warning: seen in the driver's log without any logging configuration
            _log,
            logging.WARNING,
            "reconciliation",
            subscription=self._subscription,
            clusters=sorted(now),
            **record,
        )
        return record

    def planned(self, begin: Mapping[PartitionKey, int], end: Mapping[PartitionKey, int]) -> None:
        """Record the offsets the next micro-batch covers (``end`` is what ``latestOffset``
        returned)."""
        self._planned = planned_offsets(begin, end)

    def losses(self, losses: list[Loss]) -> None:
        """Record the last losses reported (``failOnDataLoss=false``), named by partition."""
        self._losses = [
            {
                "partition": "/".join(str(part) for part in loss.key),
                "what": loss.what,
                "nextOffset": loss.checkpointed,
                **({} if loss.latest is None else {"latestOffset": loss.latest}),
            }
            for loss in losses
        ]

    def read_paths(self, paths: Mapping[str, str]) -> None:
        """Record the engine that reads each cluster (the driver's decision for its tasks)."""
        self._read_paths = dict(sorted(paths.items()))

    def report(self, latest: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """``latest`` (the encoded latest offsets) with the status under :data:`STATUS_KEY`."""
        if latest is None:
            return None
        status: Status = {
            "assignment": self._read_topics,
            "discovery": self._discovery,
            "changes": self._changes,
            "planned": self._planned,
            "readPaths": self._read_paths,
        }
        if self._losses:
            status["dataLoss"] = self._losses
        return {**latest, STATUS_KEY: status}
