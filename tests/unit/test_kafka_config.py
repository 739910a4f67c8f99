"""The pure parts of the Apache Kafka test clusters: server.properties, cluster ids, jar lookup."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from pyspark_dynamic_kafka.testing import KafkaTestingError
from pyspark_dynamic_kafka.testing.apache_kafka import ApacheKafkaCluster
from pyspark_dynamic_kafka.testing.certificates import TlsStore
from pyspark_dynamic_kafka.testing.errors import free_ports, log_tail
from pyspark_dynamic_kafka.testing.kafka_config import (
    PLAIN_PASSWORD,
    PLAIN_USER,
    RACK_AWARE_SELECTOR,
    BrokerAddress,
    broker_addresses,
    new_cluster_id,
    render_properties,
    server_properties,
)
from pyspark_dynamic_kafka.testing.kafka_jars import (
    KafkaToolingError,
    class_archive,
    ensure_kafka_jars,
    find_java,
    jars_cache_dir,
    kafka_version,
    tooling_problem,
)
from pyspark_dynamic_kafka.testing.maven_central import REPOSITORY_ENV_VAR

THREE = [BrokerAddress(9001, 9101), BrokerAddress(9002, 9102), BrokerAddress(9003, 9103)]


def test_server_properties_of_a_node_of_three_with_a_rack() -> None:
    """The whole file, as the broker reads it."""
    expected = """\
