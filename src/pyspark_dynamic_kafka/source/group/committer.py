"""Committing a consumer group's offsets to many clusters, in the background.

:class:`OffsetCommitter` is the one way offsets reach Kafka: ``submit`` hands it the offsets to
commit per cluster and returns at once; each cluster gets its own background commit, at most one
in flight per cluster, so a slow or unreachable cluster delays nothing but its own commits. A
commit that fails is logged (structured event ``offset_commit_failure``) and the cluster's next
``submit`` tries again with the offsets it then gets; offsets submitted while a commit is in
flight wait for it, and only the newest wait.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping

from pyspark_dynamic_kafka.errors import KafkaClientError
from pyspark_dynamic_kafka.events import log_event
from pyspark_dynamic_kafka.kafka.admin import ClusterAdmin
from pyspark_dynamic_kafka.source.group.admin_offsets import commit_group_offsets

__all__ = ["AdminSource", "CommitFunction", "OffsetCommitter", "TopicOffsets"]

_log = logging.getLogger(__name__)

#: Next offset to read of each (topic, partition) of one cluster.
TopicOffsets = Mapping[tuple[str, int], int]
#: Commits (admin of the cluster, group, offsets); raises KafkaClientError on failure.
CommitFunction = Callable[[ClusterAdmin, str, TopicOffsets], None]
#: The admin client of (cluster id, client properties).
AdminSource = Callable[[str, Mapping[str, str]], ClusterAdmin]


class OffsetCommitter:
    """Commits offsets of one consumer group to every cluster it is given, in parallel.

    Parameters
    ----------
    group:
        The consumer group; a cluster whose properties set ``group.id`` uses that one.
    timeout_ms:
        Timeout of one commit request.
    commit:
        Sends one commit (tests may pass their own; default
        :func:`~pyspark_dynamic_kafka.source.group.admin_offsets.commit_group_offsets`).
    admins:
        Where a cluster's admin client comes from, e.g. the one the driver lists the cluster
        with (default: one of its own per cluster).
    """

    def __init__(
        self,
        group: str,
        timeout_ms: int,
        commit: CommitFunction = commit_group_offsets,
        admins: AdminSource | None = None,
    ) -> None:
        self._group = group
        self._timeout_ms = timeout_ms
        self._commit = commit
        self._admin_source = admins or self._own_admin
        self._lock = threading.Condition()
        self._admins: dict[str, ClusterAdmin] = {}
        self._committed: dict[str, dict[tuple[str, int], int]] = {}
        self._pending: dict[str, dict[tuple[str, int], int]] = {}
        self._running: set[str] = set()
        self._failures: dict[str, int] = {}

    def group_of(self, properties: Mapping[str, str]) -> str:
        """The group committed to on a cluster with these properties."""
        return properties.get("group.id") or self._group

    def submit(
        self,
        offsets: Mapping[str, TopicOffsets],
        properties: Mapping[str, Mapping[str, str]],
    ) -> None:
        """Commit ``offsets`` (cluster -> offsets) in the background; never waits.

        Clusters absent from ``properties`` are skipped; offsets equal to the cluster's last
        successful commit are not sent again.
        """
        with self._lock:
            for cluster, wanted in offsets.items():
                props = properties.get(cluster)
                if props is None or not wanted:
                    continue
                wanted = dict(wanted)
                self._admins[cluster] = self._admin_source(cluster, props)
                if cluster in self._running:
                    self._pending[cluster] = wanted
                elif wanted != self._committed.get(cluster):
                    self._running.add(cluster)
                    thread = threading.Thread(
                        target=self._run,
                        args=(cluster, wanted),
                        name=f"dynamic-kafka-commit-{cluster}",
                        daemon=True,
                    )
                    thread.start()

    def _own_admin(self, cluster: str, properties: Mapping[str, str]) -> ClusterAdmin:
        admin = self._admins.get(cluster)
        if admin is None or admin.properties != properties:
            admin = ClusterAdmin(cluster, properties, self._timeout_ms)
        return admin

    def _run(self, cluster: str, offsets: dict[tuple[str, int], int]) -> None:
        while True:
            with self._lock:
                admin = self._admins[cluster]
            group = self.group_of(admin.properties)
            try:
                self._commit(admin, group, offsets)
            except Exception as exc:  # KafkaClientError, or a commit function's own failure
                admin.close()  # the next attempt starts with a new client and new connections
                with self._lock:
                    self._failures[cluster] = self._failures.get(cluster, 0) + 1
                    failures = self._failures[cluster]
                log_event(
                    _log,
                    logging.WARNING,
                    "offset_commit_failure",
                    cluster=cluster,
                    group=group,
                    partitions=len(offsets),
                    consecutiveFailures=failures,
                    message=f"{exc if isinstance(exc, KafkaClientError) else repr(exc)} The "
                    "commit is retried with the next micro-batch; the checkpoint stays the source "
                    "of truth.",
                )
            else:
                with self._lock:
                    self._committed[cluster] = offsets
                    self._failures.pop(cluster, None)
                _log.debug("Committed %d offsets of group %r on %r", len(offsets), group, cluster)
            with self._lock:
                following = self._pending.pop(cluster, None)
                if following is None or following == self._committed.get(cluster):
                    self._running.discard(cluster)
                    self._lock.notify_all()
                    return
                offsets = following

    def committed(self) -> dict[str, dict[tuple[str, int], int]]:
        """The offsets last committed successfully, per cluster."""
        with self._lock:
            return {cluster: dict(offsets) for cluster, offsets in self._committed.items()}

    def failures(self) -> dict[str, int]:
        """Consecutive failed commits per cluster (clusters whose last commit failed)."""
        with self._lock:
            return dict(self._failures)

    def flush(self, timeout_s: float) -> bool:
        """Wait until no commit is in flight; whether that happened within ``timeout_s``."""
        with self._lock:
            return self._lock.wait_for(lambda: not self._running, timeout_s)

    def forget(self, clusters: set[str]) -> None:
        """Drop what is kept for ``clusters`` (they are no longer read); commits in flight end."""
        with self._lock:
            for cluster in clusters - self._running:
                self._admins.pop(cluster, None)
                self._committed.pop(cluster, None)
                self._failures.pop(cluster, None)
