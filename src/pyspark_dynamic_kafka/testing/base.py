"""What tests need from any cluster: its address plus topic, watermark and produce helpers."""

from __future__ import annotations

import contextlib
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import TracebackType
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from pyspark_dynamic_kafka.testing.common import (
    ConfigValue,
    KafkaTestingError,
    ProduceError,
    RecordLike,
    seconds_left,
)
from pyspark_dynamic_kafka.testing.producing import (
    produce_in_bulk,
    produce_one_per_batch,
)

__all__ = ["BaseKafkaCluster", "stop_all"]

_log = logging.getLogger(__name__)

# librdkafka settings of the helpers' short-lived clients.
_CLIENT_DEFAULTS: dict[str, ConfigValue] = {
    "socket.connection.setup.timeout.ms": 5000,
}


class BaseKafkaCluster(ABC):
    """What tests need from a cluster: its address plus topic and produce helpers.

    Subclasses provide :attr:`bootstrap_servers`, :attr:`port`, :meth:`start` and :meth:`stop`.
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

    def __init__(self, name: str, client_config: Mapping[str, ConfigValue] | None = None) -> None:
        if not name:
            raise ValueError("a cluster needs a non-empty name")
        self.name = name
        self.client_config: dict[str, ConfigValue] = dict(client_config or {})

    # -- to be provided by subclasses ------------------------------------------------------------

    @property
    @abstractmethod
    def bootstrap_servers(self) -> str:
        """``host:port`` for a client's ``bootstrap.servers``."""

    @property
    @abstractmethod
    def port(self) -> int:
        """The TCP port of the (first) broker."""

    @abstractmethod
    def start(self) -> BaseKafkaCluster:
        """Make the cluster available; returns the cluster."""

    @abstractmethod
    def stop(self) -> None:
        """Release the cluster; safe to call more than once."""

    def __enter__(self) -> BaseKafkaCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        try:
            address = self.bootstrap_servers
        except KafkaTestingError:
            address = "not started"
        return f"{type(self).__name__}(name={self.name!r}, bootstrap_servers={address!r})"

    # -- clients ---------------------------------------------------------------------------------

    def client_properties(self, **extra: ConfigValue) -> dict[str, ConfigValue]:
        """Properties for a client of this cluster: bootstrap servers, ``client_config``, ``extra``.

        Parameters
        ----------
        **extra:
            Properties to add; use a dict with ``**`` for dotted keys.

        Returns
        -------
        dict
            A new dict, ready for ``confluent_kafka.Consumer(...)`` and friends.
        """
        return {
            "bootstrap.servers": self.bootstrap_servers,
            **_CLIENT_DEFAULTS,
            **self.client_config,
            **extra,
        }

    @contextlib.contextmanager
    def _admin(self) -> Iterator[Any]:
        config: dict[str, Any] = {**self.client_properties(), "logger": _log}
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
        """
        with self._admin() as admin:
            metadata = admin.list_topics(timeout=timeout)
        return {
            name: len(topic.partitions)
            for name, topic in metadata.topics.items()
            if topic.error is None and not name.startswith("__")
        }

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
            Replicas per partition; ``None`` means 1 on a local cluster and the broker's default
            on an external one.
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
            self._default_replication_factor()
            if replication_factor is None
            else (replication_factor)
        )
        deadline = time.monotonic() + timeout
        new_topic = NewTopic(
            name,
            num_partitions=partitions,
            replication_factor=replicas,
            config=dict(config or {}),
        )
        with self._admin() as admin:
            futures = admin.create_topics([new_topic], operation_timeout=timeout)
            try:
                futures[name].result(timeout=timeout)
            except KafkaException as exc:
                raise KafkaTestingError(
                    f"cluster {self.name!r} could not create topic {name!r}: {exc}"
                ) from exc
        self._wait_for(
            lambda: self.topics(timeout=seconds_left(deadline)).get(name) == partitions,
            deadline,
            f"topic {name!r} with {partitions} partition(s) to appear on cluster {self.name!r}",
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
        with self._admin() as admin:
            futures = admin.delete_topics([name], operation_timeout=timeout)
            try:
                futures[name].result(timeout=timeout)
            except KafkaException as exc:
                raise KafkaTestingError(
                    f"cluster {self.name!r} could not delete topic {name!r}: {exc}"
                ) from exc
        self._wait_for(
            lambda: name not in self.topics(timeout=seconds_left(deadline)),
            deadline,
            f"topic {name!r} to disappear from cluster {self.name!r}",
        )

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
        partitions = self._partition_count(topic, timeout)
        result: dict[int, tuple[int, int]] = {}
        with self._consumer() as consumer:
            for p in range(partitions):
                low, high = consumer.get_watermark_offsets(
                    TopicPartition(topic, p), timeout=timeout
                )
                result[p] = (int(low), int(high))
        return result

    # -- producing -------------------------------------------------------------------------------

    def produce(
        self,
        topic: str,
        records: Iterable[RecordLike],
        partition: int | None = None,
        *,
        config: Mapping[str, ConfigValue] | None = None,
        timeout: float = 30.0,
    ) -> list[tuple[int, int]]:
        """Produce records one per batch, wait for every acknowledgement, check visibility.

        The producer sends every record in a batch of its own (``batch.num.messages=1``,
        ``linger.ms=0``) and is idempotent. One record per batch is what makes every record
        visible at once on Tansu, whose high watermark only covers the first record of the last
        batch of a partition; on Kafka it is merely slower. About 5,000 records per second:
        use :meth:`produce_bulk` for more than a few thousand records.

        Parameters
        ----------
        topic:
            An existing topic.
        records:
            ``(key, value)`` pairs or mappings with ``key``, ``value``, ``headers`` (a mapping or
            a list of pairs), ``timestamp`` (ms) and ``partition``. Strings are encoded as UTF-8.
        partition:
            Partition of the records that do not name one; ``None`` lets the producer's
            partitioner choose (by key hash, random for null keys).
        config:
            librdkafka producer properties that override the defaults described above.
        timeout:
            Seconds to wait for all acknowledgements and for the high watermarks.

        Returns
        -------
        list of (int, int)
            ``(partition, offset)`` of every record, in input order.

        Raises
        ------
        ProduceError
            If the topic does not exist, a record failed, or the high watermark does not cover
            every record in time.
        """
        return produce_one_per_batch(self, topic, records, partition, config, timeout)

    def produce_bulk(
        self,
        topic: str,
        records: Iterable[RecordLike],
        *,
        config: Mapping[str, ConfigValue] | None = None,
        timeout: float = 600.0,
    ) -> dict[int, int]:
        """Load many records fast, in large batches, and make every one of them visible.

        Records go out in large idempotent batches (``linger.ms=20``, up to 1 MB or 100,000
        records per batch). The last record of each partition is held back and sent as a batch
        of its own once everything else is acknowledged: on Tansu, whose high watermark is the
        base offset of the last batch plus one, that makes the high watermark equal the number
        of records written, without adding any record. The method checks this before returning.
        About 300,000 records of 100 bytes per second into a local Tansu cluster.

        Records that name no partition go to ``crc32(key) % partitions`` when they have a key
        (librdkafka's default partitioner gives the same result) and round-robin otherwise.

        Parameters
        ----------
        topic:
            An existing topic.
        records:
            As for :meth:`produce`; a generator avoids holding all records in memory.
        config:
            librdkafka producer properties that override the defaults above.
        timeout:
            Seconds for the whole load.

        Returns
        -------
        dict
            ``{partition: number of records written}`` for the partitions that got records.

        Raises
        ------
        ProduceError
            If the topic does not exist, a record failed, or the high watermark does not cover
            every record in time.
        """
        return produce_in_bulk(self, topic, records, config, timeout)

    # -- internals -------------------------------------------------------------------------------

    def _default_replication_factor(self) -> int:
        return -1

    def _partition_count(self, topic: str, timeout: float) -> int:
        count = self.topics(timeout=timeout).get(topic)
        if count is None:
            raise ProduceError(
                f"topic {topic!r} does not exist on cluster {self.name!r}; "
                "create it first with create_topic()"
            )
        return count

    def _wait_visible(self, topic: str, expected: Mapping[int, int], deadline: float) -> None:
        """Wait until each partition's high watermark reaches ``expected[partition]``."""
        if not expected:
            return
        seen: dict[int, int] = {}

        def visible() -> bool:
            with self._consumer() as consumer:
                for p in expected:
                    _, high = consumer.get_watermark_offsets(
                        TopicPartition(topic, p), timeout=max(seconds_left(deadline), 1.0)
                    )
                    seen[p] = high
            return all(seen[p] >= end for p, end in expected.items())

        try:
            self._wait_for(visible, deadline, "high watermarks")
        except KafkaTestingError as exc:
            raise ProduceError(
                f"cluster {self.name!r}, topic {topic!r}: the high watermarks {seen} do not "
                f"cover every produced record {dict(expected)}; records in multi-record "
                "batches stay hidden on Tansu until a later batch lands"
            ) from exc

    def _wait_for(self, condition: Callable[[], bool], deadline: float, what: str) -> None:
        last_error: Exception | None = None
        while True:
            try:
                if condition():
                    return
            except KafkaException as exc:
                last_error = exc
            if time.monotonic() >= deadline:
                detail = f" (last error: {last_error})" if last_error else ""
                raise KafkaTestingError(f"timed out waiting for {what}{detail}")
            time.sleep(0.05)


def stop_all(clusters: Iterable[BaseKafkaCluster]) -> None:
    """Stop every cluster, logging (not raising) a failure to stop one."""
    for cluster in clusters:
        try:
            cluster.stop()
        except Exception:
            _log.exception("could not stop cluster %s", cluster.name)
