"""Secrets by reference on Apache Kafka: passwords in the metadata (a file, or the HTTP metadata
service, which serves the reference) as ``${env:VAR}`` and
``${file:/path/to/file.properties:key}`` are resolved where each client is built (the driver's
admin clients, the executors' consumers), a rotated file is read again at the next connection
(with ``assignment=group`` too, whose driver-side group member re-authenticates for the query's
whole life), and a reference that does not resolve fails the query at once naming the property
and the reference. No password appears in any log line (Python logging at DEBUG in every Python
process, Spark at INFO, librdkafka's configuration and security debug logs), progress report or
checkpoint file, as the secrets tests scan them (test_secrets.py, test_credential_rotation.py).
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.integration.faults import fault_app, leaks, verbose_environment
from tests.integration.helpers import (
    numbered,
    produce,
    secured_cluster,
    skip_without_local_kafka,
    source_options,
)
from tests.integration.queries import batch_read, memory_query

from pyspark_dynamic_kafka.testing import (
    sasl_ssl_scram_client_properties,
    scram_client_properties,
    scram_refusal,
    set_scram_password,
)

pytestmark = pytest.mark.usefixtures("empty_consumer_pool")

_PASSWORD_KEY = "file.reader.password"


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temp file + rename), as a secrets agent does."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _metadata(path: Path, clusters: dict[str, dict[str, str]]) -> Path:
    """Stream ``orders``: topic ``<cluster id>`` on each cluster (one Kafka cluster, one entry
    per way of authenticating)."""
    streams = {"orders": [{"cluster": c, "topics": [c]} for c in clusters]}
    _replace(path, yaml.safe_dump({"clusters": clusters, "streams": streams}))
    return path


def test_passwords_by_reference_read_rotate_and_leave_no_trace(
    kafka_clusters: Any, tmp_path: Path
) -> None:
    east = secured_cluster(kafka_clusters)
    by_env, by_file = "by-env", "by-file"
    for topic in (by_env, by_file):
        east.create_topic(topic, partitions=2)
    env_password = f"ENV-{uuid.uuid4().hex}"
    old, new = f"OLD-{uuid.uuid4().hex}", f"NEW-{uuid.uuid4().hex}"
    set_scram_password(east, "env-reader", env_password)
    set_scram_password(east, "file-reader", old)
    secrets = tmp_path / "secrets" / "kafka.properties"
    secrets.parent.mkdir()
    _replace(secrets, f"# the file's readers' passwords\n{_PASSWORD_KEY}={old}\n")
    debug = {"debug": "conf,security"}  # librdkafka logs its configuration too
    meta = _metadata(
        tmp_path / "streams.yaml",
        {
            by_env: {  # SASL_SSL, SCRAM-SHA-512
                **sasl_ssl_scram_client_properties(
                    east, "env-reader", "${env:DK_TEST_EAST_PASSWORD}", "SCRAM-SHA-512"
                ),
                **debug,
            },
            by_file: {  # SASL_PLAINTEXT, SCRAM-SHA-256
                **scram_client_properties(
                    east, "file-reader", f"${{file:{secrets}:{_PASSWORD_KEY}}}"
                ),
                **debug,
            },
        },
    )
    written = meta.read_text()
    expected = produce(east, by_env, numbered("e", 6), 2) + produce(
        east, by_file, numbered("f", 6), 2
    )
    # No pooling: every task builds its consumers, and so reads the file again.
    options = source_options(meta, streamIds="orders", **{"kafkaConsumer.cacheTimeoutMs": "0"})
    env = {**verbose_environment(tmp_path / "site"), "DK_TEST_EAST_PASSWORD": env_password}
    with fault_app(tmp_path / "app", options, env=env) as app:
        app.wait_rows(len(expected))
        set_scram_password(east, "file-reader", new)  # from now on the old one is refused
        _replace(secrets, f"{_PASSWORD_KEY}={new}\n")  # the metadata does not change
        expected += produce(east, by_file, numbered("g", 6), 2)
        app.wait_rows(len(expected))
        refusal = scram_refusal(east, "file-reader", old)
        result = app.finish()
    assert result.error is None
    assert result.values == sorted(expected)
    assert "Authentication failed" in refusal
    assert meta.read_text() == written  # references only, untouched

    # The logs were as verbose as they get, and no password is anywhere.
    logs = result.logs
    assert "'pyspark.worker']" in logs  # Python workers log at DEBUG
    assert "INFO MicroBatchExecution" in logs  # Spark's own log
    assert "sasl.password = [redacted]" in logs  # librdkafka's configuration dump
    assert len(result.progress) >= 2 and '"latestOffset"' in result.progress[-1]
    files = [p for p in app.checkpoint.rglob("*") if p.is_file()]
    assert any("offsets" in p.parts for p in files)
    for password in (env_password, old, new):
        assert leaks(password, logs, files) == []


def test_group_members_read_a_rotated_password_file_again(
    kafka_clusters: Any, tmp_path: Path
) -> None:
    # assignment=group: the driver's group member holds its connections for the whole query.
    # The broker ends each authenticated session after connections.max.reauth.ms (KIP-368), so
    # the member authenticates again and again: after the file is rotated, with its new password.
    skip_without_local_kafka("an Apache Kafka cluster with a SASL listener of its own")
    lifetime_s, session_s = 3, 10
    east = kafka_clusters(
        "east", scram=True, broker_config={"connections.max.reauth.ms": str(lifetime_s * 1000)}
    )["east"]
    east.create_topic("grouped", partitions=2)
    old, new = f"OLD-{uuid.uuid4().hex}", f"NEW-{uuid.uuid4().hex}"
    set_scram_password(east, "group-reader", old)
    secrets = tmp_path / "kafka.properties"
    _replace(secrets, f"{_PASSWORD_KEY}={old}\n")
    reference = f"${{file:{secrets}:{_PASSWORD_KEY}}}"
    properties = {**scram_client_properties(east, "group-reader", reference), "debug": "security"}
    meta = _metadata(tmp_path / "streams.yaml", {"grouped": properties})
    expected = produce(east, "grouped", numbered("a", 6), 2)
    group = {
        "kafka.group.id": f"rotating-{uuid.uuid4().hex[:8]}",
        "kafka.session.timeout.ms": str(session_s * 1000),
        # between the broker's change and the file's, the member's reconnections are refused
        "kafka.reconnect.backoff.max.ms": "1000",
    }
    options = source_options(meta, streamIds="orders", assignment="group", **group)
    with fault_app(tmp_path / "app", options, env=verbose_environment(tmp_path / "site")) as app:
        app.wait_rows(len(expected))
        set_scram_password(east, "group-reader", new)  # from now on the old one is refused
        _replace(secrets, f"{_PASSWORD_KEY}={new}\n")
        # Records produced over several session lifetimes and group session timeouts: a member
        # that authenticated with the old password would be out of the group, and read nothing.
        rotated, rounds = time.monotonic(), 0
        while rounds < 3 or time.monotonic() - rotated < 3 * (lifetime_s + session_s):
            expected += produce(east, "grouped", numbered(f"r{rounds}-", 4), 2)
            app.wait_rows(len(expected))
            rounds += 1
        refusal = scram_refusal(east, "group-reader", old)
        result = app.finish()
    assert result.error is None
    assert result.values == sorted(expected)
    assert "Authentication failed" in refusal
    logs = result.logs
    assert f"Received session lifetime {lifetime_s * 1000} ms from broker" in logs  # KIP-368
    # The driver's member took the file's new password, and kept its partitions throughout.
    said = "Group member on 'grouped': its secret references changed; its next authentication"
    assert said in logs
    assert "the membership expired" not in logs
    files = [p for p in app.checkpoint.rglob("*") if p.is_file()]
    for password in (old, new):
        assert leaks(password, logs, files) == []


def test_a_reference_that_does_not_resolve_fails_the_query_naming_key_and_reference(
    spark: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    east = secured_cluster(kafka_clusters)
    east.create_topic("unresolved", partitions=1)
    produce(east, "unresolved", numbered("v", 2))
    secrets = tmp_path / "kafka.properties"
    secrets.write_text("other.password=SENTINEL-not-this-one\n")
    variable = f"DK_TEST_UNSET_{uuid.uuid4().hex[:8].upper()}"
    failures = {
        f"${{env:{variable}}}": f"but the environment variable {variable} is not set",
        f"${{file:{tmp_path / 'absent.properties'}:password}}": "cannot be read (No such file",
        f"${{file:{secrets}:password}}": f"but {secrets} has no key 'password'",
    }
    for index, (reference, said) in enumerate(failures.items()):
        properties = sasl_ssl_scram_client_properties(east, "nobody", reference, "SCRAM-SHA-512")
        meta = _metadata(tmp_path / f"streams{index}.yaml", {"unresolved": properties})
        expected = f"Cluster 'unresolved': client property 'sasl.password' refers to {reference}"
        if index == 0:  # a stream fails when it starts, not after unreachableClusterTimeoutMs
            with memory_query(spark, source_options(meta, streamIds="orders")) as query:
                message = query.failure()
                assert query.query.recentProgress == []
        else:
            with pytest.raises(Exception) as failed:
                batch_read(spark, source_options(meta, streamIds="orders")).count()
            message = str(failed.value)
        assert expected in message and said in message, message
        assert "SENTINEL" not in message


def test_references_served_by_the_http_metadata_service_resolve_where_clients_are_built(
    spark: Any, kafka_clusters: Any, metadata_server: Any, tmp_path: Path
) -> None:
    east = secured_cluster(kafka_clusters)
    east.create_topic("served", partitions=2)
    password = f"SENTINEL-{uuid.uuid4().hex}"
    set_scram_password(east, "served-reader", password)
    secrets = tmp_path / "kafka.properties"
    _replace(secrets, f"{_PASSWORD_KEY}={password}\n")
    reference = f"${{file:{secrets}:{_PASSWORD_KEY}}}"
    properties = sasl_ssl_scram_client_properties(east, "served-reader", reference, "SCRAM-SHA-512")
    server = metadata_server(_metadata(tmp_path / "streams.yaml", {"served": properties}))
    expected = produce(east, "served", numbered("h", 6), 2)
    # The server answers with the reference, as written: never what it resolves to.
    status, _, body = server.get("/v1/streams?id=orders")
    assert status == 200 and reference in body.decode() and password not in body.decode()
    options = {
        "metadataService": "http",
        "metadataService.url": server.url,
        "streamIds": "orders",
        "startingOffsets": "earliest",
    }
    rows = batch_read(spark, options).selectExpr("cast(value as string) as value").collect()
    assert sorted(row.value for row in rows) == sorted(expected)
    assert password not in server.log_text()
