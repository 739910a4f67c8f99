"""Pure configuration of the Apache Kafka test clusters: ``server.properties``, logging, JVM flags.

Every broker of a test cluster is a combined KRaft controller and broker
(``process.roles=broker,controller``) with a static voter set made of all brokers, listening on
``127.0.0.1`` only, optionally a SASL_PLAINTEXT client listener with SCRAM-SHA-256 and TLS client
listeners, SSL and SASL_SSL (PLAIN, SCRAM-SHA-256 and -512); brokers and controllers keep talking
over PLAINTEXT. Nothing here touches files or processes.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark_dynamic_kafka.testing.certificates import TlsStore

__all__ = [
    "DEFAULT_JVM_OPTIONS",
    "LOG4J2_PROPERTIES",
    "PLAIN_PASSWORD",
    "PLAIN_USER",
    "RACK_AWARE_SELECTOR",
    "SCRAM_MECHANISM",
    "SCRAM_MECHANISMS",
    "SERVING_JVM_OPTIONS",
    "STARTED_LINE",
    "BrokerAddress",
    "broker_addresses",
    "check_advertised",
    "check_layout",
    "client_security",
    "new_cluster_id",
    "ports_per_broker",
    "render_properties",
    "server_properties",
]

RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
"""The replica selector that lets consumers fetch from a follower in their rack (KIP-392)."""

SCRAM_MECHANISM = "SCRAM-SHA-256"
"""The SASL mechanism of the optional SASL_PLAINTEXT listener."""
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
"""The SCRAM mechanisms of the optional SASL_SSL listener (a user has credentials for both)."""

PLAIN_USER = "plain-reader"
"""The SASL PLAIN user of the SASL_SSL listener."""
PLAIN_PASSWORD = "plain-reader-password"
"""Its password (a throw-away test cluster's)."""

STARTED_LINE = "Kafka Server started"
"""What ``kafka.server.KafkaRaftServer`` logs once the node serves clients."""

DEFAULT_JVM_OPTIONS: tuple[str, ...] = (
    "-Xms128m",
    "-Xmx512m",
    # One GC thread and the C1 compiler only: test brokers start faster and use less CPU.
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
)
"""JVM flags of every broker (a small heap for a shared test machine)."""

SERVING_JVM_OPTIONS: tuple[str, ...] = (
    "-Xms1g",
    "-Xmx1g",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
)
"""JVM flags of a broker measured for throughput (``make bench``): the JVM's own defaults (the
C2 compiler, G1) and a 1 GiB heap, as a production broker runs. Under
:data:`DEFAULT_JVM_OPTIONS`' C1-only compiler a broker encrypts TLS about ten times slower
(~35 MB/s here), so on a TLS listener the broker, not the reader, would set every reader's pace."""

LOG4J2_PROPERTIES = """\
# log4j 2 configuration of the Apache Kafka test brokers: everything to stdout (a log file).
status = warn
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = STDOUT
# The full configuration dump of every client and server component: thousands of lines.
logger.config.name = org.apache.kafka.common.config.AbstractConfig
logger.config.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""
"""Logging of the test brokers, passed with ``-Dlog4j2.configurationFile``."""


@dataclass(frozen=True)
class BrokerAddress:
    """The loopback ports of one broker of a test cluster.

    Parameters
    ----------
    port:
        The client (``PLAINTEXT``) listener.
    controller_port:
        The KRaft controller listener.
    sasl_port:
        The ``SASL_PLAINTEXT`` (SCRAM-SHA-256) client listener, ``None`` for none.
    ssl_port, sasl_ssl_port:
        The ``SSL`` and ``SASL_SSL`` (PLAIN, SCRAM-SHA-256/512) client listeners, ``None`` for
        none.
    advertised_port:
        The port the broker advertises for its ``PLAINTEXT`` listener instead of ``port`` (a
        proxy's in front of it), ``None`` for ``port`` itself.
    """

    port: int
    controller_port: int
    sasl_port: int | None = None
    ssl_port: int | None = None
    sasl_ssl_port: int | None = None
    advertised_port: int | None = None

    @property
    def client_port(self) -> int:
        """The ``PLAINTEXT`` port clients connect to: the advertised one."""
        return self.port if self.advertised_port is None else self.advertised_port

    def client_ports(self) -> dict[str, int]:
        """The port of each client listener, by its security protocol."""
        ports = {"PLAINTEXT": self.port, "SASL_PLAINTEXT": self.sasl_port}
        ports.update(SSL=self.ssl_port, SASL_SSL=self.sasl_ssl_port)
        return {name: port for name, port in ports.items() if port is not None}


def check_layout(brokers: int, racks: Sequence[str] | None) -> list[str] | None:
    """Check a cluster's broker count and racks (one per broker); the racks as a list.

    Raises
    ------
    ValueError, TypeError
        For fewer than 1 broker, a string of racks, or not one rack per broker.
    """
    if brokers < 1:
        raise ValueError(f"a cluster needs at least 1 broker, got brokers={brokers}")
    if isinstance(racks, str):
        raise TypeError(f"racks must be a list of rack names, one per broker, not {racks!r}")
    if racks is not None and len(racks) != brokers:
        raise ValueError(
            f"racks names {len(racks)} rack(s) for {brokers} broker(s): give one per broker"
        )
    return None if racks is None else list(racks)


def check_advertised(brokers: int, ports: Sequence[int] | None) -> list[int] | None:
    """Check advertised ports (one per broker); them as a list.

    Raises
    ------
    ValueError
        If they are not one per broker.
    """
    if ports is not None and len(ports) != brokers:
        raise ValueError(
            f"advertised ports name {len(ports)} port(s) for {brokers} broker(s): give one per "
            "broker"
        )
    return None if ports is None else list(ports)


def ports_per_broker(sasl: bool, tls: bool = False) -> int:
    """The ports of one node: 2, one more with ``sasl``, two more with ``tls``."""
    return 2 + sasl + 2 * tls


def broker_addresses(
    ports: Sequence[int],
    brokers: int,
    sasl: bool,
    tls: bool = False,
    advertised: Sequence[int] | None = None,
) -> list[BrokerAddress]:
    """The addresses of ``brokers`` nodes over free ``ports`` (:func:`ports_per_broker` each);
    ``advertised`` gives each node's advertised ``PLAINTEXT`` port (``None``: its own)."""
    per = ports_per_broker(sasl, tls)
    if len(ports) < per * brokers:
        raise ValueError(f"{brokers} broker(s) need {per * brokers} ports, got {len(ports)}")
    advertised = check_advertised(brokers, advertised)
    addresses = []
    for i in range(brokers):
        mine = iter(ports[per * i : per * (i + 1)])
        port, controller = next(mine), next(mine)
        sasl_port = next(mine) if sasl else None
        ssl_port, sasl_ssl_port = (next(mine), next(mine)) if tls else (None, None)
        shown = None if advertised is None else advertised[i]
        addresses.append(BrokerAddress(port, controller, sasl_port, ssl_port, sasl_ssl_port, shown))
    return addresses


def new_cluster_id() -> str:
    """A random Kafka cluster id: 16 random bytes in unpadded URL-safe base64 (22 characters).

    Like Kafka's own ``Uuid.randomUuid()``, never one that starts with ``-`` (command-line tools
    would take it for an option).
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text


def server_properties(
    node_id: int,
    brokers: Sequence[BrokerAddress],
    log_dir: str,
    rack: str | None = None,
    tls: TlsStore | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """``server.properties`` of one combined controller+broker node of a test cluster.

    Parameters
    ----------
    node_id:
        The node's id, its index in ``brokers``.
    brokers:
        The addresses of all nodes of the cluster; every node is a controller voter.
    log_dir:
        The node's data (and metadata log) directory.
    rack:
        ``broker.rack``; ``None`` leaves it unset.
    tls:
        The key store of the ``SSL`` and ``SASL_SSL`` listeners (the node's ``ssl_port`` and
        ``sasl_ssl_port``); ``None`` for none.
    extra:
        Broker properties set last (e.g. ``connections.max.reauth.ms``).

    Returns
    -------
    dict
        Property names and values, in a stable order.
    """
    if not 0 <= node_id < len(brokers):
        raise ValueError(f"node_id {node_id} is not an index of the {len(brokers)} broker(s)")
    me = brokers[node_id]
    count = len(brokers)
    replicas = str(min(3, count))
    # A quorum of the replicas, so that one killed broker of three keeps transactions working.
    min_isr = str(max(1, min(2, count - 1)))
    voters = ",".join(f"{i}@127.0.0.1:{b.controller_port}" for i, b in enumerate(brokers))
    # listener name -> (port, security protocol)
    listeners = {
        "PLAINTEXT": (me.port, "PLAINTEXT"),
        "CONTROLLER": (me.controller_port, "PLAINTEXT"),
    }
    for name, port in me.client_ports().items():
        listeners[name] = (port, name)
    addresses = {name: f"{name}://127.0.0.1:{port}" for name, (port, _) in listeners.items()}
    advertised = {**addresses, "PLAINTEXT": f"PLAINTEXT://127.0.0.1:{me.client_port}"}
    properties = {
        "process.roles": "broker,controller",
        "node.id": str(node_id),
        "controller.quorum.voters": voters,
        "listeners": ",".join(addresses.values()),
        "advertised.listeners": ",".join(v for k, v in advertised.items() if k != "CONTROLLER"),
        "listener.security.protocol.map": ",".join(
            f"{name}:{protocol}" for name, (_, protocol) in listeners.items()
        ),
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": log_dir,
        "replica.selector.class": RACK_AWARE_SELECTOR,
        # Tests create their topics; a typo must fail rather than create a topic.
        "auto.create.topics.enable": "false",
        "num.partitions": "1",
        "default.replication.factor": "1",
        "offsets.topic.replication.factor": replicas,
        "offsets.topic.num.partitions": "5",
        "transaction.state.log.replication.factor": replicas,
        "transaction.state.log.min.isr": min_isr,
        "transaction.state.log.num.partitions": "5",
        "share.coordinator.state.topic.replication.factor": replicas,
        "share.coordinator.state.topic.min.isr": min_isr,
        "group.initial.rebalance.delay.ms": "0",
        # Retention and compaction tests must not wait minutes for the broker's periodic tasks.
        "log.retention.check.interval.ms": "1000",
        "log.initial.task.delay.ms": "1000",
        "log.cleaner.backoff.ms": "1000",
        # A killed broker is fenced (its partitions move, and it may register again) after 6 s
        # without heartbeats instead of 9 s; six missed heartbeats still tolerate a loaded machine.
        "broker.heartbeat.interval.ms": "1000",
        "broker.session.timeout.ms": "6000",
        # Few threads: a test broker shares a small machine with Spark and other brokers.
        "num.network.threads": "2",
        "num.io.threads": "2",
        "num.recovery.threads.per.data.dir": "1",
        "background.threads": "2",
    }
    if rack is not None:
        properties["broker.rack"] = rack
    if me.sasl_port is not None:
        # No authorizer: every authenticated user may do anything; users are SCRAM credentials
        # stored in the cluster's metadata (AlterUserScramCredentials, see testing.scram).
        properties["sasl.enabled.mechanisms"] = SCRAM_MECHANISM
        login = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        properties[f"listener.name.sasl_plaintext.{SCRAM_MECHANISM.lower()}.sasl.jaas.config"] = (
            login
        )
    if tls is not None and me.ssl_port is not None:
        properties.update(_tls_properties(tls))
    properties.update(extra or {})
    return properties


def _tls_properties(store: TlsStore) -> dict[str, str]:
    """Broker properties of the ``SSL`` and ``SASL_SSL`` listeners."""
    plain = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'user_{PLAIN_USER}="{PLAIN_PASSWORD}";'
    )
    scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    return {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(store.keystore),
        "ssl.keystore.password": store.password,
        "ssl.key.password": store.password,
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": ",".join(["PLAIN", *SCRAM_MECHANISMS]),
        "listener.name.sasl_ssl.plain.sasl.jaas.config": plain,
        **{
            f"listener.name.sasl_ssl.{mechanism.lower()}.sasl.jaas.config": scram
            for mechanism in SCRAM_MECHANISMS
        },
    }


def client_security(listener: str, tls: TlsStore | None) -> dict[str, str]:
    """The security properties of a client of the ``listener`` client listener (none for
    ``PLAINTEXT``; ``SASL_SSL`` authenticates with SASL PLAIN as :data:`PLAIN_USER`)."""
    if listener == "PLAINTEXT":
        return {}
    if listener not in ("SSL", "SASL_SSL") or tls is None:
        raise ValueError(f"no client security for listener {listener!r} (SSL or SASL_SSL, tls)")
    properties = {"security.protocol": listener, "ssl.ca.location": str(tls.ca_location)}
    if listener == "SASL_SSL":
        properties |= {
            "sasl.mechanism": "PLAIN",
            "sasl.username": PLAIN_USER,
            "sasl.password": PLAIN_PASSWORD,
        }
    return properties


def render_properties(properties: Mapping[str, str]) -> str:
    """A Java properties file of ``properties``, one ``key=value`` line each.

    Backslashes and line breaks in values are escaped; keys are plain Kafka property names.
    """
    lines = []
    for key, value in properties.items():
        escaped = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        lines.append(f"{key}={escaped}\n")
    return "".join(lines)
