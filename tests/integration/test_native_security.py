"""Reads over TLS and SASL on Apache Kafka, on both readers (the ``reader`` fixture), without
Spark: the SSL listener (the broker's certificate and host name verified), SASL_SSL with PLAIN
and with SCRAM-SHA-256, and SASL_PLAINTEXT with SCRAM-SHA-256, each an exact record set. The
compiled core reads every one of these clusters under ``reader=auto`` (checked through the
driver's decision, :func:`~pyspark_dynamic_kafka.engines.choice.read_engine`: ``direct``), with its
direct fetch path (its own TLS on librdkafka's OpenSSL, its own SASL PLAIN and SCRAM;
checked through ``Reader.fallback()``), where a refused connection fails in seconds naming why.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from tests.integration.helpers import secured_cluster, skip_without_local_kafka
from tests.integration.read_tasks import make_task, read_table

from pyspark_dynamic_kafka.engines.choice import read_engine
from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.errors import DynamicKafkaError
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.kafka.pool import consumer_config
from pyspark_dynamic_kafka.testing import scram_client_properties, set_scram_password
from pyspark_dynamic_kafka.testing.certificates import make_tls_store
from pyspark_dynamic_kafka.testing.kafka_jars import find_java
from pyspark_dynamic_kafka.testing.tls import (
    plain_client_properties,
    sasl_ssl_scram_client_properties,
    tls_client_properties,
)

pytestmark = pytest.mark.usefixtures("empty_consumer_pool")


def test_tls_and_sasl_listeners_give_the_exact_records(kafka_clusters: Any, reader: str) -> None:
    east = secured_cluster(kafka_clusters)
    east.create_topic("orders", partitions=2)
    east.produce("orders", [(f"k{i}", f"a{i}") for i in range(10)], partition=0)
    east.produce("orders", [(None, f"b{i}") for i in range(6)], partition=1)
    password = f"scram-{uuid.uuid4().hex}"
    set_scram_password(east, "scram-reader", password)
    listeners = {
        "SSL": tls_client_properties(east),
        "SASL_SSL PLAIN": plain_client_properties(east),
        "SASL_SSL SCRAM-SHA-256": sasl_ssl_scram_client_properties(
            east, "scram-reader", password, "SCRAM-SHA-256"
        ),
        "SASL_PLAINTEXT SCRAM-SHA-256": scram_client_properties(east, "scram-reader", password),
    }
    expected = [(0, o, f"a{o}") for o in range(2, 9)] + [(1, o, f"b{o}") for o in range(6)]
    for listener, properties in listeners.items():
        # Under reader=auto the driver plans each of them for the core's direct fetch path.
        assert read_engine("auto", "east", FrozenProperties(properties)).name == "direct", listener
        task = make_task(
            east, reader, ("orders", 0, 2, 9), ("orders", 1, 0, 6), properties=properties
        )
        table = read_table(task)
        rows = zip(
            table["partition"].to_pylist(),
            table["offset"].to_pylist(),
            [v.decode() for v in table["value"].to_pylist()],
            strict=True,
        )
        assert sorted(rows) == expected, listener
        assert table["key"].to_pylist()[:7] == [f"k{o}".encode() for o in range(2, 9)], listener


def test_a_refused_password_or_an_untrusted_certificate_fails_the_read(
    kafka_clusters: Any, reader: str, tmp_path: Path
) -> None:
    # The password never shows in the error; a broker certificate the client does not trust
    # (checked against another self-signed certificate) fails too: the reads above verified it.
    east = secured_cluster(kafka_clusters)
    east.create_topic("orders", partitions=1)
    east.produce("orders", [(None, "a")], partition=0)
    wrong = f"wrong-{uuid.uuid4().hex}"
    cases = {
        "refused password": plain_client_properties(east, password=wrong),
        "untrusted certificate": {
            **tls_client_properties(east),
            "ssl.ca.location": str(make_tls_store(tmp_path, find_java()).ca_location),
        },
    }
    for case, properties in cases.items():
        task = make_task(
            east, reader, ("orders", 0, 0, 1), poll_timeout_ms=5_000, properties=properties
        )
        with pytest.raises(DynamicKafkaError) as failed:
            read_table(task)
        message = str(failed.value)
        assert wrong not in message, case
        assert "east/orders/0 range [0, 1)" in message or "'east'" in message, (case, message)


def _direct_read(cluster: Any, properties: dict[str, str], poll_timeout_ms: int = 60_000) -> Any:
    """A core ``Reader`` of topic ``orders`` [0, 5) with these client properties: (its rows'
    offsets, ``fallback()``, seconds it took), or the exception and the seconds."""
    module = core()
    assert module is not None
    config = sorted(consumer_config(properties).items())
    started = time.monotonic()
    try:
        reader = module.Reader(
            cluster.name, config, [("orders", 0, 0, 5)], poll_timeout_ms, False, True
        )
        offsets = [row["offset"] for batch in reader for row in batch.to_pylist()]
        return offsets, reader.fallback(), time.monotonic() - started
    except module.ReadError as exc:
        return exc, None, time.monotonic() - started


@pytest.mark.skipif(core() is None, reason="the compiled core is not installed (NATIVE=0)")
def test_the_direct_path_serves_tls_and_sasl_and_refusals_fail_at_once(
    kafka_clusters: Any, tmp_path: Path
) -> None:
    # The core's own TLS (librdkafka's OpenSSL) and SASL: every listener is read by the direct
    # path (fallback() None), and a refused connection fails the read in seconds (the poll
    # timeout is a minute) naming the cluster and the cause, never the password.
    east = secured_cluster(kafka_clusters)
    east.create_topic("orders", partitions=1)
    east.produce("orders", [(None, f"v{i}") for i in range(5)], partition=0)
    password = f"scram-{uuid.uuid4().hex}"
    set_scram_password(east, "scram-reader", password)
    scram = sasl_ssl_scram_client_properties
    served = {
        "SSL": tls_client_properties(east),
        "SASL_SSL PLAIN": plain_client_properties(east),
        "SASL_SSL SCRAM-SHA-256": scram(east, "scram-reader", password, "SCRAM-SHA-256"),
        "SASL_SSL SCRAM-SHA-512": scram(east, "scram-reader", password, "SCRAM-SHA-512"),
        "SASL_PLAINTEXT SCRAM-SHA-256": scram_client_properties(east, "scram-reader", password),
    }
    for listener, properties in served.items():
        assert _direct_read(east, properties)[:2] == ([0, 1, 2, 3, 4], None), listener
    wrong = f"wrong-{uuid.uuid4().hex}"
    ssl = tls_client_properties(east)
    other_ca = str(make_tls_store(tmp_path, find_java()).ca_location)
    refused = {
        "SASL/PLAIN authentication failed: Authentication failed: Invalid username or password": (
            plain_client_properties(east, password=wrong)
        ),
        "SASL/SCRAM-SHA-512 authentication failed: Authentication failed during authentication "
        "due to invalid credentials": scram(east, "scram-reader", wrong, "SCRAM-SHA-512"),
        "the broker does not enable SASL mechanism SCRAM-SHA-512 (it enables SCRAM-SHA-256)": {
            **scram_client_properties(east, "scram-reader", password),
            "sasl.mechanism": "SCRAM-SHA-512",
        },
        "the broker's certificate does not verify (self-signed certificate)": {
            **ssl,
            "ssl.ca.location": other_ca,
        },
        # The certificate names 127.0.0.1 only.
        "the TLS handshake with localhost failed: the broker's certificate does not verify "
        "(hostname mismatch)": {
            **ssl,
            "bootstrap.servers": ssl["bootstrap.servers"].replace("127.0.0.1", "localhost"),
        },
    }
    for cause, properties in refused.items():
        failure, _, seconds = _direct_read(east, properties)
        message = str(failure)
        assert message.startswith("Reading from cluster 'east' failed: "), message
        assert cause in message, message
        assert wrong not in message and password not in message
        assert seconds < 30, (cause, seconds)


@pytest.mark.skipif(core() is None, reason="the compiled core is not installed (NATIVE=0)")
def test_connections_outlive_the_brokers_session_lifetime(kafka_clusters: Any) -> None:
    # The broker ends an authenticated session after connections.max.reauth.ms (KIP-368); a
    # pooled consumer's direct connections are kept across readers, so reads spread over
    # several lifetimes meet expired sessions: each read is still exact, and still direct.
    skip_without_local_kafka("an Apache Kafka cluster with TLS and SASL listeners")
    lifetime_ms = 2_000
    east = kafka_clusters(
        "east",
        scram=True,
        tls=True,
        broker_config={"connections.max.reauth.ms": str(lifetime_ms)},
    )["east"]
    east.create_topic("orders", partitions=1)
    password = f"scram-{uuid.uuid4().hex}"
    set_scram_password(east, "scram-reader", password)
    properties = sasl_ssl_scram_client_properties(east, "scram-reader", password, "SCRAM-SHA-512")
    module = core()
    assert module is not None
    consumer = module.Consumer(sorted(consumer_config(properties).items()))
    started = time.monotonic()
    try:
        reads = 0
        while time.monotonic() - started < 3 * lifetime_ms / 1000 or reads < 4:
            east.produce("orders", [(None, f"v{reads}")], partition=0)
            reader = module.Reader(
                "east", consumer, [("orders", 0, reads, reads + 1)], 60_000, False, True
            )
            assert [r["value"] for b in reader for r in b.to_pylist()] == [f"v{reads}".encode()]
            assert reader.fallback() is None, reads
            reads += 1
    finally:
        consumer.close()
