"""A local Apache Kafka 4.x KRaft cluster: N combined controller+broker JVMs on loopback ports."""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import signal
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path

from pyspark_dynamic_kafka.testing.broker_kind import BaseKafkaCluster, stop_all
from pyspark_dynamic_kafka.testing.certificates import TlsStore, make_tls_store
from pyspark_dynamic_kafka.testing.errors import (
    LISTENER_ENV_VAR,
    ClusterStartError,
    ConfigValue,
    KafkaTestingError,
    free_ports,
)
from pyspark_dynamic_kafka.testing.kafka_config import (
    DEFAULT_JVM_OPTIONS,
    LOG4J2_PROPERTIES,
    STARTED_LINE,
    broker_addresses,
    check_advertised,
    check_layout,
    client_security,
    new_cluster_id,
    ports_per_broker,
    render_properties,
    server_properties,
)
from pyspark_dynamic_kafka.testing.kafka_jars import class_archive, ensure_kafka_jars, find_java
from pyspark_dynamic_kafka.testing.kafka_process import (
    BrokerProcess,
    brokers_report,
    exited,
    format_storages,
    not_started,
)

__all__ = ["ApacheKafkaCluster"]

_log = logging.getLogger(__name__)

_START_ATTEMPTS = 3


class ApacheKafkaCluster(BaseKafkaCluster):
    """A throw-away Apache Kafka cluster of ``brokers`` KRaft nodes on ``127.0.0.1``.

    Every node is a combined controller and broker (``java -cp <jars> kafka.Kafka``) with its
    storage formatted first under a fresh cluster id. Data and logs live in a temporary
    directory that :meth:`stop` removes; broker ``i`` logs to ``broker-<i>.log`` there, or in
    ``log_dir`` (kept) when given. Ports stay the same when a broker is restarted. Consumers
    fetch from a replica in their rack (``client.rack``) when ``racks`` are given.

    Parameters
    ----------
    name, brokers:
        The cluster's name, as tests and metadata refer to it; its number of nodes.
    racks, startup_timeout:
        ``broker.rack`` of each node (``["dc1", "dc2", "dc2"]``; ``None``: none); seconds
        :meth:`start` and :meth:`start_broker` wait for readiness.
    log_dir, jvm_options:
        Directory for ``<name>-broker-<i>.log`` (``None``: the temporary directory); JVM flags of
        every node (:data:`~.kafka_config.DEFAULT_JVM_OPTIONS`).
    client_config:
        Extra librdkafka properties for the helpers' clients.
    scram, tls:
        Also, on every broker (:meth:`listener_servers`), a SASL_PLAINTEXT listener with
        SCRAM-SHA-256 (users: :mod:`~.scram`); SSL and SASL_SSL ones (clients: :mod:`~.tls`).
    broker_config, classpath:
        Broker properties of every node, set last (``{"connections.max.reauth.ms": "5000"}``);
        folders and jars the nodes load classes from besides Kafka's (a ``replica.selector.class``).
    client_listener:
        The listener of :attr:`bootstrap_servers` and ``client_config``'s security
        (:func:`~.kafka_config.client_security`); ``None``: ``DYNAMIC_KAFKA_TEST_LISTENER``.
    advertised_ports:
        Each node's advertised ``PLAINTEXT`` port: a proxy's to :attr:`listening_ports`.
    """

    multi_broker = True
    default_replication_factor = 1

    def __init__(
        self,
        name: str,
        brokers: int = 1,
        *,
        racks: Sequence[str] | None = None,
        startup_timeout: float = 120.0,
        log_dir: str | os.PathLike[str] | None = None,
        jvm_options: Sequence[str] = DEFAULT_JVM_OPTIONS,
        client_config: Mapping[str, ConfigValue] | None = None,
        scram: bool = False,
        tls: bool = False,
        broker_config: Mapping[str, str] | None = None,
        client_listener: str | None = None,
        advertised_ports: Sequence[int] | None = None,
        classpath: Sequence[str | os.PathLike[str]] = (),
    ) -> None:
        super().__init__(name, client_config)
        self.advertised_ports = check_advertised(brokers, advertised_ports)
        self.broker_config, self.classpath = dict(broker_config or {}), [str(p) for p in classpath]
        listener = client_listener or os.environ.get(LISTENER_ENV_VAR, "").strip() or "PLAINTEXT"
        self.client_listener = listener.upper()
        tls = tls or self.client_listener != "PLAINTEXT"
        self.racks = check_layout(brokers, racks)
        self.broker_count = brokers
        self.scram, self.tls = scram, tls
        self.tls_store: TlsStore | None = None  # made at start
        self.startup_timeout = startup_timeout
        self.jvm_options = list(jvm_options)
        self._log_dir = None if log_dir is None else Path(log_dir)
        self.cluster_id: str | None = None
        self._root: Path | None = None
        self._brokers: list[BrokerProcess] = []
        self._awaited: list[BrokerProcess] = []
        self._jvm: list[str] = []  # java, its class archive if there is one, the classpath
        self._lock = threading.RLock()

    # -- addresses -------------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """Every broker's advertised ``127.0.0.1:<port>`` of ``client_listener``."""
        if self.client_listener != "PLAINTEXT":
            return self.listener_servers(self.client_listener)
        return ",".join(f"127.0.0.1:{b.address.client_port}" for b in self._started())

    @property
    def listening_ports(self) -> list[int]:
        """Each broker's own ``PLAINTEXT`` port, chosen early in :meth:`start`."""
        return [b.address.port for b in self._brokers]

    @property
    def sasl_bootstrap_servers(self) -> str:
        """Every broker's SASL_PLAINTEXT (SCRAM-SHA-256) listener, comma-separated."""
        return self.listener_servers("SASL_PLAINTEXT")

    def listener_servers(self, protocol: str) -> str:
        """Every broker's client listener of ``protocol`` (``SSL``...), comma-separated."""
        flag = {"SASL_PLAINTEXT": "scram", "SSL": "tls", "SASL_SSL": "tls"}.get(protocol)
        if flag is not None and not getattr(self, flag):
            raise KafkaTestingError(f"cluster {self.name!r} was started without {flag}=True")
        return ",".join(f"127.0.0.1:{b.address.client_ports()[protocol]}" for b in self._started())

    @property
    def port(self) -> int:
        """The client port of broker 0 (its advertised one when given)."""
        return self._started()[0].address.client_port

    @property
    def log_paths(self) -> list[Path]:
        """The log file of each broker (kept until :meth:`stop` unless ``log_dir`` was given)."""
        return [b.log_path for b in self._started()]

    @property
    def running(self) -> bool:
        """Whether every broker process is alive."""
        return bool(self._brokers) and all(b.running for b in self._brokers)

    @property
    def broker_pids(self) -> list[int | None]:
        """The process id of each broker, ``None`` for one that is down."""
        return [b.process.pid if b.running and b.process else None for b in self._started()]

    def log_tail(self, index: int) -> str:
        """The end of broker ``index``'s output since it was last started (for test reports)."""
        return self._broker(index).log_tail()

    def log_tails(self) -> dict[str, str]:
        """``{"broker <i> (<log path>)": the end of its output}`` of every broker."""
        return {f"broker {b.node_id} ({b.log_path})": b.log_tail() for b in self._brokers}

    def broker_running(self, index: int) -> bool:
        """Whether broker ``index``'s process is alive."""
        return self._broker(index).running

    # -- whole cluster ---------------------------------------------------------------------------

    def start(self) -> ApacheKafkaCluster:
        """Format storage, start every broker and wait until all of them serve clients.

        On a started cluster, only restarts the brokers that are down. Fetches the Kafka jars on
        first use (see :func:`~.kafka_jars.ensure_kafka_jars`). A start that fails because a
        chosen port was taken meanwhile is retried on new ports (3 attempts).

        Returns
        -------
        ApacheKafkaCluster
            ``self``.

        Raises
        ------
        ClusterStartError
            If ``java`` is missing or a jar fetch fails (:class:`.KafkaToolingError`), or a
            broker exits or is not ready within ``startup_timeout`` seconds; the message ends
            with the tail of the broker's log.
        """
        with self._lock:
            if self._brokers:
                for broker in self._brokers:
                    self.start_broker(broker.node_id)
                return self
            java, jars = find_java(), ensure_kafka_jars()
            archive = class_archive(java, jars)
            sharing = [f"-XX:SharedArchiveFile={archive}"] if archive.exists() else []
            self._jvm = [java, *sharing, "-cp", os.pathsep.join([str(jars / "*"), *self.classpath])]
            attempt = 1
            while True:
                try:
                    self._start_once()
                    return self
                except ClusterStartError as exc:
                    self.stop()
                    if "Address already in use" not in str(exc) or attempt >= _START_ATTEMPTS:
                        raise
                    _log.info("cluster %s: a port was taken, retrying on new ports", self.name)
                    attempt += 1

    def stop(self) -> None:
        """Kill every broker (SIGKILL) and delete the data and logs; idempotent.

        The data is discarded, so nothing is gained by a graceful shutdown, which takes seconds
        per broker (:meth:`stop_broker` is graceful). A broker that had died on its own is
        reported in a warning with its log tail.
        """
        with self._lock:
            for broker in self._brokers:
                if broker.exit_code is not None:
                    _log.warning(
                        "cluster %s: broker %d had exited with code %s; log tail:\n%s",
                        self.name,
                        broker.node_id,
                        broker.exit_code,
                        broker.log_tail(),
                    )
            for broker in self._brokers:
                broker.send(signal.SIGKILL)
            deadline = time.monotonic() + 30.0
            for broker in self._brokers:
                broker.await_exit(deadline, f"cluster {self.name}")
            _running.discard(self)
            self._brokers = []
            if self._root is not None:
                shutil.rmtree(self._root, ignore_errors=True)
                self._root = None

    # -- single brokers, for fault tests ---------------------------------------------------------

    def stop_broker(self, index: int, timeout: float = 60.0) -> None:
        """Stop broker ``index`` gracefully (SIGTERM: controlled shutdown); it keeps its data.

        Parameters
        ----------
        index:
            The broker (its node id), ``0 <= index < brokers``.
        timeout:
            Seconds to wait for the exit before killing it.
        """
        with self._lock:
            self._signal(self._broker(index), signal.SIGTERM, timeout)

    def kill_broker(self, index: int) -> None:
        """Kill broker ``index`` at once (SIGKILL); it keeps its data."""
        with self._lock:
            self._signal(self._broker(index), signal.SIGKILL, 30.0)

    def start_broker(self, index: int, timeout: float | None = None) -> None:
        """Start a stopped or killed broker again, on its ports, and wait until it serves clients.

        Parameters
        ----------
        index:
            The broker (its node id).
        timeout:
            Seconds to wait for readiness; ``startup_timeout`` by default.

        Raises
        ------
        ClusterStartError
            If the broker exits or is not ready in time (with its log tail).
        """
        with self._lock:
            broker = self._broker(index)
            if broker.running:
                return
            deadline = time.monotonic() + (self.startup_timeout if timeout is None else timeout)
            self._launch(broker)
            self._await_brokers([broker], deadline)

    # -- internals -------------------------------------------------------------------------------

    def _started(self) -> list[BrokerProcess]:
        if not self._brokers:
            raise KafkaTestingError(f"cluster {self.name!r} is not started")
        return self._brokers

    def _broker(self, index: int) -> BrokerProcess:
        brokers = self._started()
        if not 0 <= index < len(brokers):
            raise IndexError(
                f"cluster {self.name!r} has brokers 0..{len(brokers) - 1}, not {index}"
            )
        return brokers[index]

    def _start_once(self) -> None:
        started = time.monotonic()
        self._prepare()
        formatted = time.monotonic()
        for broker in self._brokers:
            self._launch(broker)
        self._await_brokers(self._brokers, started + self.startup_timeout)
        _log.info(
            "cluster %s: Apache Kafka, %d broker(s), ready on %s in %.2fs (storage formatted in "
            "%.2fs; logs in %s)",
            self.name,
            self.broker_count,
            self.bootstrap_servers,
            time.monotonic() - started,
            formatted - started,
            self._brokers[0].log_path.parent,
        )

    def _prepare(self) -> None:
        """Choose ports, write configuration files and format every broker's storage."""
        root = Path(tempfile.mkdtemp(prefix=f"kafka-{self.name}-"))
        self._root = root
        self.cluster_id = new_cluster_id()
        (root / "log4j2.properties").write_text(LOG4J2_PROPERTIES)
        ports = free_ports(ports_per_broker(self.scram, self.tls) * self.broker_count)
        shown = self.advertised_ports
        addresses = broker_addresses(ports, self.broker_count, self.scram, self.tls, shown)
        self.tls_store = make_tls_store(root, find_java()) if self.tls else None
        self.client_config |= client_security(self.client_listener, self.tls_store)
        logs = self._log_dir or root
        logs.mkdir(parents=True, exist_ok=True)
        prefix = f"{self.name}-" if self._log_dir is not None else ""
        for i in range(self.broker_count):
            rack = None if self.racks is None else self.racks[i]
            data, extra = str(root / f"data-{i}"), self.broker_config
            config = server_properties(i, addresses, data, rack, self.tls_store, extra)
            config_path = root / f"server-{i}.properties"
            config_path.write_text(render_properties(config))
            log_path = logs / f"{prefix}broker-{i}.log"
            self._brokers.append(BrokerProcess(i, addresses[i], config_path, log_path))
        what = f"Apache Kafka cluster {self.name!r}: formatting storage"
        java, cluster_id = self._java_command(), str(self.cluster_id)
        format_storages(java, cluster_id, self._brokers, self.startup_timeout, what)

    def _java_command(self) -> list[str]:
        log_config = f"-Dlog4j2.configurationFile={self._root}/log4j2.properties"
        return [*self._jvm, *self.jvm_options, log_config]

    def _launch(self, broker: BrokerProcess) -> None:
        broker.launch([*self._java_command(), "kafka.Kafka", str(broker.config_path)])
        _running.add(self)
        _log.debug("cluster %s: started broker %d", self.name, broker.node_id)

    def _await_brokers(self, brokers: Sequence[BrokerProcess], deadline: float) -> None:
        """Wait until each of ``brokers`` logged its start and metadata lists all of them."""
        self._awaited = list(brokers)
        self.wait_ready(
            deadline,
            brokers=[b.node_id for b in brokers],
            cluster_id=self.cluster_id,
            servers=[f"127.0.0.1:{b.address.port}" for b in brokers],
            problem=partial(exited, brokers),
            pending=not_started(brokers, STARTED_LINE),
        )

    def _start_failure(self, what: str) -> str:
        return (
            f"Apache Kafka cluster {self.name!r} not ready within {self.startup_timeout:g}s: "
            f"{what}.{brokers_report(self._awaited)}"
        )

    def _signal(self, broker: BrokerProcess, sig: signal.Signals, timeout: float) -> None:
        broker.send(sig)
        broker.await_exit(time.monotonic() + timeout, f"cluster {self.name}")


# Clusters still running at interpreter exit are stopped (a failed test run can still leak them).
_running: weakref.WeakSet[ApacheKafkaCluster] = weakref.WeakSet()


@atexit.register
def _stop_running_clusters() -> None:
    stop_all(list(_running))
