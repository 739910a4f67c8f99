"""The client side of a test cluster: short-lived clients, topics, watermarks and readiness."""

from __future__ import annotations

import contextlib
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    NewTopic,
    OffsetSpec,
)

from pyspark_dynamic_kafka.testing.errors import (
    ConfigValue,
    KafkaTestingError,
    ProduceError,
    seconds_left,
    wait_for,
)
from pyspark_dynamic_kafka.testing.readiness import Readiness
from pyspark_dynamic_kafka.testing.tcp import accepts_connections
from pyspark_dynamic_kafka.testing.topic_requests import change_topic

__all__ = ["KafkaClients"]

_log = logging.getLogger(__name__)

# librdkafka settings of the helpers' short-lived clients.
_CLIENT_DEFAULTS: dict[str, ConfigValue] = {
    "socket.connection.setup.timeout.ms": 5000,
}

#: Seconds one high-watermark or metadata request may take before it is asked again by a new
#: client: a request to a broker that was just killed can wait out its whole timeout, while a
#: new client's metadata names the live brokers and the new leaders.
_ATTEMPT_SECONDS = 5.0


class KafkaClients(ABC):
    """Admin and consumer access to a cluster whose address a subclass provides.

    Every helper creates a short-lived client and closes it before returning, so no connection
    made by a helper outlives the call (see :func:`count_client_connections`).

    Parameters
    ----------
    name:
        The cluster's name, as tests and metadata refer to it.
    client_config:
        Extra librdkafka properties for every client the helpers create (security settings of an
        external cluster, for example).
    """

    #: Replicas of a topic created without ``replication_factor`` (-1: the broker's default).
    default_replication_factor: int = -1

    def __init__(self, name: str, client_config: Mapping[str, ConfigValue] | None = None) -> None:
        if not name:
            raise ValueError("a cluster needs a non-empty name")
        self.name = name
        self.client_config: dict[str, ConfigValue] = dict(client_config or {})

    @property
    @abstractmethod
    def bootstrap_servers(self) -> str:
        """``host:port[,host:port...]`` for a client's ``bootstrap.servers``."""

    def client_properties(self, **extra: ConfigValue) -> dict[str, ConfigValue]:
        """Properties for a client of this cluster: bootstrap servers, ``client_config``, ``extra``.

        ``extra``: properties to add (a dict with ``**`` for dotted keys). A new dict, ready for
        ``confluent_kafka.Consumer(...)`` and friends.
        """
        return {
            "bootstrap.servers": self.bootstrap_servers,
            **_CLIENT_DEFAULTS,
            **self.client_config,
            **extra,
        }

    def connection_properties(self) -> dict[str, str]:
        """``bootstrap.servers`` and ``client_config`` (a listener's security settings, say): what a
        metadata file's cluster entry or a task's client properties carry to reach the cluster."""
        config = {key: str(value) for key, value in self.client_config.items()}
        return {"bootstrap.servers": self.bootstrap_servers, **config}

    @contextlib.contextmanager
    def _admin(self, server: str | None = None) -> Iterator[Any]:
        """A new admin client (of broker ``server`` alone, if given)."""
        config: dict[str, Any] = {**self.client_properties(), "logger": _log}
        if server is not None:
            config["bootstrap.servers"] = server
        admin = AdminClient(config)
        try:
            yield admin
        finally:
            # AdminClient has no close(): dropping the last reference destroys the handle and
            # closes its sockets synchronously.
            del admin

    @contextlib.contextmanager
    def _consumer(self) -> Iterator[Any]:
        consumer = Consumer(
            {
                **self.client_properties(),
                "group.id": "pyspark-dynamic-kafka-testing",
                "enable.auto.commit": False,
                "logger": _log,
            }
        )
        try:
            yield consumer
        finally:
            consumer.close()

    # -- topics ----------------------------------------------------------------------------------

    def topics(self, timeout: float = 10.0) -> dict[str, int]:
        """The cluster's topics and their partition counts.

        Parameters
        ----------
        timeout:
            Seconds to wait for the metadata.

        Returns
        -------
        dict
            ``{topic: number of partitions}``, without internal topics (``__...``).

        Raises
        ------
        KafkaTestingError
            If no broker answered within ``timeout``.
        """
        metadata = self._metadata(time.monotonic() + timeout)
        return {
            name: len(topic.partitions)
            for name, topic in metadata.topics.items()
            if topic.error is None and not name.startswith("__")
        }

    def _metadata(self, deadline: float) -> Any:
        """A metadata answer, asked again by a new client after an attempt that timed out (as
        one sent to a broker killed meanwhile does) until ``deadline``; each attempt may take
        twice as long as the one before (a loaded machine's secure handshakes are slow)."""
        answers: list[Any] = []
        attempts = [_ATTEMPT_SECONDS]

        def answered() -> bool:
            attempts.append(attempts[-1] * 2)
            answers.append(self._one_metadata_answer(min(seconds_left(deadline), attempts[-2])))
            return True

        wait_for(answered, deadline, f"a metadata answer from cluster {self.name!r}")
        return answers[-1]

    def partition_count(self, topic: str, timeout: float = 10.0) -> int:
        """The number of partitions of an existing topic.

        Raises
        ------
        ProduceError
            If the topic does not exist.
        """
        count = self.topics(timeout=timeout).get(topic)
        if count is None:
            raise ProduceError(
                f"topic {topic!r} does not exist on cluster {self.name!r}; "
                "create it first with create_topic()"
            )
        return count

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        timeout: float = 30.0,
        *,
        replication_factor: int | None = None,
        config: Mapping[str, str] | None = None,
    ) -> None:
        """Create a topic and wait until metadata shows it with all its partitions.

        Parameters
        ----------
        name:
            The topic.
        partitions:
            Its number of partitions.
        timeout:
            Seconds to wait for creation and visibility.
        replication_factor:
            Replicas per partition; ``None`` means :attr:`default_replication_factor`.
        config:
            Topic configuration (``{"cleanup.policy": "compact"}``, ...).

        Raises
        ------
        KafkaTestingError
            If the broker refuses the topic (it exists already, ...) or it does not show up in
            time.
        """
        if partitions < 1:
            raise ValueError(f"partitions must be at least 1, got {partitions}")
        replicas = (
            self.default_replication_factor if replication_factor is None else replication_factor
        )
        new_topic = NewTopic(
            name, num_partitions=partitions, replication_factor=replicas, config=dict(config or {})
        )
        deadline = time.monotonic() + timeout
        self._change_topic("create", name, lambda admin: admin.create_topics, new_topic, deadline)
        self._created_topic(name)
        wait_for(
            lambda: self._led(name, partitions, seconds_left(deadline)),
            deadline,
            f"topic {name!r} with {partitions} partition(s), each with a leader, to appear on "
            f"every broker of cluster {self.name!r}",
        )
        _log.debug("cluster %s: created topic %s (%d partitions)", self.name, name, partitions)

    def delete_topic(self, name: str, timeout: float = 30.0) -> None:
        """Delete a topic and wait until metadata no longer shows it.

        Parameters
        ----------
        name:
            The topic.
        timeout:
            Seconds to wait for deletion.

        Raises
        ------
        KafkaTestingError
            If the broker refuses (the topic does not exist, ...) or it does not go away in time.
        """
        deadline = time.monotonic() + timeout
        self._change_topic("delete", name, lambda admin: admin.delete_topics, name, deadline)
        wait_for(
            lambda: name not in self.topics(timeout=seconds_left(deadline)),
            deadline,
            f"topic {name!r} to disappear from cluster {self.name!r}",
        )

    def _change_topic(
        self, verb: str, name: str, method: Callable[[Any], Any], item: Any, deadline: float
    ) -> None:
        def request(admin: Any, seconds: float) -> dict[str, Any]:
            timeouts = {"operation_timeout": seconds, "request_timeout": seconds}
            return dict(method(admin)([item], **timeouts))

        change_topic(self._admin, verb, name, request, deadline, self.name)

    def _led(self, name: str, partitions: int, timeout: float) -> bool:
        """Whether every broker taking connections shows topic ``name`` with ``partitions``
        partitions, all led: each KRaft broker replays the metadata log in its own time, and the
        caller's next client may ask any of them (a new client asks its bootstrap broker)."""
        servers = [server.strip() for server in self.bootstrap_servers.split(",")]
        for server in [s for s in servers if accepts_connections(s)] or servers:
            answer = self._one_metadata_answer(min(timeout, _ATTEMPT_SECONDS), server)
            topic = answer.topics.get(name)
            led = [p for p in getattr(topic, "partitions", {}).values() if p.leader >= 0]
            if topic is None or topic.error is not None or len(led) != partitions:
                return False
        return True

    def _created_topic(self, name: str) -> None:
        """Called once the broker accepted a new topic (a subclass may remember it)."""
        _log.debug("cluster %s: the broker accepted topic %s", self.name, name)

    # -- offsets ---------------------------------------------------------------------------------

    def watermarks(self, topic: str, timeout: float = 10.0) -> dict[int, tuple[int, int]]:
        """Low and high watermark of every partition of a topic.

        Parameters
        ----------
        topic:
            An existing topic.
        timeout:
            Seconds to wait for each partition's answer.

        Returns
        -------
        dict
            ``{partition: (low, high)}``.
        """
        partitions = self.partition_count(topic, timeout)
        result: dict[int, tuple[int, int]] = {}
        with self._consumer() as consumer:
            for p in range(partitions):
                low, high = consumer.get_watermark_offsets(
                    TopicPartition(topic, p), timeout=timeout
                )
                result[p] = (int(low), int(high))
        return result

    def offset_for_timestamp(
        self, topic: str, partition: int, timestamp_ms: int, timeout: float = 10.0
    ) -> int:
        """The broker's answer to a ListOffsets by timestamp: the first offset whose record
        timestamp is at or after ``timestamp_ms``, -1 when there is none."""
        request = {TopicPartition(topic, partition): OffsetSpec.for_timestamp(timestamp_ms)}
        with self._admin() as admin:
            futures = admin.list_offsets(request, request_timeout=timeout)
            [(_, future)] = futures.items()
            return int(future.result(timeout=timeout).offset)

    def _wait_visible(self, topic: str, expected: Mapping[int, int], deadline: float) -> None:
        """Wait until each partition's high watermark reaches ``expected[partition]``."""
        if not expected:
            return
        seen: dict[int, int] = {}

        def visible() -> bool:
            with self._consumer() as consumer:
                for p in expected:
                    _, high = consumer.get_watermark_offsets(
                        TopicPartition(topic, p),
                        timeout=min(max(seconds_left(deadline), 1.0), _ATTEMPT_SECONDS),
                    )
                    seen[p] = high
            return all(seen[p] >= end for p, end in expected.items())

        try:
            wait_for(visible, deadline, "high watermarks")
        except KafkaTestingError as exc:
            raise ProduceError(
                f"cluster {self.name!r}, topic {topic!r}: the high watermarks {seen} do not "
                f"cover every produced record {dict(expected)} (on Tansu, records in "
                "multi-record batches stay hidden until a later batch lands)"
            ) from exc

    # -- readiness -------------------------------------------------------------------------------

    def wait_ready(
        self,
        deadline: float,
        *,
        brokers: int | Collection[int] = 1,
        cluster_id: str | None = None,
        servers: Sequence[str] | None = None,
        problem: Callable[[], str | None] = lambda: None,
        pending: Callable[[], str | None] = lambda: None,
    ) -> None:
        """Wait until the servers accept connections and metadata lists the brokers.

        ``pending`` comes first (a broker kind's own sign of life), then ports (cheap, and keeps
        librdkafka from logging refused connections), then a metadata request, which also
        proves that this is the expected cluster.

        Parameters
        ----------
        deadline:
            ``time.monotonic()`` value after which waiting fails.
        brokers:
            How many brokers the metadata must list, or the node ids it must list.
        cluster_id:
            The cluster id the metadata must show, if any.
        servers:
            The ``host:port`` addresses that must accept connections; every bootstrap server
            by default.
        problem:
            Says why the cluster can no longer become ready (a broker process exited), or
            ``None``; asked at every poll.
        pending:
            Says what must happen before ports and metadata are worth asking (a broker has not
            logged its start yet), or ``None``; asked at every poll until it answers ``None``.

        Raises
        ------
        ClusterStartError
            With :meth:`_start_failure`'s message, at the deadline or as soon as ``problem``
            answers.
        """
        addresses = servers if servers is not None else self.bootstrap_servers.split(",")
        wanted = Readiness(brokers, cluster_id, [server.strip() for server in addresses])
        wanted.wait(self._one_metadata_answer, deadline, problem, pending, self._start_failure)

    def _one_metadata_answer(self, timeout: float, server: str | None = None) -> Any:
        with self._admin(server) as admin:
            return admin.list_topics(timeout=timeout)

    def _start_failure(self, what: str) -> str:
        """The message of a :class:`ClusterStartError` (subclasses add logs)."""
        return f"cluster {self.name!r} ({self.bootstrap_servers}) did not become ready: {what}"
