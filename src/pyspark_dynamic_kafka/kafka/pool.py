"""Clients reused across tasks inside one Python worker, closed when idle, retired or at exit.

Spark reuses Python worker processes between tasks, so a module-level pool lets consecutive
micro-batches read with an already-connected consumer (:func:`consumer_pool`) and write with an
already-connected producer (:func:`producer_pool`, the sink's atLeastOnce producers: a new
idempotent producer waits for its producer id, half a second with librdkafka, at every task;
Spark's own sink caches its producers likewise). A daemon thread closes clients idle for longer
than their timeout, so a cluster that left the metadata keeps no connection open even if the
worker never runs another task. The consumer pool holds confluent-kafka consumers and, through a
factory of its own, the compiled core's (:mod:`~pyspark_dynamic_kafka.engines.read_core`):
the factory is part of a client's key, so one kind is never handed out for the other.
A client is handed to one task at a time: it leaves the pool while a task uses it.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaException

from pyspark_dynamic_kafka.errors import KafkaClientError
from pyspark_dynamic_kafka.kafka.config import (
    DEFAULT_GROUP_ID_PREFIX,
    client_properties,
    redact_secrets,
    secrets_key,
)

__all__ = [
    "CONSUMER_DEFAULTS",
    "MAX_IDLE_PER_CLUSTER",
    "ClientPool",
    "ConsumerFactory",
    "confluent_consumer",
    "consumer_config",
    "consumer_pool",
    "producer_pool",
]

_log = logging.getLogger(__name__)

#: Fetch settings tuned for throughput; a cluster's or the query's properties override them.
#: ``isolation.level`` is Kafka's (and Spark's) default, not librdkafka's ``read_committed``: the
#: driver lists offsets with the same level, so a range never waits for an open transaction.
CONSUMER_DEFAULTS: Mapping[str, str] = {
    "isolation.level": "read_uncommitted",
    "fetch.min.bytes": "1",
    "fetch.wait.max.ms": "100",
    "fetch.max.bytes": "52428800",
    "max.partition.fetch.bytes": "4194304",
    "queued.min.messages": "200000",
    "queued.max.messages.kbytes": "131072",
    # librdkafka postpones a partition's next fetch by this much once its prefetch queue is
    # over the two limits above; its default (1000 ms) stalls a task whose ranges are longer
    # than the queue about once per queue's worth of records (benchmarks/prefetch.py).
    "fetch.queue.backoff.ms": "10",
    "socket.receive.buffer.bytes": "1048576",
    # Every record batch's CRC-32C is checked, as the Java consumer under Spark's own source
    # checks it (librdkafka's default is false): damaged bytes fail the task, never read as data.
    "check.crcs": "true",
}
#: Settings the source needs and nobody overrides: it tracks offsets itself.
_FORCED: Mapping[str, str] = {
    "enable.auto.commit": "false",
    "enable.auto.offset.store": "false",
    "enable.partition.eof": "true",
    "auto.offset.reset": "error",
}
#: Idle consumers kept per cluster in one worker. A task reads a cluster with one consumer, so a
#: query needs one; each query has its own group id (hence its own consumers), and consumers of
#: queries that ended would otherwise hold their memory until their idle timeout.
MAX_IDLE_PER_CLUSTER = 2


def consumer_config(properties: Mapping[str, str], cluster_id: str | None = None) -> dict[str, str]:
    """The full consumer configuration for a cluster's merged properties (secret references
    resolved now, :func:`~pyspark_dynamic_kafka.kafka.config.client_properties`).

    Raises
    ------
    ClientPropertyError
        When a secret reference does not resolve (naming ``cluster_id``).
    """
    config = dict(CONSUMER_DEFAULTS)
    config.update(client_properties(properties, cluster_id))
    config.update(_FORCED)
    config.setdefault("group.id", DEFAULT_GROUP_ID_PREFIX)
    return config


#: Opens a consumer for a cluster id and its merged client properties; it raises
#: :class:`~pyspark_dynamic_kafka.errors.KafkaClientError` naming the cluster when it cannot.
ConsumerFactory = Callable[[str, Mapping[str, str]], Any]


def confluent_consumer(cluster_id: str, properties: Mapping[str, str]) -> Any:
    """A confluent-kafka consumer (the Python reader's) for a cluster's merged properties."""
    try:
        return Consumer(consumer_config(properties, cluster_id))
    except KafkaException as exc:
        detail = redact_secrets(str(exc), properties)
        raise KafkaClientError(
            f"Cluster '{cluster_id}': could not create a consumer: {detail}. Check the "
            "cluster's client properties in the metadata and the query's kafka.* options."
        ) from None


@dataclass
class _Idle:
    consumer: Any
    cluster_id: str
    key: tuple[str, Mapping[str, str], ConsumerFactory, str]
    since: float
    timeout_s: float
    generation: int = 0


class ClientPool:
    """Idle clients (consumers, or producers) keyed by (cluster id, client properties, factory,
    what their secret references resolve to, generation).

    A secret a reference points to (a password file) that changed gives a new key: the next task
    builds a consumer with the new secret, and the old one ages out.

    The generation lets the driver retire every pooled consumer of a query: it bumps it when a
    topic was deleted or recreated under the query, which a consumer cannot reliably notice (an
    old consumer reassigned to a recreated topic may misbehave; librdkafka crashed here).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Idle] = []
        self._reaper: threading.Thread | None = None
        self._lent: dict[int, str] = {}  # id(consumer) -> the secrets it was built with

    def acquire(
        self,
        cluster_id: str,
        properties: Mapping[str, str],
        generation: int = 0,
        factory: ConsumerFactory = confluent_consumer,
    ) -> Any:
        """Return an idle consumer for this cluster, properties, factory and generation, or a
        new one from ``factory``; it leaves the pool until :meth:`release`.

        Idle consumers of the same cluster, properties and factory but another generation are
        closed.
        """
        secrets = secrets_key(properties, cluster_id)
        key = (cluster_id, properties, factory, secrets)
        self._close_where(lambda e: e.key == key and e.generation != generation)
        with self._lock:
            for i, entry in enumerate(self._idle):
                if entry.key == key and entry.generation == generation:
                    del self._idle[i]
                    self._lent[id(entry.consumer)] = secrets
                    return entry.consumer
        consumer = factory(cluster_id, properties)
        with self._lock:
            self._lent[id(consumer)] = secrets
        return consumer

    def release(
        self,
        cluster_id: str,
        properties: Mapping[str, str],
        consumer: Any,
        reusable: bool,
        timeout_ms: int,
        generation: int = 0,
        factory: ConsumerFactory = confluent_consumer,
    ) -> None:
        """Give a consumer back (``factory`` is the one it was acquired with); it is closed
        instead when not reusable or no caching is wanted."""
        with self._lock:
            secrets = self._lent.pop(id(consumer), None)
        if not reusable or timeout_ms <= 0:
            _close(consumer)
            return
        entry = _Idle(
            consumer,
            cluster_id,
            (cluster_id, properties, factory, secrets or secrets_key(properties, cluster_id)),
            time.monotonic(),
            timeout_ms / 1000,
            generation,
        )
        with self._lock:
            self._idle.append(entry)
            same_cluster = [e for e in self._idle if e.cluster_id == cluster_id]
            doomed = same_cluster[: max(0, len(same_cluster) - MAX_IDLE_PER_CLUSTER)]
            self._idle = [e for e in self._idle if e not in doomed]
            self._start_reaper()
        for old in doomed:  # the least recently released: another query's, most likely
            _close(old.consumer)

    def retire_clusters_except(self, live: frozenset[str]) -> None:
        """Close idle consumers of clusters that are not in ``live``."""
        self._close_where(lambda e: e.cluster_id not in live)

    def close_all(self) -> None:
        """Close every idle consumer."""
        self._close_where(lambda e: True)

    def idle_count(self) -> int:
        """Number of idle consumers (for tests and diagnostics)."""
        with self._lock:
            return len(self._idle)

    def _close_where(self, predicate: Any) -> None:
        with self._lock:
            doomed = [e for e in self._idle if predicate(e)]
            self._idle = [e for e in self._idle if not predicate(e)]
        for entry in doomed:
            _close(entry.consumer)

    def _start_reaper(self) -> None:
        if self._reaper is None or not self._reaper.is_alive():
            self._reaper = threading.Thread(
                target=self._reap_forever, name="dynamic-kafka-client-reaper", daemon=True
            )
            self._reaper.start()

    def _reap_forever(self) -> None:
        while True:
            time.sleep(0.5)
            self._close_where(_expired)


def _expired(entry: _Idle) -> bool:
    return time.monotonic() - entry.since >= entry.timeout_s


def _close(client: Any) -> None:
    try:
        client.close()
    except Exception as exc:  # an idle client's close: nothing is waiting on it
        _log.debug("Ignoring error while closing an idle client: %s", exc)


_POOL = ClientPool()
_PRODUCERS = ClientPool()
# Close pooled clients when the interpreter exits normally (their connections, their threads).
atexit.register(_POOL.close_all)
atexit.register(_PRODUCERS.close_all)


def consumer_pool() -> ClientPool:
    """The consumer pool of this Python process."""
    return _POOL


def producer_pool() -> ClientPool:
    """The producer pool of this Python process (the sink's atLeastOnce producers)."""
    return _PRODUCERS
