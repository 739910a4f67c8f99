"""Membership of a consumer group on one cluster, for ``assignment=group``: :class:`GroupMember`.

A member is a confluent-kafka ``Consumer`` subscribed to the query's topics on the cluster. It
never reads a record: every partition the group assigns to it is paused at once, and a background
thread polls it only to keep the membership alive and to run the rebalance callbacks. Which
partitions it owns is what the driver plans micro-batches with.

A partition the group takes away (revokes) is held back until the driver :meth:`~GroupMember.
release`\\ s it: the driver first asks, through :meth:`~GroupMember.commit`, for the end offset of
the last micro-batch that read it to be committed, and the member sends that commit before it hands
the partition over, so the next owner starts exactly there. With the
``cooperative-sticky`` strategy (the default here) only the partitions that move are revoked; the
others are read on without a pause.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from pyspark_dynamic_kafka.errors import KafkaClientError
from pyspark_dynamic_kafka.kafka.config import (
    client_properties,
    properties_fingerprint,
    redact_secrets,
    secrets_key,
)

__all__ = ["GroupMember", "member_config"]

_log = logging.getLogger(__name__)

#: (topic, partition)
TopicPartitionKey = tuple[str, int]

#: Settings a member always has: it commits explicitly and never stores offsets by itself.
_FORCED: Mapping[str, str] = {
    "enable.auto.commit": "false",
    "enable.auto.offset.store": "false",
    "enable.partition.eof": "false",
}
#: What a consumer takes anew for its next authentication (``set_sasl_credentials``).
_CREDENTIALS = ("sasl.username", "sasl.password")
#: Defaults a query's ``kafka.*`` options may override.
_DEFAULTS: Mapping[str, str] = {
    "partition.assignment.strategy": "cooperative-sticky",
    "fetch.max.bytes": "1048576",
}


def member_config(properties: Mapping[str, str], cluster_id: str | None = None) -> dict[str, str]:
    """The consumer configuration of a group member for a cluster's merged properties (secret
    references resolved)."""
    return {**_DEFAULTS, **client_properties(properties, cluster_id), **_FORCED}


class GroupMember:
    """One member of ``group.id`` (from ``properties``) on one cluster, kept alive in the
    background.

    Parameters
    ----------
    cluster_id:
        The cluster's id, for messages.
    properties:
        The cluster's merged client properties (``group.id`` required).
    topics:
        Topics to subscribe to.
    revoke_timeout_s:
        Longest a revoked partition is held back waiting for :meth:`release`.
    factory:
        Builds the consumer from its configuration (default ``confluent_kafka.Consumer``).
    """

    def __init__(
        self,
        cluster_id: str,
        properties: Mapping[str, str],
        topics: Collection[str],
        revoke_timeout_s: float = 120.0,
        factory: Callable[[dict[str, str]], Any] = Consumer,
    ) -> None:
        self.cluster_id = cluster_id
        self.properties = dict(properties)
        self.group = properties["group.id"]
        self.topics = frozenset(topics)
        self._revoke_timeout_s = revoke_timeout_s
        self._lock = threading.Condition()
        self._owned: set[TopicPartitionKey] = set()
        self._revoking: set[TopicPartitionKey] = set()
        self._released: set[TopicPartitionKey] = set()
        self._assigned = False
        self._closing = False
        self._requests: list[_Commit] = []
        self._credentials: tuple[str, str] | None = None  # for the poll thread to hand over
        self._secrets = secrets_key(self.properties, cluster_id)
        config = member_config(properties, cluster_id)
        self._settings = _settings(config)
        self._incremental = "cooperative" in config["partition.assignment.strategy"]
        try:
            self._consumer = factory(config)
        except KafkaException as exc:
            raise KafkaClientError(
                f"Cluster '{cluster_id}': could not create the member of group "
                f"'{self.group}': {redact_secrets(str(exc), properties)}. Check the cluster's "
                "client properties and the query's kafka.* options."
            ) from None
        self._consumer.subscribe(
            sorted(self.topics),
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_lost,
        )
        self._thread = threading.Thread(
            target=self._poll, name=f"dynamic-kafka-member-{cluster_id}", daemon=True
        )
        self._thread.start()

    def refresh_secrets(self) -> bool:
        """Resolve the secret references of the member's properties again (a rotated password
        file is read again): SASL credentials that changed are the ones its next
        authentication uses (a new connection, or the broker's re-authentication), without
        leaving the group. Returns ``False`` when another property's reference changed: such a
        member must be replaced.

        Raises
        ------
        ClientPropertyError
            When a reference no longer resolves.
        """
        secrets = secrets_key(self.properties, self.cluster_id)
        if secrets == self._secrets:
            return True
        config = member_config(self.properties, self.cluster_id)
        if _settings(config) != self._settings:
            return False
        with self._lock:  # handed to the consumer on the poll thread (it serializes calls)
            self._credentials = (config.get("sasl.username", ""), config.get("sasl.password", ""))
            self._lock.notify_all()
        self._secrets = secrets
        _log.info(
            "Group member on %r: its secret references changed; its next authentication uses "
            "the SASL credentials they name now",
            self.cluster_id,
        )
        return True

    # ------------------------------------------------------------------ the poll thread
    def _poll(self) -> None:
        while not self._closing:
            self._serve()
            try:
                message = self._consumer.poll(0.1)
            except Exception as exc:  # a closed consumer, or a fatal client error
                if not self._closing:
                    _log.warning("Group member on %r: poll failed: %s", self.cluster_id, exc)
                    time.sleep(0.5)
                continue
            if message is not None and message.error() is not None and not self._closing:
                _log.warning(
                    "Group member on %r (group %r): %s",
                    self.cluster_id,
                    self.group,
                    message.error(),
                )
        self._serve()  # the commits asked before close(), while the member is still in the group

    def _on_assign(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        keys = {(tp.topic, tp.partition) for tp in partitions}
        if self._incremental:
            consumer.incremental_assign(partitions)
        else:  # an eager strategy (range, roundrobin) assigns everything anew
            consumer.assign(partitions)
        if partitions:
            consumer.pause(partitions)  # the member never reads: executors do
        with self._lock:
            self._owned |= keys
            self._assigned = True
            self._lock.notify_all()
        if keys:
            _log.warning(  # a rebalance changes what the query reads: in the driver's log
                "Group %r on %r assigned %s to this query", self.group, self.cluster_id, _show(keys)
            )

    def _on_revoke(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        keys = {(tp.topic, tp.partition) for tp in partitions}
        with self._lock:
            self._revoking |= keys & self._owned
            self._lock.notify_all()
        deadline = time.monotonic() + self._revoke_timeout_s
        while True:  # serving commits meanwhile: the driver commits before it releases
            self._serve()
            with self._lock:
                self._lock.wait_for(
                    lambda: (
                        bool(self._closing or keys & self._owned <= self._released)
                        or bool(self._requests)
                    ),
                    max(deadline - time.monotonic(), 0),
                )
                if self._requests and time.monotonic() < deadline:
                    continue
                done = self._closing or keys & self._owned <= self._released
                if done or time.monotonic() >= deadline:
                    break
        with self._lock:
            if not done:
                _log.warning(
                    "Group %r on %r: giving up %s without their last offsets committed (no "
                    "micro-batch released them within %.0f s); the next owner may read some "
                    "records again.",
                    self.group,
                    self.cluster_id,
                    _show(keys),
                    self._revoke_timeout_s,
                )
            self._owned -= keys
            self._revoking -= keys
            self._released -= keys
        self._unassign(consumer, partitions)
        if keys:
            _log.warning("Group %r on %r: %s handed over", self.group, self.cluster_id, _show(keys))

    def _on_lost(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        keys = {(tp.topic, tp.partition) for tp in partitions}
        with self._lock:
            self._owned -= keys
            self._revoking -= keys
            self._released -= keys
            self._lock.notify_all()
        self._unassign(consumer, partitions)
        _log.warning(
            "Group %r on %r: lost %s (the membership expired); another member reads them now.",
            self.group,
            self.cluster_id,
            _show(keys),
        )

    def _unassign(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        if self._incremental:
            consumer.incremental_unassign(partitions)
        else:
            consumer.unassign()

    # ------------------------------------------------------------------ the driver's side
    def wait_assigned(self, timeout_s: float) -> bool:
        """Wait for the group's first assignment; whether it came within ``timeout_s``."""
        with self._lock:
            return self._lock.wait_for(lambda: self._assigned or self._closing, timeout_s)

    def owned(self) -> frozenset[TopicPartitionKey]:
        """The partitions this member owns and may read on (not being revoked)."""
        with self._lock:
            return frozenset(self._owned - self._revoking)

    def revoking(self) -> frozenset[TopicPartitionKey]:
        """The partitions the group takes away and that wait for :meth:`release`."""
        with self._lock:
            return frozenset(self._revoking - self._released)

    def held(self) -> frozenset[TopicPartitionKey]:
        """Every partition still assigned to this member, revoked ones not handed over included."""
        with self._lock:
            return frozenset(self._owned)

    def release(self, partitions: Collection[TopicPartitionKey]) -> None:
        """Let revoked ``partitions`` go: their offsets are committed."""
        with self._lock:
            self._released |= set(partitions) & self._revoking
            self._lock.notify_all()

    def _serve(self) -> None:
        """Hand the consumer the SASL credentials :meth:`refresh_secrets` read, and send the
        commits the driver asked for, oldest first (on the poll thread: the consumer takes one
        call at a time, and librdkafka's synchronous commit does not return while another thread
        polls it)."""
        with self._lock:
            requests, self._requests = self._requests, []
            credentials, self._credentials = self._credentials, None
        if credentials is not None:
            self._consumer.set_sasl_credentials(*credentials)
        for request in requests:
            try:
                answer = self._consumer.commit(offsets=request.offsets, asynchronous=False)
                failed = [tp for tp in answer or () if tp.error is not None]
                problem = "; ".join(f"{tp.topic}/{tp.partition}: {tp.error}" for tp in failed)
            except KafkaException as exc:
                problem = redact_secrets(str(exc), self.properties) or "failed"
            if problem:
                request.on_failure(
                    f"Cluster '{self.cluster_id}': could not commit the offsets of group "
                    f"'{self.group}': {problem}. Check that the cluster is reachable."
                )

    def commit(
        self, offsets: Mapping[TopicPartitionKey, int], on_failure: Callable[[str], None]
    ) -> None:
        """Have the poll thread commit ``offsets`` (next offset to read) as this member, and
        return at once: a micro-batch never waits for the group's round trip.

        Only partitions the member still holds are committed (another member owns the others).
        Commits are sent in the order asked, and all of them before a revoked partition is
        handed over (:meth:`_on_revoke` serves them first) and before the member leaves
        (:meth:`close`), so the next owner starts where this query's last commit says.
        ``on_failure`` (called on the poll thread) gets the reason of a commit that failed.
        """
        held = self.held()
        wanted = [TopicPartition(t, p, int(o)) for (t, p), o in sorted(offsets.items())]
        wanted = [tp for tp in wanted if (tp.topic, tp.partition) in held]
        if not wanted:
            return
        with self._lock:
            if self._closing:
                on_failure(
                    f"Cluster '{self.cluster_id}': the member of group '{self.group}' is closing"
                )
                return
            self._requests.append(_Commit(wanted, on_failure))
            self._lock.notify_all()

    def close(self) -> None:
        """Leave the group (its partitions move to the other members at once) and close."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
            self._lock.notify_all()
        self._thread.join(timeout=10)
        try:
            self._consumer.close()
        except Exception as exc:  # closing twice, or a client already failed
            _log.debug("Group member on %r: close: %s", self.cluster_id, exc)
        _log.info("Left group %r on %r", self.group, self.cluster_id)


@dataclass(frozen=True)
class _Commit:
    """A commit the driver asked the poll thread for."""

    offsets: list[TopicPartition]
    on_failure: Callable[[str], None]


def _settings(config: Mapping[str, str]) -> str:
    """A digest of a member's resolved configuration but its SASL credentials."""
    return properties_fingerprint({k: v for k, v in config.items() if k not in _CREDENTIALS})


def _show(keys: Collection[TopicPartitionKey]) -> str:
    return ", ".join(f"{t}/{p}" for t, p in sorted(keys)) or "nothing"
