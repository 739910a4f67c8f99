"""Driver side: compare the checkpointed offsets with what each assigned cluster has now.

Each assigned cluster is listed (every micro-batch of a stream, once for a batch read): partitions
seen for the first time enter at their position (placed and resolved by
:mod:`~pyspark_dynamic_kafka.source.driver.start_policy`), known partitions advance to their latest
offset,
and partitions whose records went away *on the cluster* are data loss (:class:`Loss`): a topic
deleted or a partition gone while the metadata still lists them, a latest offset below the
checkpointed one, or a topic with another id than the checkpoint records: a recreated topic is
read again from its earliest offset, a truncated log continues from its new end
(:mod:`~pyspark_dynamic_kafka.source.driver.went_back`). What leaves through the metadata (a
stream, cluster or topic removed) simply leaves the offset.

Data loss is decided on the driver by one function, :func:`report_losses`, for what listing finds
here and for a planned micro-batch whose offsets went back (:func:`offsets_went_back`, e.g. one
replayed from the checkpoint). What the driver cannot see is found by the executor while it reads
(:mod:`~pyspark_dynamic_kafka.source.executor.read`): records of a planned range removed after
planning
(retention, a topic deleted or recreated meanwhile) come back as "offset out of range" or "unknown
topic or partition"; the task then fails, or with ``failOnDataLoss=false`` skips them, under the
same ``failOnDataLoss`` its :class:`~pyspark_dynamic_kafka.source.executor.task.ReadSettings` carry.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from pyspark_dynamic_kafka.errors import DataLossError, KafkaClientError
from pyspark_dynamic_kafka.offset_spec import PartitionKey, PositionKind
from pyspark_dynamic_kafka.source.driver.discovery import ClusterSubscription, Subscription
from pyspark_dynamic_kafka.source.driver.listing import OffsetLister
from pyspark_dynamic_kafka.source.driver.start_policy import PositionRule, resolve_positions
from pyspark_dynamic_kafka.source.driver.went_back import TRUNCATED, TopicIds, went_back

__all__ = [
    "MAX_PARALLEL_CLUSTERS",
    "Loss",
    "Reconciled",
    "offsets_went_back",
    "reconcile",
    "report_losses",
]

_log = logging.getLogger(__name__)

#: Clusters listed at the same time, each by a thread of its own (the requests are I/O: threads
#: overlap the round trips; a cluster's admin client is only ever used by one of them).
MAX_PARALLEL_CLUSTERS = 16


@dataclass(frozen=True)
class Loss:
    """Records of one partition that the query has not read and that are gone.

    Found on the driver, by listing the cluster or in a planned micro-batch.

    Attributes
    ----------
    key:
        (cluster, topic, partition).
    what:
        What happened, e.g. ``the topic was deleted``.
    checkpointed:
        The next offset the query was going to read.
    latest:
        The partition's latest offset now, when it still exists (not compared: the same loss
        seen by listing and by a planned micro-batch, whose end admission may cap, is one).
    """

    key: PartitionKey
    what: str
    checkpointed: int
    latest: int | None = field(default=None, compare=False)

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
    latest:
        The latest offset of every partition listed.
    losses:
        Data loss found (empty when none).
    rewound:
        Where the next range of a partition that lost records begins: the earliest offset
        available now for a recreated topic (or one whose offsets went back, without ids), the
        new end for a truncated log.
    absent:
        Per cluster, assigned topics the cluster does not have.
    topic_ids:
        The id of each (cluster, topic) of ``offsets`` that has one: as listed now, or as
        ``recorded`` for a topic not listed (its offsets kept).
    """

    offsets: dict[PartitionKey, int] = field(default_factory=dict)
    entered: dict[PartitionKey, int] = field(default_factory=dict)
    latest: dict[PartitionKey, int] = field(default_factory=dict)
    losses: list[Loss] = field(default_factory=list)
    rewound: dict[PartitionKey, int] = field(default_factory=dict)
    absent: dict[str, frozenset[str]] = field(default_factory=dict)
    topic_ids: dict[tuple[str, str], str] = field(default_factory=dict)


