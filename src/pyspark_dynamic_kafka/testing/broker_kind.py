"""A test cluster: its lifecycle, plus producing records whose offsets are exactly known."""

from __future__ import annotations

import contextlib
import logging
import time
from abc import abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from types import TracebackType
from typing import Any

from confluent_kafka import Producer

from pyspark_dynamic_kafka.testing.clients import KafkaClients
from pyspark_dynamic_kafka.testing.errors import ConfigValue, KafkaTestingError, RecordLike
from pyspark_dynamic_kafka.testing.producing import (
    BATCHED,
    BULK,
    close_producer,
    next_offsets,
    send_bulk,
    send_each,
)

__all__ = ["BaseKafkaCluster", "stop_all"]

_log = logging.getLogger(__name__)


class BaseKafkaCluster(KafkaClients):
    """What tests need from a cluster: its address, lifecycle, topics and produce helpers.

    A broker kind is one subclass that provides :attr:`bootstrap_servers`, :attr:`port`,
    :meth:`start` (which ends with :meth:`wait_ready`) and :meth:`stop`; admin access, topic
    creation, producing and readiness waits are shared (see :class:`KafkaClients`, whose
    parameters, ``name`` and ``client_config``, it takes).
    """

    #: Whether the kind runs several brokers per cluster: its constructor then takes ``brokers``
    #: (a count) and ``racks`` (one ``broker.rack`` per broker, or ``None``) keywords.
    multi_broker: bool = False

    #: librdkafka settings of :meth:`produce`'s producer: ordinary idempotent batches. A broker
    #: kind that hides records of multi-record batches (Tansu) sends one record per batch.
    produce_defaults: Mapping[str, ConfigValue] = BATCHED

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

    def log_tails(self) -> dict[str, str]:
        """The end of each broker process's log, by broker, for the report of a failed test.

        Empty for a kind whose brokers this process does not run (external clusters).
        """
        return {}

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
        """Produce records, wait for every acknowledgement, check visibility.

        The producer is idempotent (records keep their order within a partition) and uses
        :attr:`produce_defaults`: ordinary batches on Apache Kafka; one record per batch on
        Tansu, whose high watermark only covers the first record of the last batch of a
        partition (about 5,000 records per second there). Use :meth:`produce_bulk` for more
        than a few thousand records.

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
        deadline = time.monotonic() + timeout
        self.partition_count(topic, timeout)  # fail fast on a missing topic
        with self._producer(self.produce_defaults, config) as producer:
            sent = send_each(producer, topic, records, partition, deadline, self.name)
        self._wait_visible(topic, next_offsets(sent), deadline)
        return sent

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
            As :meth:`produce` does.
        """
        deadline = time.monotonic() + timeout
        partitions = self.partition_count(topic, timeout)
        with self._producer(BULK, config) as producer:
            counts, ends = send_bulk(producer, topic, records, partitions, deadline, self.name)
        self._wait_visible(topic, ends, deadline)
        return counts

    @contextlib.contextmanager
    def _producer(
        self, defaults: Mapping[str, ConfigValue], config: Mapping[str, ConfigValue] | None
    ) -> Iterator[Any]:
        producer = Producer(
            {**self.client_properties(**defaults), **(config or {}), "logger": _log}
        )
        try:
            yield producer
        finally:
            close_producer(producer)


def stop_all(clusters: Iterable[BaseKafkaCluster]) -> None:
    """Stop every cluster, logging (not raising) a failure to stop one."""
    for cluster in clusters:
        try:
            cluster.stop()
        except Exception:
            _log.exception("could not stop cluster %s", cluster.name)
