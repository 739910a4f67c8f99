"""The driver's view of the clusters: metadata, listing, reconciliation and its log lines."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from pyspark_dynamic_kafka.position import PartitionKey
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
        self._reported: set[Loss] = set()
        self._absent: dict[str, frozenset[str]] = {}

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
        """Fail on data loss, or (``failOnDataLoss=false``) log each loss once."""
        report_losses(losses, self.options.fail_on_data_loss, self._reported)

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
        state = reconcile(subscription, previous, self.lister, rule, parallel=self.parallel)
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
