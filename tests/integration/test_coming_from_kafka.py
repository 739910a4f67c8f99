"""A query moved over from Spark's ``format("kafka")``, on Apache Kafka with TLS and SASL
listeners: its Java client properties are translated and the query reads every record once
through them (in a metadata cluster entry, a ``kafka.*`` option, the ``singleCluster`` service's
properties); those without a librdkafka equivalent fail when the query starts and in
``dynamic-kafka validate``, naming the key, where it came from and what to write instead, never
a secret; the driver's log names the keys translated, never a value; a property librdkafka
refuses fails naming the option or the metadata it came from; Spark's own option names get a
did-you-mean.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from tests.integration.faults import fault_app, leaks, verbose_environment
from tests.integration.helpers import (
    numbered,
    produce,
    skip_without_local_kafka,
    source_options,
)
from tests.integration.queries import batch_read, keyed_rows, memory_query

from pyspark_dynamic_kafka.cli.commands import main
from pyspark_dynamic_kafka.kafka.config import client_properties
from pyspark_dynamic_kafka.testing import (
    set_scram_password,
    start_clusters,
    tls_client_properties,
)
from pyspark_dynamic_kafka.testing.kafka_config import PLAIN_PASSWORD, PLAIN_USER


@pytest.fixture(scope="module")
def east() -> Iterator[Any]:
    """Cluster east with its SASL_PLAINTEXT, SSL and SASL_SSL listeners, for the module (each
    test reads a topic of its own)."""
    skip_without_local_kafka("an Apache Kafka cluster with TLS and SASL listeners")
    with start_clusters(["east"], "kafka", scram=True, tls=True) as clusters:
        yield clusters["east"]


def _jaas(module: str, user: str, password: str) -> str:
    """A ``sasl.jaas.config`` as a Java client's configuration writes it."""
    return (
        f"org.apache.kafka.common.security.{module} required "
        f'username="{user}" password="{password}";'
    )


def _write(path: Path, clusters: dict[str, dict[str, str]], topic: str) -> Path:
    """A metadata file mapping stream ``orders`` to ``topic`` on every cluster."""
    streams = {"orders": [{"cluster": c, "topics": [topic]} for c in clusters]}
    path.write_text(yaml.safe_dump({"clusters": clusters, "streams": streams}))
    return path


