"""Driver side: compare the checkpointed offsets with what each assigned cluster has now.

Every micro-batch each assigned cluster is listed: partitions seen for the first time enter at
their starting position, known partitions advance to their latest offset, and partitions whose
records went away *on the cluster* are data loss (:class:`Loss`): a topic deleted or a partition
gone while the metadata still lists them, or a latest offset below the checkpointed one. What
leaves through the metadata (a stream, cluster or topic removed) simply leaves the offset.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pyspark_dynamic_kafka.errors import DataLossError, KafkaClientError
from pyspark_dynamic_kafka.source.discovery import Assignment, ClusterAssignment
from pyspark_dynamic_kafka.source.listing import OffsetLister
from pyspark_dynamic_kafka.source.offsets import PartitionKey
from pyspark_dynamic_kafka.source.positions import Position

__all__ = ["Loss", "NewPosition", "Reconciled", "reconcile", "report_losses"]

_log = logging.getLogger(__name__)

#: (partition, its cluster's assignment, whether the query reads that cluster for the first time)
#: -> where the partition starts.
NewPosition = Callable[[PartitionKey, ClusterAssignment, bool], Position]


@dataclass(frozen=True)
class Loss:
    """Records of one partition that the query has not read and that are gone.

    Attributes
    ----------
    key:
        (cluster, topic, partition).
    what:
        What happened, e.g. ``the topic was deleted``.
    checkpointed:
        The next offset the query was going to read.
    latest:
        The partition's latest offset now, when it still exists.
    """

    key: PartitionKey
    what: str
    checkpointed: int
    latest: int | None = None

    def describe(self) -> str:
        """``east/orders/2: the partition no longer exists (next offset to read 10)``."""
        cluster, topic, partition = self.key
        now = f", latest offset now {self.latest}" if self.latest is not None else ""
        return (
            f"{cluster}/{topic}/{partition}: {self.what} (next offset to read "
            f"{self.checkpointed}{now})"
        )


@dataclass
class Reconciled:
    """The outcome of one reconciliation.

    Attributes
    ----------
    offsets:
        How far every readable partition can be read now; partitions seen for the first time at
        their starting offset; partitions whose offsets went back at their (lower) latest offset.
    entered:
        The partitions seen for the first time, with their starting offset.
    losses:
        Data loss found (empty when none).
    rewound:
        For partitions whose offsets went back: the earliest offset available now.
    absent:
        Per cluster, assigned topics the cluster does not have.
    """

    offsets: dict[PartitionKey, int] = field(default_factory=dict)
    entered: dict[PartitionKey, int] = field(default_factory=dict)
    losses: list[Loss] = field(default_factory=list)
    rewound: dict[PartitionKey, int] = field(default_factory=dict)
    absent: dict[str, frozenset[str]] = field(default_factory=dict)


def reconcile(
    assignment: Assignment,
    previous: Mapping[PartitionKey, int],
    lister: OffsetLister,
    new_position: NewPosition,
    timestamp_strategy: str,
) -> Reconciled:
    """List every assigned cluster and reconcile it with ``previous``.

    A cluster that cannot be listed keeps its previous offsets (warning); so does a topic the
    cluster reports with a transient error.

    Raises
    ------
    OffsetsError
        When a starting timestamp has no record and the strategy is ``error``.
    """
    result = Reconciled()
    known_clusters = {cluster for cluster, _, _ in previous}
    for cluster_id, cluster in assignment.items():
        carried = {
            k: v for k, v in previous.items() if k[0] == cluster_id and k[1] in cluster.topics
        }
        try:
            _reconcile_cluster(
                result,
                cluster_id,
                cluster,
                carried,
                lister,
                new_position,
                cluster_id not in known_clusters,
                timestamp_strategy,
            )
        except KafkaClientError as exc:
            _log.warning("Keeping the offsets of cluster %r this micro-batch: %s", cluster_id, exc)
            result.offsets.update(carried)
    return result


def _reconcile_cluster(
    result: Reconciled,
    cluster_id: str,
    cluster: ClusterAssignment,
    carried: Mapping[PartitionKey, int],
    lister: OffsetLister,
    new_position: NewPosition,
    first: bool,
    timestamp_strategy: str,
) -> None:
    snapshot = lister.snapshot(cluster_id, cluster)
    topics = snapshot.topics
    fresh = {
        (t, p): new_position((cluster_id, t, p), cluster, first)
        for t, p in snapshot.latest
        if (cluster_id, t, p) not in carried
    }
    starts = lister.resolve(cluster_id, cluster, fresh, snapshot.latest, timestamp_strategy)
    offsets: dict[PartitionKey, int] = {}
    losses: list[Loss] = []
    for key, offset in carried.items():
        _, topic, partition = key
        latest = snapshot.latest.get((topic, partition))
        if topic in topics.unavailable:
            offsets[key] = offset
        elif topic in topics.absent:
            losses.append(Loss(key, "the topic was deleted", offset))
        elif latest is None:
            losses.append(Loss(key, "the partition no longer exists", offset))
        else:
            if latest < offset:
                losses.append(Loss(key, "its latest offset went back", offset, latest))
            offsets[key] = latest
    back = [(k[1], k[2]) for k in (loss.key for loss in losses if loss.latest is not None)]
    earliest = lister.admin(cluster_id, cluster).list_offsets(back, "earliest") if back else {}
    for (topic, partition), offset in starts.items():
        key = (cluster_id, topic, partition)
        offsets[key] = offset
        result.entered[key] = offset
    result.offsets.update(offsets)
    result.losses.extend(losses)
    result.rewound.update({(cluster_id, t, p): o for (t, p), o in earliest.items()})
    result.absent[cluster_id] = topics.absent


def report_losses(losses: list[Loss], fail: bool, reported: set[Loss]) -> None:
    """Fail on data loss, or (``fail`` false) log each loss once.

    Raises
    ------
    DataLossError
        When ``fail`` and there is any loss; the message names every partition and offset.
    """
    if not losses:
        return
    text = "; ".join(loss.describe() for loss in losses)
    if fail:
        raise DataLossError(
            f"Data loss: records the query has not read are gone: {text}. They were removed on "
            "the cluster, not through the metadata (removing a stream, cluster or topic from the "
            "metadata is never data loss). Restore the data, or set failOnDataLoss=false to log "
            "a warning and continue from the earliest available offsets."
        )
    fresh = [loss for loss in losses if loss not in reported]
    reported.update(fresh)
    if fresh:
        _log.warning(
            "Data loss (failOnDataLoss=false: continuing from the earliest available offsets): %s",
            "; ".join(loss.describe() for loss in fresh),
        )