def reconcile(
    subscription: Subscription,
    previous: Mapping[PartitionKey, int],
    lister: OffsetLister,
    rule: PositionRule,
    strict: bool = False,
    parallel: int = MAX_PARALLEL_CLUSTERS,
    recorded: TopicIds | None = None,
) -> Reconciled:
    """List every assigned cluster and reconcile it with ``previous``.

    Clusters are listed in parallel (up to ``parallel`` at a time). Partitions not in
    ``previous`` are placed by ``rule``; a cluster none of whose partitions is in ``previous`` is
    read for the first time. Unless ``strict``, a cluster that cannot be listed keeps its
    previous offsets (warning) until it has failed for longer than
    ``unreachableClusterTimeoutMs`` (:meth:`OffsetLister.attempt`); so does a topic the cluster
    reports with a transient error.

    Parameters
    ----------
    strict:
        A batch read: a cluster that cannot be listed, or a topic reported with an error, fails
        the read instead (it would miss their records).
    parallel:
        Clusters listed at the same time (1: one after the other; benchmarks compare).
    recorded:
        The topic ids ``previous`` was read with (the checkpoint's ``topicIds``).

    Raises
    ------
    OffsetsError
        When a starting timestamp has no record and the rule's ``no_match`` is ``error``.
    KafkaClientError
        With ``strict``, when a cluster or one of its topics cannot be listed.
    ClusterUnreachableError
        When a cluster could not be listed for longer than ``unreachableClusterTimeoutMs``.
    """
    known_clusters = {cluster for cluster, _, _ in previous}
    ids = dict(recorded or {})
    by_cluster: dict[str, dict[PartitionKey, int]] = {}
    for key, offset in previous.items():
        by_cluster.setdefault(key[0], {})[key] = offset

    def one(cluster_id: str, cluster: ClusterSubscription) -> Reconciled:
        carried = {
            k: v for k, v in by_cluster.get(cluster_id, {}).items() if k[1] in cluster.topics
        }
        part = Reconciled()
        first = cluster_id not in known_clusters
        kept = {(c, t): i for (c, t), i in ids.items() if c == cluster_id}
        try:
            with lister.attempt(cluster_id):
                _reconcile_cluster(
                    part, cluster_id, cluster, (carried, kept), lister, rule, first, strict
                )
        except KafkaClientError as exc:
            if strict or not exc.retryable:
                raise
            _log.warning(
                "Keeping the offsets of cluster %r this micro-batch (%s): %s",
                cluster_id,
                lister.outage(cluster_id),
                exc,
            )
            return Reconciled(offsets=carried, topic_ids=_ids_of(carried, kept))
        return part

    clusters = list(subscription.items())
    if len(clusters) <= 1 or parallel <= 1:
        parts = [one(cluster_id, cluster) for cluster_id, cluster in clusters]
    else:  # the clusters' requests overlap: one cluster's round trips do not wait for another's
        with ThreadPoolExecutor(min(len(clusters), parallel)) as pool:
            futures = [pool.submit(one, cluster_id, cluster) for cluster_id, cluster in clusters]
            parts = [future.result() for future in futures]
    result = Reconciled()
    for part in parts:  # in the subscription's order, as when the clusters were listed one by one
        result.offsets.update(part.offsets)
        result.entered.update(part.entered)
        result.latest.update(part.latest)
        result.losses.extend(part.losses)
        result.rewound.update(part.rewound)
        result.absent.update(part.absent)
        result.topic_ids.update(part.topic_ids)
    return result


def _ids_of(offsets: Mapping[PartitionKey, int], ids: TopicIds) -> dict[tuple[str, str], str]:
    """The ids among ``ids`` of the topics of ``offsets``."""
    return {pair: ids[pair] for pair in {(c, t) for c, t, _ in offsets} if pair in ids}


def _reconcile_cluster(
    result: Reconciled,
    cluster_id: str,
    cluster: ClusterSubscription,
    known: tuple[Mapping[PartitionKey, int], TopicIds],
    lister: OffsetLister,
    rule: PositionRule,
    first: bool,
    strict: bool,
) -> None:
    carried, recorded = known
    snapshot = lister.snapshot(cluster_id, cluster)
    topics = snapshot.topics
    listed = {(cluster_id, t): i for t, i in topics.ids.items()}
    if strict and topics.unavailable:
        raise KafkaClientError(
            f"Cluster '{cluster_id}' reports topic(s) {sorted(topics.unavailable)} with an "
            "error; a batch read would miss their records. Retry when the cluster is healthy."
        )
    fresh = {
        (t, p): o for (t, p), o in snapshot.latest.items() if (cluster_id, t, p) not in carried
    }
    starts = resolve_positions(lister, cluster_id, cluster, fresh, rule, first)
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
            what = went_back(offset, latest, recorded.get(key[:2]), listed.get(key[:2]))
            if what is not None:
                losses.append(Loss(key, what, offset, latest))
            offsets[key] = latest
    truncated = {loss.key: loss.latest for loss in losses if loss.what.startswith(TRUNCATED)}
    back = [
        (k[1], k[2])
        for k in (loss.key for loss in losses if loss.latest is not None)
        if k not in truncated
    ]
    admin = lister.admin(cluster_id, cluster)
    earliest = admin.list_offsets(back, PositionKind.EARLIEST) if back else {}
    for (topic, partition), offset in starts.items():
        key = (cluster_id, topic, partition)
        offsets[key] = offset
        result.entered[key] = offset
    result.offsets.update(offsets)
    result.latest.update({(cluster_id, t, p): o for (t, p), o in snapshot.latest.items()})
    result.losses.extend(losses)
    result.rewound.update({(cluster_id, t, p): o for (t, p), o in earliest.items()})
    result.rewound.update({k: o for k, o in truncated.items() if o is not None})
    result.absent[cluster_id] = topics.absent
    result.topic_ids.update(_ids_of(offsets, {**recorded, **listed}))


def offsets_went_back(
    start: Mapping[PartitionKey, int],
    end: Mapping[PartitionKey, int],
    ids: tuple[TopicIds, TopicIds] = ({}, {}),
) -> list[Loss]:
    """The partitions whose end offset is below their start offset, or whose topic has another
    id at the end (``ids``: of the start and of the end), as losses."""
    losses = []
    for key in sorted(end):
        if key in start:
            pair = (key[0], key[1])
            what = went_back(start[key], end[key], ids[0].get(pair), ids[1].get(pair))
            if what is not None:
                losses.append(Loss(key, what, start[key], end[key]))
    return losses


def report_losses(losses: list[Loss], fail: bool, reported: set[Loss]) -> None:
    """The driver's data-loss decision: fail, or (``fail`` false) log each loss once.

    Parameters
    ----------
    losses:
        What reconciliation or a planned micro-batch found.
    fail:
        ``failOnDataLoss``.
    reported:
        Losses already logged (updated).

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
            "a warning and continue (a recreated topic from its earliest offset, a truncated "
            "log from its new end, anything else from the earliest available offsets)."
        )
    fresh = [loss for loss in losses if loss not in reported]
    reported.update(fresh)
    if fresh:
        _log.warning(
            "Data loss (failOnDataLoss=false: continuing as each says): %s",
            "; ".join(loss.describe() for loss in fresh),
        )