def test_java_client_properties_are_translated_and_the_queries_read_through_them(
    spark: Any, east: Any, tmp_path: Path
) -> None:
    east.create_topic("translated", partitions=2)
    values = produce(east, "translated", numbered("v", 8), 2)
    password = f"SENTINEL-{uuid.uuid4().hex}"
    set_scram_password(east, "java-reader", password)
    store = east.tls_store
    sasl_ssl, ssl = east.listener_servers("SASL_SSL"), east.listener_servers("SSL")
    pem = {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(store.ca_location)}
    plain = _jaas("plain.PlainLoginModule", PLAIN_USER, PLAIN_PASSWORD)
    scram = _jaas("scram.ScramLoginModule", "java-reader", password)
    sasl = {"bootstrap.servers": sasl_ssl, "security.protocol": "SASL_SSL", **pem}
    tls = {"bootstrap.servers": ssl, "security.protocol": "SSL", **pem}
    # One Kafka cluster, five entries: each reads it through other Java client properties.
    clusters = {
        "jaas-plain": {**sasl, "sasl.mechanism": "PLAIN", "sasl.jaas.config": plain},
        "jaas-scram": {**sasl, "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": scram},
        "pkcs12-keystore": {
            **tls,
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(store.keystore),
            "ssl.keystore.password": store.password,
        },
        "pem-certificates": {
            "bootstrap.servers": ssl,
            "security.protocol": "SSL",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.certificates": store.ca_location.read_text(),
        },
        # The certificate names 127.0.0.1 only: as localhost, only no host name check connects.
        "no-host-check": {
            **tls,
            "bootstrap.servers": ssl.replace("127.0.0.1", "localhost"),
            "ssl.endpoint.identification.algorithm": "",
        },
    }
    meta = _write(tmp_path / "streams.yaml", clusters, "translated")
    rows = keyed_rows(batch_read(spark, source_options(meta, streamIds="orders")))
    assert sorted((cluster, value) for cluster, _, _, _, value in rows) == sorted(
        (cluster, value) for cluster in clusters for value in values
    )
    # Each translation carries weight: without it no client of that entry connects.
    with pytest.raises(KafkaException, match=r"ssl\.keystore"):
        wrong = {**clusters["pkcs12-keystore"], "ssl.keystore.password": "wrong"}
        AdminClient(client_properties(wrong))
    checked = {**clusters["no-host-check"]}
    del checked["ssl.endpoint.identification.algorithm"]
    with pytest.raises(KafkaException):
        AdminClient(client_properties(checked)).list_topics(timeout=5)

    # In a query's kafka.* options, and in the singleCluster service's properties.
    bare = {**sasl, "sasl.mechanism": "SCRAM-SHA-512"}
    bare_meta = _write(tmp_path / "bare.yaml", {"bare": bare}, "translated")
    options = source_options(bare_meta, streamIds="orders")
    rows = keyed_rows(batch_read(spark, {**options, "kafka.sasl.jaas.config": scram}))
    assert sorted(value for *_, value in rows) == sorted(values) and rows[0][0] == "bare"
    single = {f"metadataService.{k}": v for k, v in {**sasl, "sasl.jaas.config": plain}.items()}
    single |= {"metadataService.sasl.mechanism": "PLAIN", "metadataService.clusterId": "single"}
    options = {**options, "metadataService": "singleCluster", **single, "streamIds": "translated"}
    del options["metadataService.path"]  # every topic of the cluster is a stream of its name
    rows = keyed_rows(batch_read(spark, options))
    assert sorted(value for *_, value in rows) == sorted(values) and rows[0][0] == "single"


