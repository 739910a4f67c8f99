"""Pure configuration of the Apache Kafka test clusters: ``server.properties``, logging, JVM flags.

Every broker of a test cluster is a combined KRaft controller and broker
(``process.roles=broker,controller``) with a static voter set made of all brokers, listening on
``127.0.0.1`` only, and optionally a SASL_PLAINTEXT client listener with SCRAM-SHA-256 (brokers
and controllers keep talking over PLAINTEXT). Nothing here touches files or processes.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "DEFAULT_JVM_OPTIONS",
    "LOG4J2_PROPERTIES",
    "RACK_AWARE_SELECTOR",
    "SCRAM_MECHANISM",
    "STARTED_LINE",
    "BrokerAddress",
    "broker_addresses",
    "check_layout",
    "new_cluster_id",
    "render_properties",
    "server_properties",
]

RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
"""The replica selector that lets consumers fetch from a follower in their rack (KIP-392)."""

SCRAM_MECHANISM = "SCRAM-SHA-256"
"""The SASL mechanism of the optional SASL_PLAINTEXT listener."""

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
    """The two loopback ports of one broker of a test cluster.

    Parameters
    ----------
    port:
        The client (``PLAINTEXT``) listener.
    controller_port:
        The KRaft controller listener.
    sasl_port:
        The ``SASL_PLAINTEXT`` (SCRAM-SHA-256) client listener, ``None`` for none.
    """

    port: int
    controller_port: int
    sasl_port: int | None = None


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


def broker_addresses(ports: Sequence[int], brokers: int, sasl: bool) -> list[BrokerAddress]:
    """The addresses of ``brokers`` nodes over free ``ports``: 2 per node, 3 with ``sasl``."""
    per = 3 if sasl else 2
    if len(ports) < per * brokers:
        raise ValueError(f"{brokers} broker(s) need {per * brokers} ports, got {len(ports)}")
    return [
        BrokerAddress(ports[per * i], ports[per * i + 1], ports[per * i + 2] if sasl else None)
        for i in range(brokers)
    ]


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
    if me.sasl_port is not None:
        listeners["SASL_PLAINTEXT"] = (me.sasl_port, "SASL_PLAINTEXT")
    addresses = {name: f"{name}://127.0.0.1:{port}" for name, (port, _) in listeners.items()}
    properties = {
        "process.roles": "broker,controller",
        "node.id": str(node_id),
        "controller.quorum.voters": voters,
        "listeners": ",".join(addresses.values()),
        "advertised.listeners": ",".join(v for k, v in addresses.items() if k != "CONTROLLER"),
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
