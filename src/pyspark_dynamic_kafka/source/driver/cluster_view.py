"""The driver's view of the clusters: metadata, listing, reconciliation and its log lines.

It also keeps the topic ids (KIP-516) that tell a recreated topic from a truncated log
(:mod:`~pyspark_dynamic_kafka.source.driver.went_back`): those the checkpoint recorded
(:attr:`ClusterView.recorded_ids`, set before each reconciliation) and those listed last
(:attr:`ClusterView.topic_ids`), and says once per cluster when a topic read has none.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from pyspark_dynamic_kafka.offset_spec import PartitionKey
from pyspark_dynamic_kafka.source.config.parsed import SourceOptions
from pyspark_dynamic_kafka.source.driver.discovery import Discovery, Subscription
from pyspark_dynamic_kafka.source.driver.listing import OffsetLister
from pyspark_dynamic_kafka.source.driver.reconcile import (
    MAX_PARALLEL_CLUSTERS,
    Loss,
    Reconciled,
    reconcile,
    report_losses,
)
from pyspark_dynamic_kafka.source.driver.start_policy import PositionRule

__all__ = ["ClusterView"]

_log = logging.getLogger(__name__)

#: Losses kept for the progress reports (a report may follow several micro-batches).
_KEPT_LOSSES = 8


class ClusterView:
    """The driver's view of the clusters: metadata, listing, reconciliation and its log lines.

    Parameters
    ----------
    options:
        Parsed source options.
    lister:
        The driver's listing clients.
    parallel:
        Clusters listed at the same time (a knob for benchmarks; queries keep the default).
    """

    def __init__(
        self, options: SourceOptions, lister: OffsetLister, parallel: int = MAX_PARALLEL_CLUSTERS
    ) -> None:
        self.options = options
        self.lister = lister
        self.parallel = parallel
        self.discovery: Discovery | None = None
        self.rewound: dict[PartitionKey, int] = {}
        self.generation = 0
        self.recorded_ids: dict[tuple[str, str], str] = {}
        self.topic_ids: dict[tuple[str, str], str] = {}
        self.recent_losses: list[Loss] = []
        self._reported: set[Loss] = set()
        self._absent: dict[str, frozenset[str]] = {}
        self._without_ids: set[tuple[str, bool]] = set()

    def subscription(self, refresh: bool = True) -> Subscription:
        """The current subscription; ``refresh=False`` never re-reads metadata once it has some."""
        if self.discovery is None:
            self.discovery = Discovery(self.options)
        snapshot = self.discovery.snapshot
        subscription = (
            snapshot if not refresh and snapshot is not None else self.discovery.current()
        )
        self.lister.retire_except(subscription)
        return subscription

    def report(self, losses: list[Loss]) -> None:
        """Fail on data loss, or (``failOnDataLoss=false``) log each loss once (the last few
        stay in :attr:`recent_losses`, for the progress reports)."""
        fresh = [loss for loss in losses if loss not in self._reported]
        report_losses(losses, self.options.fail_on_data_loss, self._reported)
        self.recent_losses = [*self.recent_losses, *fresh][-_KEPT_LOSSES:]

    def reconcile(
        self,
        previous: Mapping[PartitionKey, int],
        rule: PositionRule,
        entering: bool = True,
        subscription: Subscription | None = None,
    ) -> Reconciled:
        """List every assigned cluster, decide on data loss, log what changed.

        ``entering=False``: the partitions seen for the first time are not entering the offset
        (the AvailableNow target), so their positions are not logged as starting points.
        ``subscription``: the one to reconcile with (default: the current metadata).
        """
        if subscription is None:
            subscription = self.subscription()
        recorded = self.recorded_ids if previous else {}
        state = reconcile(
            subscription, previous, self.lister, rule, parallel=self.parallel, recorded=recorded
        )
        self.topic_ids = state.topic_ids
        self._say_without_ids(previous, recorded, state)
        self.report(state.losses)
        if state.losses:  # a deleted or recreated topic: pooled consumers are not reused
            self.generation += 1
        self.rewound.update(state.rewound)
        for cluster_id, absent in state.absent.items():
            if absent != self._absent.get(cluster_id, frozenset()) and absent:
                _log.warning(
                    "Cluster %r has no topic(s) %s; they are read once they exist.",
                    cluster_id,
                    sorted(absent),
                )
            self._absent[cluster_id] = absent
        for key, offset in state.entered.items() if entering else ():
            _log.info("Partition %s/%s/%d starts at offset %d", *key, offset)
        return state

    def _say_without_ids(
        self,
        previous: Mapping[PartitionKey, int],
        recorded: Mapping[tuple[str, str], str],
        state: Reconciled,
    ) -> None:
        """Log once per cluster (and once for the checkpoint) that topics read have no id."""
        read = {(c, t) for c, t, _ in state.offsets}
        for cluster in sorted({c for c, _ in read}):
            unlisted = sorted(t for c, t in read if c == cluster and (c, t) not in state.topic_ids)
            if unlisted and (cluster, True) not in self._without_ids:
                self._without_ids.add((cluster, True))
                _log.warning(
                    "Cluster %r reports no topic id for %s (brokers before Kafka 2.8): an offset "
                    "that goes back is read again from the earliest offset, whether the topic "
                    "was recreated or its log truncated.",
                    cluster,
                    unlisted,
                )
        old = sorted({f"{c}/{t}" for c, t, _ in previous} - {f"{c}/{t}" for c, t in recorded})
        if old and ("", False) not in self._without_ids:
            self._without_ids.add(("", False))
            _log.warning(
                "The checkpoint records no topic id for %s (written before topic ids were "
                "recorded): until the next micro-batch records them, an offset that goes back is "
                "read again from the earliest offset.",
                old,
            )
