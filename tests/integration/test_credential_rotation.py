"""Credentials rotated under a running query: SCRAM on Apache Kafka.

The job reads cluster east through its SASL_PLAINTEXT listener (SCRAM-SHA-256) as user
``reader``, or, when the suite's clients use SASL_SSL (``DYNAMIC_KAFKA_TEST_LISTENER=SASL_SSL``,
``make test-secure``), through its SASL_SSL listener with SCRAM-SHA-512. The password
is changed on the broker (AlterUserScramCredentials), then in the metadata file: the next
micro-batch connects with the new password, without a restart (new client properties give the
driver a new admin client and the executors new consumers), and the old password is refused
from then on. Neither password appears in any log line of the job (Python logging at DEBUG in
every Python process, Spark at INFO, librdkafka's configuration and security debug logs), in
its progress reports or in its checkpoint.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from tests.integration.faults import (
    fault_app,
    leaks,
    loaded_core,
    native_expected,
    python_workers,
    verbose_environment,
)
from tests.integration.helpers import (
    local_kafka_problem,
    numbered,
    produce,
    source_options,
    write_metadata,
)
from tests.integration.queries import read_paths

from pyspark_dynamic_kafka.testing import (
    scram_client_properties,
    scram_refusal,
    set_scram_password,
)
from pyspark_dynamic_kafka.testing.errors import LISTENER_ENV_VAR
from pyspark_dynamic_kafka.testing.kafka_jars import tooling_problem
from pyspark_dynamic_kafka.testing.tls import sasl_ssl_scram_client_properties


def test_a_password_rotated_in_the_metadata_is_used_by_the_next_micro_batch(
    kafka_clusters: Any, tmp_path: Path
) -> None:
    problem = local_kafka_problem() or tooling_problem()
    if problem is not None:
        pytest.skip(f"needs an Apache Kafka cluster with a SASL listener of its own: {problem}")
    secure = os.environ.get(LISTENER_ENV_VAR, "").strip().upper() == "SASL_SSL"
    east = kafka_clusters("east", scram=True, tls=secure)["east"]
    east.create_topic("orders", partitions=2)
    old, new = f"OLD-{uuid.uuid4().hex}", f"NEW-{uuid.uuid4().hex}"
    meta = tmp_path / "streams.yaml"

    def publish(password: str) -> None:
        """The metadata of east: its SASL listener, as reader with ``password``."""
        if secure:
            properties = sasl_ssl_scram_client_properties(east, "reader", password, "SCRAM-SHA-512")
        else:
            properties = scram_client_properties(east, "reader", password)
        extra = {"east": {**properties, "debug": "conf,security"}}
        write_metadata(meta, {"east": east}, {"orders": [("east", ["orders"])]}, extra)

    set_scram_password(east, "reader", old)
    publish(old)
    expected = produce(east, "orders", numbered("a", 6), 2)
    options = source_options(meta, streamIds="orders", **{"kafkaConsumer.cacheTimeoutMs": "60000"})
    env = verbose_environment(tmp_path / "site")
    with fault_app(tmp_path / "app", options, env=env) as app:
        app.wait_rows(len(expected))
        # reader=auto: the job's workers read with the compiled core when it is installed.
        native = loaded_core(python_workers(app.process.pid))
        assert bool(native) == native_expected(), native
        set_scram_password(east, "reader", new)  # from now on the old one is refused
        publish(new)
        expected += produce(east, "orders", numbered("b", 6), 2)
        app.wait_rows(len(expected))
        refusal = scram_refusal(east, "reader", old)
        result = app.finish()
    assert result.error is None
    assert result.values == sorted(expected)
    if native_expected():  # the direct fetch path read east, before and after the rotation
        progress = [json.loads(line) for line in result.progress]
        assert read_paths(progress) == {"east": {"direct"}}
    assert "Authentication failed" in refusal and "invalid credentials" in refusal

    # The logs were as verbose as they get, and neither password is anywhere.
    logs = result.logs
    assert "'pyspark.worker']" in logs  # Python workers log at DEBUG
    # the stream's driver-side Python (its first partitions entering)
    assert "pyspark_dynamic_kafka.source.driver.cluster_view INFO" in logs
    assert "INFO MicroBatchExecution" in logs  # Spark's own log
    assert "sasl.password = [redacted]" in logs  # librdkafka's configuration dump
    assert len(result.progress) >= 2 and '"latestOffset"' in result.progress[-1]
    files = [p for p in app.checkpoint.rglob("*") if p.is_file()]
    assert any("offsets" in p.parts for p in files)
    for password in (old, new):
        assert leaks(password, logs + refusal, files) == []
