"""Driver side: list the partitions and latest offsets of each assigned cluster.

One :class:`~pyspark_dynamic_kafka.kafka.admin.ClusterAdmin` per cluster, created lazily and
closed when the cluster leaves the metadata. Never pickled: executors get none of this.

A stream tolerates a cluster that cannot be listed (its offsets are kept, the others are read),
but not forever: :meth:`OffsetLister.attempt` times how long each cluster has failed and gives
up, with :class:`~pyspark_dynamic_kafka.errors.ClusterUnreachableError`, after
``unreachableClusterTimeoutMs``.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass

from pyspark_dynamic_kafka.errors import ClusterUnreachableError, KafkaClientError
from pyspark_dynamic_kafka.kafka.admin import ClusterAdmin, TopicListing
from pyspark_dynamic_kafka.offset_spec import PositionKind
from pyspark_dynamic_kafka.source.config.parsed import SourceOptions
from pyspark_dynamic_kafka.source.driver.discovery import ClusterSubscription

__all__ = ["AdminFactory", "ClusterSnapshot", "OffsetLister", "TopicPartitionKey", "read_committed"]

_log = logging.getLogger(__name__)

TopicPartitionKey = tuple[str, int]
#: Creates the admin client of (cluster id, client properties).
AdminFactory = Callable[[str, Mapping[str, str]], ClusterAdmin]


def read_committed(properties: Mapping[str, str]) -> bool:
    """Whether the cluster's clients read with ``isolation.level=read_committed``."""
    return properties.get("isolation.level", "").strip().lower() == "read_committed"


@dataclass(frozen=True)
class ClusterSnapshot:
    """One cluster's assigned topics and the latest offset of each of their partitions.

    Attributes
    ----------
    topics:
        Which assigned topics exist, are absent or could not be listed.
    latest:
        Latest offset (the last stable offset under read_committed) of every partition of the
        existing topics.
    """

    topics: TopicListing
    latest: Mapping[TopicPartitionKey, int]


class OffsetLister:
    """Lists clusters, with one admin client per cluster.

    Positions are resolved to offsets with these clients by
    :func:`~pyspark_dynamic_kafka.source.driver.start_policy.resolve_positions`.

    Parameters
    ----------
    options:
        Parsed source options (timeouts, retries, ``unreachableClusterTimeoutMs``).
    clock:
        Monotonic clock in seconds (tests may pass their own).
    admins:
        Creates a cluster's admin client (default: a
        :class:`~pyspark_dynamic_kafka.kafka.admin.ClusterAdmin` with the options' timeouts and
        retries; tests pass their own).
    """

    def __init__(
        self,
        options: SourceOptions,
        clock: Callable[[], float] = time.monotonic,
        admins: AdminFactory | None = None,
    ) -> None:
        self._options = options
        self._clock = clock
        self._create = admins or self._cluster_admin
        self._admins: dict[str, ClusterAdmin] = {}
        self._properties: dict[str, Mapping[str, str]] = {}
        self._failing_since: dict[str, float] = {}

    def admin(self, cluster_id: str, cluster: ClusterSubscription) -> ClusterAdmin:
        """The cluster's admin client (a new one when its properties changed)."""
        return self.admin_with(cluster_id, cluster.properties)

    def admin_with(self, cluster_id: str, properties: Mapping[str, str]) -> ClusterAdmin:
        """The admin client of a cluster with ``properties`` (shared with the group commits of
        ``commitOffsetsToKafka``)."""
        admin = self._admins.get(cluster_id)
        if admin is None or self._properties[cluster_id] != properties:
            admin = self._create(cluster_id, properties)
            self._admins[cluster_id] = admin
            self._properties[cluster_id] = properties
        return admin

    def _cluster_admin(self, cluster_id: str, properties: Mapping[str, str]) -> ClusterAdmin:
        options = self._options
        return ClusterAdmin(
            cluster_id,
            properties,
            options.admin_timeout_ms,
            options.fetch_retries,
            options.fetch_retry_interval_ms,
            query_wide=options.kafka_properties,
        )

    def retire_except(self, live: Collection[str]) -> None:
        """Close the clients of clusters no longer in the metadata."""
        for cluster_id in [c for c in self._admins if c not in live]:
            _log.info("Cluster %r left the metadata: closing its admin client.", cluster_id)
            self._admins.pop(cluster_id).close()
            del self._properties[cluster_id]
        for cluster_id in [c for c in self._failing_since if c not in live]:
            del self._failing_since[cluster_id]  # a cluster removed is no longer waited for

    @contextlib.contextmanager
    def attempt(self, cluster_id: str) -> Iterator[None]:
        """Time one listing of a cluster: a success ends its outage, a failure extends it.

        A failure in which the cluster answered (:attr:`KafkaClientError.answered`: a partition
        whose leader is being elected) is no outage: the cluster is reachable, its offsets are
        kept and listed again at the next micro-batch, as long as it takes.

        Raises
        ------
        ClusterUnreachableError
            Instead of the listing's :class:`KafkaClientError`, when the cluster has failed every
            listing since longer than ``unreachableClusterTimeoutMs`` (counted from the start
            of the first failed one; ``-1`` never gives up).
        """
        began = self._clock()
        try:
            yield
        except KafkaClientError as exc:
            if exc.answered:  # reachable: some partitions wait for a leader, not an outage
                self._failing_since.pop(cluster_id, None)
                raise
            since = self._failing_since.setdefault(cluster_id, began)
            elapsed_ms = (self._clock() - since) * 1000.0
            limit = self._options.unreachable_cluster_timeout_ms
            if 0 <= limit < elapsed_ms and exc.retryable:
                raise ClusterUnreachableError(
                    f"Cluster '{cluster_id}' could not be listed for {elapsed_ms / 1000.0:.1f} s, "
                    f"longer than unreachableClusterTimeoutMs={limit} (its offsets were kept and "
                    f"the other clusters read meanwhile). Last error: {exc} Bring the cluster back "
                    "and restart the query from its checkpoint (it resumes exactly where it "
                    "stopped), or remove the cluster from the metadata to go on without it."
                ) from None
            raise
        self._failing_since.pop(cluster_id, None)

    def outage(self, cluster_id: str) -> str:
        """How long the cluster has failed its listings, for messages."""
        since = self._failing_since.get(cluster_id, self._clock())
        limit = self._options.unreachable_cluster_timeout_ms
        return f"failing for {self._clock() - since:.1f} s, unreachableClusterTimeoutMs={limit}"

    def close(self) -> None:
        """Close every admin client."""
        for admin in self._admins.values():
            admin.close()
        self._admins.clear()
        self._properties.clear()

    def snapshot(self, cluster_id: str, cluster: ClusterSubscription) -> ClusterSnapshot:
        """List the cluster's assigned topics and their latest offsets.

        Raises
        ------
        KafkaClientError
            When the cluster cannot be listed (after the configured retries).
        """
        admin = self.admin(cluster_id, cluster)
        topics = admin.list_topics(cluster.topics)
        pairs = [(t, p) for t, ps in topics.partitions.items() for p in ps]
        latest = admin.list_offsets(pairs, PositionKind.LATEST, read_committed(cluster.properties))
        return ClusterSnapshot(topics, latest)