process.roles=broker,controller
node.id=1
controller.quorum.voters=0@127.0.0.1:9101,1@127.0.0.1:9102,2@127.0.0.1:9103
listeners=PLAINTEXT://127.0.0.1:9002,CONTROLLER://127.0.0.1:9102
advertised.listeners=PLAINTEXT://127.0.0.1:9002
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=/data/1
replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector
auto.create.topics.enable=false
num.partitions=1
default.replication.factor=1
offsets.topic.replication.factor=3
offsets.topic.num.partitions=5
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
transaction.state.log.num.partitions=5
share.coordinator.state.topic.replication.factor=3
share.coordinator.state.topic.min.isr=2
group.initial.rebalance.delay.ms=0
log.retention.check.interval.ms=1000
log.initial.task.delay.ms=1000
log.cleaner.backoff.ms=1000
broker.heartbeat.interval.ms=1000
broker.session.timeout.ms=6000
num.network.threads=2
num.io.threads=2
num.recovery.threads.per.data.dir=1
background.threads=2
broker.rack=dc2
"""
    rendered = render_properties(server_properties(1, THREE, "/data/1", rack="dc2"))
    assert rendered == expected
    assert server_properties(0, THREE, "/d")["replica.selector.class"] == RACK_AWARE_SELECTOR


def test_no_rack_means_no_broker_rack() -> None:
    assert "broker.rack" not in server_properties(0, THREE[:1], "/data/0")


@pytest.mark.parametrize(
    ("brokers", "replicas", "min_isr"),
    [(1, "1", "1"), (2, "2", "1"), (3, "3", "2"), (5, "3", "2")],
)
def test_internal_topics_are_replicated_up_to_three(
    brokers: int, replicas: str, min_isr: str
) -> None:
    addresses = [BrokerAddress(9000 + i, 9100 + i) for i in range(brokers)]
    config = server_properties(brokers - 1, addresses, "/d")
    assert config["controller.quorum.voters"].count("@127.0.0.1:") == brokers
    assert [
        config["offsets.topic.replication.factor"],
        config["transaction.state.log.replication.factor"],
        config["share.coordinator.state.topic.replication.factor"],
    ] == [replicas] * 3
    assert config["transaction.state.log.min.isr"] == min_isr
    assert config["share.coordinator.state.topic.min.isr"] == min_isr


@pytest.mark.parametrize("node_id", [-1, 3])
def test_node_id_must_index_the_brokers(node_id: int) -> None:
    with pytest.raises(ValueError, match=f"node_id {node_id} is not an index of the 3 broker"):
        server_properties(node_id, THREE, "/d")


def test_render_properties_keeps_order_and_escapes_values() -> None:
    text = render_properties({"b": "1", "a": "C:\\data", "c": "two\nlines"})
    assert text == "b=1\na=C:\\\\data\nc=two\\nlines\n"


def test_new_cluster_ids_are_random_16_byte_base64url() -> None:
    ids = {new_cluster_id() for _ in range(200)}
    assert len(ids) == 200
    for cluster_id in ids:
        assert len(cluster_id) == 22
        assert not cluster_id.startswith("-")
        assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"brokers": 0}, ValueError, "at least 1 broker, got brokers=0"),
        ({"brokers": 3, "racks": ["dc1", "dc2"]}, ValueError, "2 rack.s. for 3 broker"),
        ({"brokers": 3, "racks": "dc1"}, TypeError, "a list of rack names"),
        ({"brokers": 2, "advertised_ports": [7]}, ValueError, "1 port.s. for 2 broker"),
    ],
)
def test_cluster_arguments_are_checked(
    kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        ApacheKafkaCluster("east", **kwargs)  # type: ignore[arg-type]


def test_a_cluster_that_is_not_started_has_no_address() -> None:
    cluster = ApacheKafkaCluster("east", brokers=3, racks=["dc1", "dc2", "dc2"])
    with pytest.raises(KafkaTestingError, match="'east' is not started"):
        _ = cluster.bootstrap_servers
    assert repr(cluster) == "ApacheKafkaCluster(name='east', bootstrap_servers='not started')"
    cluster.stop()  # stopping a cluster that never ran is harmless


def test_jars_are_cached_per_kafka_version(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert kafka_version().startswith("4.")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert jars_cache_dir("4.9.9") == tmp_path / "pyspark-dynamic-kafka" / "kafka-4.9.9"
    assert jars_cache_dir() == tmp_path / "pyspark-dynamic-kafka" / f"kafka-{kafka_version()}"


def test_missing_java_is_named_with_the_ways_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(KafkaToolingError, match="`java` is not on the PATH") as info:
        find_java()
    assert "install a JDK" in str(info.value) and "broker='tansu'" in str(info.value)
    assert tooling_problem() == str(info.value)


def test_no_maven_is_needed_only_java(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """With java and without mvn nothing is missing; a first fetch that cannot reach the
    repository names the URL it tried (a closed loopback port here, no network)."""
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    monkeypatch.setenv("PATH", str(java.parent))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert tooling_problem() is None
    closed = free_ports(1)[0]
    monkeypatch.setenv(REPOSITORY_ENV_VAR, f"http://127.0.0.1:{closed}/maven2")
    url = rf"http://127\.0\.0\.1:{closed}/maven2/\S+/\S+\.jar(\.sha1)?"
    with pytest.raises(KafkaToolingError, match=rf"^could not fetch {url}: .*Maven Central"):
        ensure_kafka_jars(timeout=60)
    assert not jars_cache_dir().exists()  # nothing half-filled is left where jars are looked for


def test_free_ports_are_distinct() -> None:
    ports = free_ports(6)
    assert len(set(ports)) == 6
    assert all(0 < p < 65536 for p in ports)


def test_log_tail_reads_from_an_offset(tmp_path: Path) -> None:
    log = tmp_path / "broker.log"
    assert log_tail(log) == "(no log)"
    log.write_bytes(b"first run\nsecond run\n")
    offset = len(b"first run\n")
    assert log_tail(log, offset, None) == "second run\n"
    assert log_tail(log, 0, 4) == "run\n"
    assert log_tail(log, os.path.getsize(log)) == "(empty log)"


def test_the_class_archive_is_named_after_the_jvm_and_the_jars(tmp_path: Path) -> None:
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    first, second = tmp_path / "kafka-4.4.0", tmp_path / "kafka-4.5.0"
    archive = class_archive(str(java), first)
    assert archive.parent == first and archive.name.startswith("broker-classes-")
    assert archive.suffix == ".jsa" and class_archive(str(java), first) == archive
    assert class_archive(str(java), second).name != archive.name  # other jars
    java.write_text("#!/bin/sh\n# upgraded\n")
    assert class_archive(str(java), first) != archive  # another JVM build


def test_a_sasl_listener_is_added_for_scram_clients() -> None:
    """SCRAM-SHA-256 on a SASL_PLAINTEXT listener of its own; brokers and controllers keep
    talking over PLAINTEXT."""
    [node] = broker_addresses([9001, 9101, 9201], 1, sasl=True)
    assert node == BrokerAddress(9001, 9101, 9201)
    config = server_properties(0, [node], "/data/0")
    assert config["listeners"] == (
        "PLAINTEXT://127.0.0.1:9001,CONTROLLER://127.0.0.1:9101,SASL_PLAINTEXT://127.0.0.1:9201"
    )
    assert config["advertised.listeners"] == (
        "PLAINTEXT://127.0.0.1:9001,SASL_PLAINTEXT://127.0.0.1:9201"
    )
    assert config["listener.security.protocol.map"] == (
        "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT"
    )
    assert config["inter.broker.listener.name"] == "PLAINTEXT"
    assert config["sasl.enabled.mechanisms"] == "SCRAM-SHA-256"
    assert config["listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    )
    assert "sasl.enabled.mechanisms" not in server_properties(0, THREE, "/data/0")


def test_broker_addresses_take_two_or_three_ports_each() -> None:
    assert broker_addresses([1, 2, 3, 4], 2, sasl=False) == [
        BrokerAddress(1, 2),
        BrokerAddress(3, 4),
    ]
    assert broker_addresses([1, 2, 3, 4, 5, 6], 2, sasl=True) == [
        BrokerAddress(1, 2, 3),
        BrokerAddress(4, 5, 6),
    ]
    with pytest.raises(ValueError, match="2 broker\\(s\\) need 6 ports, got 4"):
        broker_addresses([1, 2, 3, 4], 2, sasl=True)


def test_an_advertised_port_stands_for_the_plaintext_listener_and_no_other() -> None:
    """A proxy's port in front of each broker: advertised for PLAINTEXT (where clients and
    brokers connect), while the broker listens on its own port; other listeners unchanged."""
    nodes = broker_addresses([1, 2, 3, 4, 5, 6], 2, sasl=True, advertised=[71, 72])
    assert nodes == [
        BrokerAddress(1, 2, 3, advertised_port=71),
        BrokerAddress(4, 5, 6, None, None, 72),
    ]
    assert [n.client_port for n in nodes] == [71, 72]
    assert BrokerAddress(1, 2).client_port == 1
    config = server_properties(1, nodes, "/data/1")
    assert config["listeners"] == (
        "PLAINTEXT://127.0.0.1:4,CONTROLLER://127.0.0.1:5,SASL_PLAINTEXT://127.0.0.1:6"
    )
    assert config["advertised.listeners"] == (
        "PLAINTEXT://127.0.0.1:72,SASL_PLAINTEXT://127.0.0.1:6"
    )
    with pytest.raises(ValueError, match="1 port\\(s\\) for 2 broker"):
        broker_addresses([1, 2, 3, 4], 2, sasl=False, advertised=[71])


def test_a_cluster_without_scram_has_no_sasl_address() -> None:
    with pytest.raises(KafkaTestingError, match="started without scram=True"):
        _ = ApacheKafkaCluster("east").sasl_bootstrap_servers
    with pytest.raises(KafkaTestingError, match="started without tls=True"):
        _ = ApacheKafkaCluster("east").listener_servers("SASL_SSL")


def test_tls_adds_ssl_and_sasl_ssl_listeners_with_plain_and_scram() -> None:
    """Two more ports per node; the key store of every SSL listener, PLAIN's one user and
    SCRAM on the SASL_SSL listener."""
    [node] = broker_addresses([1, 2, 3, 4, 5], 1, sasl=True, tls=True)
    assert node == BrokerAddress(1, 2, 3, 4, 5)
    assert broker_addresses([1, 2, 3, 4], 1, sasl=False, tls=True) == [
        BrokerAddress(1, 2, None, 3, 4)
    ]
    store = TlsStore(Path("/tls/broker.p12"), "store-password", Path("/tls/ca.pem"))
    config = server_properties(0, [node], "/data/0", tls=store)
    assert config["listener.security.protocol.map"] == (
        "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,"
        "SASL_SSL:SASL_SSL"
    )
    assert config["advertised.listeners"].endswith(",SSL://127.0.0.1:4,SASL_SSL://127.0.0.1:5")
    assert config["ssl.keystore.location"] == "/tls/broker.p12"
    assert config["ssl.keystore.password"] == config["ssl.key.password"] == "store-password"
    mechanisms = config["listener.name.sasl_ssl.sasl.enabled.mechanisms"]
    assert mechanisms == "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
    assert "ScramLoginModule" in config["listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"]
    extra = server_properties(0, [node], "/d", extra={"connections.max.reauth.ms": "5000"})
    assert extra["connections.max.reauth.ms"] == "5000"
    assert (
        f'user_{PLAIN_USER}="{PLAIN_PASSWORD}"'
        in (config["listener.name.sasl_ssl.plain.sasl.jaas.config"])
    )
    assert config["inter.broker.listener.name"] == "PLAINTEXT"
