"""Java client properties translated or refused (kafka/java_properties.py) and secrets by
reference (kafka/references.py), as a client's properties are built from them (kafka/config.py):
no broker needed. What a query, ``validate`` and a read make of them on Apache Kafka is in
tests/integration/test_coming_from_kafka.py and test_secret_references.py."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from pyspark_dynamic_kafka.errors import (
    ClientPropertyError,
    MetadataValidationError,
    OptionsError,
)
from pyspark_dynamic_kafka.kafka.admin import ClusterAdmin
from pyspark_dynamic_kafka.kafka.config import (
    check_client_options,
    client_properties,
    merge_client_properties,
    properties_fingerprint,
    redact_secrets,
)
from pyspark_dynamic_kafka.kafka.java_properties import translate
from pyspark_dynamic_kafka.kafka.pool import ClientPool
from pyspark_dynamic_kafka.kafka.references import read_properties_file, resolve

SECRET = "SENTINEL-java-secret-41c7"
PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'username="alice" password="{SECRET}";'
)
SCRAM_JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required\n"
    '  username=bob password="with \\"quotes\\" ${env:X}";'
)


def test_each_java_property_with_an_equivalent_is_translated_and_named_by_key_only() -> None:
    cases = {
        "plain": (
            {"sasl.jaas.config": PLAIN_JAAS},
            {"sasl.username": "alice", "sasl.password": SECRET},
        ),
        "scram": (
            {"SASL.JAAS.CONFIG": SCRAM_JAAS},
            {"sasl.username": "bob", "sasl.password": 'with "quotes" ${env:X}'},
        ),
        "pem trust store": (
            {
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": "/ca.pem",
                "ssl.truststore.password": "x",
            },
            {"ssl.ca.location": "/ca.pem"},
        ),
        "pem certificates": (
            {"ssl.truststore.type": "pem", "ssl.truststore.certificates": "-----BEGIN"},
            {"ssl.ca.pem": "-----BEGIN"},
        ),
        "pkcs12 key store": (
            {
                "ssl.keystore.type": "PKCS12",
                "ssl.keystore.location": "/k.p12",
                "ssl.keystore.password": SECRET,
            },
            {"ssl.keystore.location": "/k.p12", "ssl.keystore.password": SECRET},
        ),
        "no host name check": (
            {"ssl.endpoint.identification.algorithm": " "},
            {"ssl.endpoint.identification.algorithm": "none"},
        ),
    }
    for case, (java, librdkafka) in cases.items():
        translation = translate({"bootstrap.servers": "h:1", **java})
        assert translation.properties == {"bootstrap.servers": "h:1", **librdkafka}, case
        assert translation.problems == () and translation.translated, case
        assert SECRET not in " ".join(translation.translated), case


def test_java_properties_without_an_equivalent_are_refused_with_what_to_write() -> None:
    def jaas(module: str, options: str = "") -> str:
        return f"{module} required {options};"

    cases = {
        "sasl.jaas.config": [
            (jaas("com.sun.security.auth.module.Krb5LoginModule", 'keyTab="/k"'), "GSSAPI"),
            (
                jaas(
                    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
                    f'clientSecret="{SECRET}"',
                ),
                "sasl.oauthbearer.method=oidc",
            ),
            (jaas("com.example.Custom", f'password="{SECRET}"'), "librdkafka has no JAAS"),
            (f'broken "{SECRET}', "cannot be read as a JAAS configuration"),
            (PLAIN_JAAS + PLAIN_JAAS, "one login module"),
            (PLAIN_JAAS.replace('username="alice" ', ""), "lacks username"),
            (SCRAM_JAAS.replace(";", ' tokenauth="true";'), "tokenauth"),
        ],
        "ssl.truststore.location": [("/t.jks", "keytool -list -rfc")],
        "ssl.keystore.type": [("JKS", "keytool -importkeystore"), ("PEM", "ssl.key.location")],
        "ssl.keystore.key": [(SECRET, "ssl.key.pem")],
        "sasl.login.callback.handler.class": [("x.Y", "cannot load Java classes")],
        "ssl.enabled.protocols": [("TLSv1.3", "remove it")],
        "value.serializer": [("x.Y", "take bytes")],
    }
    for key, values in cases.items():
        for value, advice in values:
            [(named, said)] = translate({key: value}).problems
            assert named == key and advice in said, (key, said)
            assert SECRET not in said


def test_jaas_next_to_sasl_username_and_a_whole_reference_wait_for_the_client() -> None:
    both = translate({"sasl.jaas.config": PLAIN_JAAS, "sasl.username": "x"})
    assert both.problems == (
        (
            "sasl.jaas.config",
            "sasl.username set as well: write sasl.username and sasl.password only",
        ),
    )
    # A JAAS string behind a reference is translated where the client is built, once resolved.
    referred = {"sasl.jaas.config": "${env:DK_TEST_JAAS}"}
    assert translate(referred).problems == () and translate(referred).properties == referred


def test_a_java_properties_file_reads_as_java_reads_it(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets.properties"
    secrets.write_text(
        "# a comment \\\nnot=continued\n! another\n  east.password = p@ss=w:rd  \n"
        "west.password:two\\\n    lines\nspaced\\ key value\\tTAB\nunicode=\\u0041\nempty\n"
    )
    assert read_properties_file(str(secrets)) == {
        "not": "continued",
        "east.password": "p@ss=w:rd  ",
        "west.password": "twolines",
        "spaced key": "value\tTAB",
        "unicode": "A",
        "empty": "",
    }


def test_references_resolve_in_place_and_failures_name_key_and_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = tmp_path / "secrets.properties"
    secrets.write_text(f"east.password={SECRET}\n")
    monkeypatch.setenv("DK_TEST_USER", "reader")
    properties = {
        "sasl.username": "${env:DK_TEST_USER}",
        "sasl.password": f"${{file:{secrets}:east.password}}",
        "sasl.jaas.config": "",
        "client.id": "a ${env:DK_TEST_USER} b",
    }
    properties.pop("sasl.jaas.config")
    assert resolve(properties) == {
        "sasl.username": "reader",
        "sasl.password": SECRET,
        "client.id": "a reader b",
    }
    monkeypatch.setenv("DK_TEST_JAAS", PLAIN_JAAS)
    assert client_properties({"sasl.jaas.config": "${env:DK_TEST_JAAS}"}, "east") == {
        "sasl.username": "alice",
        "sasl.password": SECRET,
    }
    failures = {
        "${env:DK_TEST_MISSING}": "environment variable DK_TEST_MISSING is not set",
        f"${{file:{tmp_path / 'absent'}:k}}": "cannot be read (No such file or directory)",
        f"${{file:{secrets}:west.password}}": "no key 'west.password' (its keys: east.password)",
        "${vault:secret/x:password}": "only ${env:VAR} and ${file:",
    }
    for reference, said in failures.items():
        with pytest.raises(ClientPropertyError) as failed:
            client_properties({"sasl.password": reference}, "east")
        message = str(failed.value)
        assert message.startswith(
            f"Cluster 'east': client property 'sasl.password' refers to {reference}"
        )
        assert said in message and SECRET not in message
        assert not failed.value.retryable


def test_secrets_behind_references_and_in_jaas_are_masked_in_messages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DK_TEST_PASSWORD", SECRET)
    text = f"broker said: bad password {SECRET}"
    assert SECRET not in redact_secrets(text, {"sasl.password": "${env:DK_TEST_PASSWORD}"})
    assert SECRET not in redact_secrets(text, {"sasl.jaas.config": PLAIN_JAAS})
    # a reference that does not resolve masks nothing and raises nothing
    assert redact_secrets("x", {"sasl.password": "${env:DK_TEST_NOPE}"}) == "x"


def test_a_rotated_secret_gives_a_new_fingerprint_pooled_consumer_and_admin_client(
    tmp_path: Path,
) -> None:
    secrets = tmp_path / "secrets.properties"
    secrets.write_text("password=first\n")
    properties = {
        "bootstrap.servers": "127.0.0.1:1",
        "sasl.password": f"${{file:{secrets}:password}}",
    }
    before = properties_fingerprint(properties)
    made: list[str] = []

    class Consumer:
        def close(self) -> None:
            pass

    def factory(cluster_id: str, props: object) -> Consumer:
        made.append(client_properties(properties)["sasl.password"])
        return Consumer()

    pool = ClientPool()
    consumer = pool.acquire("east", properties, factory=factory)
    pool.release("east", properties, consumer, True, 60_000, factory=factory)
    assert pool.acquire("east", properties, factory=factory) is consumer  # unchanged: reused
    pool.release("east", properties, consumer, True, 60_000, factory=factory)
    secrets.write_text("password=second\n")
    assert properties_fingerprint(properties) != before
    assert pool.acquire("east", properties, factory=factory) is not consumer
    assert made == ["first", "second"]
    pool.close_all()

    admin = ClusterAdmin("east", properties, 1000)
    first = admin._admin()
    assert admin._admin() is first
    secrets.write_text("password=third\n")
    assert admin._admin() is not first


def test_merging_translates_each_side_logs_keys_once_and_refuses_naming_the_origin(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = {"bootstrap.servers": "h:1", "sasl.jaas.config": PLAIN_JAAS}
    options = {"ssl.endpoint.identification.algorithm": ""}
    with caplog.at_level(logging.INFO, logger="pyspark_dynamic_kafka"):
        merged = merge_client_properties(options, cluster, "log-east")
        assert merge_client_properties(options, cluster, "log-east") == merged
    assert dict(merged) == {
        "bootstrap.servers": "h:1",
        "sasl.username": "alice",
        "sasl.password": SECRET,
        "ssl.endpoint.identification.algorithm": "none",
    }
    lines = [r.getMessage() for r in caplog.records if "log-east" in r.getMessage()]
    assert lines == [
        "Cluster 'log-east': Java client properties translated for librdkafka (kafka.* "
        'options: ssl.endpoint.identification.algorithm="" -> none; the metadata: '
        "sasl.jaas.config (PlainLoginModule) -> sasl.username, sasl.password)"
    ]
    assert SECRET not in caplog.text
    with pytest.raises(
        MetadataValidationError,
        match=r"Cluster 'east' of the metadata: client "
        r"property 'ssl.keystore.type' is a Java client property",
    ):
        merge_client_properties({}, {"ssl.keystore.type": "JKS"}, "east")
    with pytest.raises(OptionsError, match=r"Option 'kafka.ssl.truststore.location' is a Java"):
        merge_client_properties({"ssl.truststore.location": "/t.jks"}, {}, "east")


def test_client_options_librdkafka_refuses_fail_when_the_query_is_defined() -> None:
    # Each on its own, as written (a Java key by its Java name), never with a secret's value.
    refused = {
        "no.such.property": ({"no.such.property": "1"}, 'No such configuration property: "no'),
        "fetch.max.bytes": ({"fetch.max.bytes": "lots"}, "Invalid value"),
        "sasl.mechanism": (
            {"sasl.mechanism": "NOPE", "sasl.password": SECRET},
            "Unsupported SASL mechanism: NOPE",
        ),
        "security.protocol": ({"security.protocol": "SASL_TLS"}, 'Invalid value "SASL_TLS"'),
    }
    for key, (options, said) in refused.items():
        with pytest.raises(OptionsError) as info:
            check_client_options(options, "kafka.")
        message = str(info.value)
        assert message.startswith(f"Option 'kafka.{key}': librdkafka refuses it ("), message
        assert said in message and SECRET not in message
    # Values with a reference wait for the client; fine options pass, and nothing connects.
    check_client_options(
        {"sasl.password": "${env:DK_UNSET_VARIABLE}", "fetch.max.bytes": "1048576"}, "kafka."
    )
    # What depends on the cluster's own properties waits for its first client: a query-wide
    # protocol or mechanism with the credentials in the metadata, a key store and its password.
    for fine in (
        {"security.protocol": "SASL_SSL"},
        {"sasl.mechanism": "SCRAM-SHA-512"},
        {"security.protocol": "SSL", "ssl.keystore.location": "/absent/keystore.p12"},
        {"ssl.truststore.type": "PEM", "ssl.truststore.location": "/absent/ca.pem"},
    ):
        check_client_options(fine, "kafka.")


def test_a_client_that_cannot_be_created_names_the_option_or_the_cluster() -> None:
    # The cluster speaks SSL: librdkafka opens the key store only then, when the client is made.
    cluster = {"bootstrap.servers": "h:1", "security.protocol": "SSL", "sasl.password": SECRET}
    options = {"ssl.keystore.location": "/absent/keystore.p12", "ssl.keystore.password": SECRET}
    merged = merge_client_properties(options, cluster, "east")
    admin = ClusterAdmin("east", merged, 1000, retries=3, query_wide=options)
    with pytest.raises(ClientPropertyError) as info:  # never retried: it cannot get better
        admin.list_topics(["orders"])
    message = str(info.value)
    assert "could not create an admin client: librdkafka refuses option " in message
    assert (
        "'kafka.ssl.keystore.location' (" in message and "Fix the option or remove it." in message
    )
    assert "metadata" not in message and SECRET not in message
    merged = merge_client_properties({}, {**cluster, **options}, "east")
    with pytest.raises(ClientPropertyError) as info:
        ClusterAdmin("east", merged, 1000, query_wide={"client.id": "x"}).list_topics(["orders"])
    message = str(info.value)
    assert "client property 'ssl.keystore.location' of cluster 'east' in the metadata" in message
    assert "Fix it in the metadata." in message and SECRET not in message
