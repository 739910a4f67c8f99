"""The sink's ``writer`` option: the driver's choice between the compiled core and confluent-kafka,
without a broker (the core is real, installed by ``make setup``; what it produces is checked on
Apache Kafka in tests/integration/test_sink_write.py)."""

from __future__ import annotations

import logging

import pyarrow as pa
import pytest

from pyspark_dynamic_kafka.engines.choice import Engine, write_engine
from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.errors import OptionsError, WriteError
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.sink.config.options import parse_sink_options
from pyspark_dynamic_kafka.sink.executor.produce import produce_batches
from pyspark_dynamic_kafka.sink.executor.task import WriteTask
from pyspark_dynamic_kafka.sink.route import WriteRoute

needs_core = pytest.mark.skipif(core() is None, reason="the compiled core is not installed")

BASE = {"metadataService": "file", "metadataService.path": "/m.yaml", "streamId": "orders"}
PLAIN = {"bootstrap.servers": "127.0.0.1:9"}
KERBEROS = {**PLAIN, "security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"}


def _task(properties: dict[str, str], cluster: str = "east", **kwargs: object) -> WriteTask:
    route = WriteRoute("orders", cluster, frozenset({"orders"}), FrozenProperties(properties))
    return WriteTask(route, **kwargs)  # type: ignore[arg-type]


def test_writer_option_defaults_to_auto_and_names_bad_values() -> None:
    assert parse_sink_options(BASE).writer == "auto"
    assert parse_sink_options({**BASE, "writer": "Native"}).writer == "native"
    with pytest.raises(OptionsError, match=r"'fast'.*writer|writer.*'fast'"):
        parse_sink_options({**BASE, "writer": "fast"})


def _engine(writer: str, task: WriteTask, exactly_once: bool = False) -> Engine:
    return write_engine(writer, task.route.cluster_id, task.producer_properties(), exactly_once)


def test_python_writer_never_asks_the_core() -> None:
    assert _engine("python", _task(PLAIN)) == Engine("python", "writer=python")
    assert _engine("python", _task(KERBEROS)) == Engine("python", "writer=python")


@needs_core
def test_auto_writes_natively_where_the_properties_allow_and_logs_the_rest_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        assert _engine("auto", _task(PLAIN)) == Engine("direct")
        assert _engine("auto", _task(KERBEROS, "kerberos-west")).name == "python"
        assert _engine("auto", _task(KERBEROS, "kerberos-west")).name == "python"
    # (the direct path's line for 'east', once per process, may come from an earlier test)
    lines = [
        r.getMessage() for r in caplog.records if "writer=auto: cluster 'kerb" in r.getMessage()
    ]
    assert lines == [
        "writer=auto: cluster 'kerberos-west' is written with confluent-kafka: SASL GSSAPI "
        "(Kerberos) needs Cyrus SASL, which the compiled core does not link"
    ]


@needs_core
def test_native_writer_refuses_a_cluster_it_cannot_serve_naming_it_without_secrets() -> None:
    secret = {**PLAIN, "sasl.password": "hunter2", "batch.num.messages": "many"}
    with pytest.raises(OptionsError) as caught:
        _engine("native", _task(secret, "west"))
    text = str(caught.value)
    assert "writer=native: cluster 'west' cannot be written natively" in text
    assert "batch.num.messages" in text and "hunter2" not in text


@needs_core
def test_a_bad_batch_fails_naming_the_cluster_before_anything_is_sent() -> None:
    # a closed loopback port: nothing is sent, the column check fails first
    batch = pa.record_batch({"value": pa.array([1, 2], pa.int64())})
    with pytest.raises(WriteError) as caught:
        produce_batches(_task(PLAIN, flush_timeout_ms=1000, engine="librdkafka"), iter([batch]))
    text = str(caught.value)
    assert "cluster 'east' (stream 'orders')" in text
    assert 'column "value" must be string or binary, got Int64' in text


@needs_core
def test_either_guarantee_writes_over_the_direct_path_where_it_serves_the_producer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        assert _engine("native", _task(PLAIN, "d1")) == Engine("direct")
        # exactlyOnce too: its transactions are the direct path's own
        exactly = _engine("native", _task(PLAIN, "d2"), exactly_once=True)
        assert exactly == Engine("direct")
        # a transaction's configuration the direct path does not serve: librdkafka's
        lz4 = {**PLAIN, "compression.type": "lz4"}
        exactly_lz4 = _engine("native", _task(lz4, "d5"), exactly_once=True)
        assert exactly_lz4 == Engine("librdkafka", "compression.type is not none")
        compressed = _engine("native", _task({**PLAIN, "compression.type": "lz4"}, "d3"))
        assert compressed == Engine("librdkafka", "compression.type is not none")
        # murmur2 puts keyed rows where murmur2_random does: librdkafka's producer, forced
        forced = _engine("auto", _task({**PLAIN, "partitioner": "murmur2"}, "d4"))
        assert forced.name == "librdkafka" and "partitioner is murmur2" in str(forced.reason)
    lines = [r.getMessage() for r in caplog.records if "cluster 'd" in r.getMessage()]
    assert lines[0] == (
        "writer=native: cluster 'd1' is written with the compiled core's direct produce path "
        "(its own Produce requests)"
    )
    assert lines[1] == (
        "writer=native: cluster 'd2' is written with the compiled core's direct produce path "
        "(its own Produce requests)"
    )