def test_java_client_properties_without_an_equivalent_fail_at_start_and_in_validate(
    spark: Any, east: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    east.create_topic("refused", partitions=1)
    produce(east, "refused", numbered("v", 2))
    secret = f"SENTINEL-{uuid.uuid4().hex}"
    krb5 = (
        f'com.sun.security.auth.module.Krb5LoginModule required keyTab="/k" principal="{secret}";'
    )
    oauth = (
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        f'clientId="reader" clientSecret="{secret}";'
    )
    # cluster -> (its Java properties, the key refused, what the message says to write)
    refused = {
        "jks-truststore": (
            {"ssl.truststore.location": "/etc/kafka/t.jks", "ssl.truststore.password": secret},
            "ssl.truststore.location",
            "keytool -list -rfc -keystore <truststore>",
        ),
        "jks-keystore": (
            {"ssl.keystore.type": "JKS", "ssl.keystore.location": "/etc/kafka/k.jks"},
            "ssl.keystore.type",
            "keytool -importkeystore -srckeystore keystore.jks",
        ),
        "kerberos": ({"sasl.jaas.config": krb5}, "sasl.jaas.config", "sasl.mechanism=GSSAPI"),
        "oauth": ({"sasl.jaas.config": oauth}, "sasl.jaas.config", "sasl.oauthbearer.method=oidc"),
        "callback-class": (
            {"sasl.login.callback.handler.class": "com.example.Handler"},
            "sasl.login.callback.handler.class",
            "librdkafka cannot load Java classes",
        ),
        "pkcs12-truststore": (
            {"ssl.truststore.type": "PKCS12", "ssl.truststore.location": "/etc/kafka/t.p12"},
            "ssl.truststore.location",
            "a PKCS12 trust store: librdkafka trusts CA certificates in PEM",
        ),
        "pem-keystore": (
            {"ssl.keystore.type": "PEM", "ssl.keystore.location": "/etc/kafka/k.pem"},
            "ssl.keystore.type",
            "ssl.certificate.location and ssl.key.location",
        ),
        "tls-versions": (
            {"ssl.enabled.protocols": "TLSv1.2,TLSv1.3"},
            "ssl.enabled.protocols",
            "OpenSSL negotiates the highest TLS version",
        ),
        "deserializer": (
            {"value.deserializer": "org.apache.kafka.common.serialization.ByteArrayDeserializer"},
            "value.deserializer",
            "librdkafka's clients take bytes",
        ),
    }
    base = tls_client_properties(east)
    meta = _write(
        tmp_path / "streams.yaml",
        {c: {**base, **java} for c, (java, _, _) in refused.items()},
        "refused",
    )

    assert main(["validate", "--metadata", str(meta)]) == 1
    said = capsys.readouterr().err
    assert f"{meta}: {len(refused)} problem(s):" in said and secret not in said
    for cluster, (_, key, fix) in refused.items():
        assert f'clusters.{cluster}["{key}"]: a Java client property with no librdkafka' in said
        assert fix in said, (cluster, said)

    # The stream fails when it starts, before its first micro-batch, every problem named.
    with memory_query(spark, source_options(meta, streamIds="orders")) as query:
        failure = query.failure()
        assert query.query.recentProgress == []
    assert secret not in failure
    for cluster, (_, key, fix) in refused.items():
        assert f'clusters.{cluster}["{key}"]' in failure and fix in failure, failure

    # As kafka.* options: the query is refused when it is defined.
    fine = _write(tmp_path / "fine.yaml", {"east": base}, "refused")
    for _, (java, key, fix) in refused.items():
        options = source_options(fine, streamIds="orders") | {
            f"kafka.{k}": v for k, v in java.items()
        }
        with pytest.raises(Exception) as failed:
            spark.readStream.format("dynamic_kafka").options(**options).load()
        message = str(failed.value)
        assert secret not in message
        if key == "value.deserializer":  # as Spark's own source refuses the option
            assert "Option 'kafka.value.deserializer'" in message and "from_json" in message
            continue
        assert f"Option 'kafka.{key}' is a Java client property with no librdkafka" in message
        assert fix in message


#: A format("kafka") job's option, its value there, and what the refusal points at instead.
_SPARK_OPTIONS = {
    "subscribe": ("orders", "Did you mean 'streamIds'?"),
    "subscribePattern": ("^ord", "Did you mean 'streamPattern'?"),
    "assign": ('{"orders": [0]}', "startingOffsets (and, for a batch read, endingOffsets)"),
    "kafka.bootstrap.servers": ("127.0.0.1:9092", "metadataService=singleCluster"),
}


@pytest.mark.parametrize("spark_option", list(_SPARK_OPTIONS))
def test_spark_kafka_option_names_get_a_did_you_mean(
    spark: Any, east: Any, tmp_path: Path, spark_option: str
) -> None:
    value, said = _SPARK_OPTIONS[spark_option]
    meta = _write(tmp_path / "streams.yaml", {"east": tls_client_properties(east)}, "refused")
    options = source_options(meta) | {spark_option: value}  # as a format("kafka") job has it
    with pytest.raises(Exception) as failed:
        spark.readStream.format("dynamic_kafka").options(**options).load()
    message = str(failed.value)
    assert f"'{spark_option}'" in message and said in message, message


def test_the_driver_log_names_the_translated_keys_never_their_values(
    east: Any, tmp_path: Path
) -> None:
    # A stream in a job of its own, every log at its most verbose: the driver's INFO line says
    # which Java keys were translated and where they came from; no password is anywhere. The
    # option's JAAS string holds its password by reference, resolved where clients are built.
    east.create_topic("logged", partitions=2)
    expected = produce(east, "logged", numbered("v", 6), 2)
    password = f"SENTINEL-{uuid.uuid4().hex}"
    set_scram_password(east, "logged-reader", password)
    cluster = {
        "bootstrap.servers": east.listener_servers("SASL_SSL"),
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(east.tls_store.ca_location),
        "debug": "conf,security",  # librdkafka logs its configuration too
    }
    meta = _write(tmp_path / "streams.yaml", {"east": cluster}, "logged")
    jaas = _jaas("scram.ScramLoginModule", "logged-reader", "${env:DK_TEST_LOGGED_PASSWORD}")
    options = source_options(meta, streamIds="orders", **{"kafka.sasl.jaas.config": jaas})
    env = {**verbose_environment(tmp_path / "site"), "DK_TEST_LOGGED_PASSWORD": password}
    with fault_app(tmp_path / "app", options, env=env) as app:
        app.wait_rows(len(expected))
        result = app.finish()
    assert result.error is None and result.values == sorted(expected)
    logs = result.logs
    [line] = {
        line.split(" INFO ", 1)[1]
        for line in logs.splitlines()
        if "pyspark_dynamic_kafka.kafka.config INFO" in line
    }
    assert line == (
        "Cluster 'east': Java client properties translated for librdkafka (kafka.* options: "
        "sasl.jaas.config (ScramLoginModule) -> sasl.username, sasl.password; the metadata: "
        "ssl.truststore.location -> ssl.ca.location; ssl.truststore.type -> (not needed))"
    )
    assert "sasl.password = [redacted]" in logs  # librdkafka's configuration dump
    assert len(result.progress) >= 1 and '"latestOffset"' in result.progress[-1]
    files = [p for p in app.checkpoint.rglob("*") if p.is_file()]
    assert any("offsets" in p.parts for p in files)
    assert leaks(password, logs, files) == []


def test_a_client_property_librdkafka_refuses_fails_naming_where_it_came_from(
    spark: Any, east: Any, tmp_path: Path
) -> None:
    east.create_topic("refusing", partitions=1)
    produce(east, "refusing", numbered("v", 2))
    secret = f"SENTINEL-{uuid.uuid4().hex}"
    meta = _write(tmp_path / "streams.yaml", {"east": tls_client_properties(east)}, "refusing")
    options = source_options(meta, streamIds="orders")
    # Refused on its own: the query is refused when it is defined.
    for key, value, said in (
        ("kafka.no.such.property", "1", 'No such configuration property: "no.such.property"'),
        ("kafka.sasl.mechanism", "NOPE", "Unsupported SASL mechanism: NOPE"),
    ):
        with pytest.raises(Exception) as failed:
            spark.readStream.format("dynamic_kafka").options(**options, **{key: value}).load()
        message = str(failed.value)
        assert f"Option '{key}': librdkafka refuses it (" in message and said in message, message

    # Refused with the cluster's own properties (SSL: librdkafka opens the key store): when
    # the query starts, naming the option, not the metadata, raised where it failed.
    store = {"ssl.keystore.location": str(tmp_path / "absent.p12"), "ssl.keystore.password": secret}
    refusing = {**options, **{f"kafka.{k}": v for k, v in store.items()}}
    said = "librdkafka refuses option 'kafka.ssl.keystore.location' (Failed to open"
    with pytest.raises(Exception) as failed:
        batch_read(spark, refusing).count()
    message = str(failed.value)
    assert f"could not create an admin client: {said}" in message, message
    assert "Fix the option or remove it." in message
    assert "in the metadata" not in message and "metadata's client properties" not in message
    assert "close()" not in message and secret not in message  # the traceback's frames
    with memory_query(spark, refusing) as query:
        failure = query.failure()  # at once: bad properties stay bad, no reachability to wait for
        assert query.query.recentProgress == []
    assert said in failure and "in the metadata" not in failure and secret not in failure

    # The same key in the metadata's cluster entry: named there.
    meta = _write(tmp_path / "own.yaml", {"east": {**tls_client_properties(east), **store}}, "x")
    with pytest.raises(Exception) as failed:
        batch_read(spark, source_options(meta, streamIds="orders")).count()
    message = str(failed.value)
    said = "librdkafka refuses client property 'ssl.keystore.location' of cluster 'east' in the"
    assert f"{said} metadata (Failed to open" in message and "Fix it in the metadata." in message
    assert secret not in message
