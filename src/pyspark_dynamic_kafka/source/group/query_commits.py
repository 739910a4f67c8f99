"""Driver side of ``commitOffsetsToKafka``: the query's position, committed to its group.

Spark calls ``latestOffset(start)`` at every trigger with ``start`` the end offset of the last
micro-batch it committed (the initial offset before the first one), also when no new data
arrived; :class:`GroupCommits` hands that position to an
:class:`~pyspark_dynamic_kafka.source.group.committer.OffsetCommitter`, which commits it to
``kafka.group.id`` on every cluster in the background. So a micro-batch's end offsets reach
Kafka at the next trigger after Spark committed it (also the last one's, which Spark's own
``commit`` call never reports), a failed commit is retried at the next trigger, and a cluster
removed from the metadata still gets the offsets of its last micro-batch.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.offset_spec import PartitionKey
from pyspark_dynamic_kafka.source.config.parsed import SourceOptions
from pyspark_dynamic_kafka.source.driver.discovery import Subscription
from pyspark_dynamic_kafka.source.group.committer import AdminSource, OffsetCommitter

__all__ = ["GroupCommits"]


class GroupCommits:
    """Commits the position of a streaming query to its consumer group on every cluster.

    Parameters
    ----------
    committer:
        Commits to the group: the query's (:meth:`for_query`), or a test's own.
    """

    def __init__(self, committer: OffsetCommitter) -> None:
        self.committer = committer
        self._properties: dict[str, FrozenProperties] = {}

    @classmethod
    def for_query(cls, options: SourceOptions, admins: AdminSource) -> GroupCommits:
        """The commits of a query with the parsed source ``options`` (``kafka.group.id``,
        ``kafkaAdmin.requestTimeoutMs``), through the admin clients ``admins`` (the reader's
        listing clients: one per cluster)."""
        group = options.kafka_properties.get("group.id", "")
        return cls(OffsetCommitter(group, options.admin_timeout_ms, admins=admins))

    def submit(self, position: Mapping[PartitionKey, int], subscription: Subscription) -> None:
        """Commit ``position`` (next offset of every partition) in the background.

        A cluster no longer in ``subscription`` is committed with the properties it had while it
        was; once ``position`` no longer holds it, it is forgotten.
        """
        self._properties.update({c: a.properties for c, a in subscription.items()})
        by_cluster: dict[str, dict[tuple[str, int], int]] = {}
        for (cluster, topic, partition), offset in position.items():
            by_cluster.setdefault(cluster, {})[(topic, partition)] = offset
        gone = {c for c in self._properties if c not in by_cluster and c not in subscription}
        for cluster in gone:
            del self._properties[cluster]
        self.committer.forget(gone)
        self.committer.submit(by_cluster, self._properties)
