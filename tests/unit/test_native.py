"""The ``reader`` option and the compiled core's contract, without a broker.

The compiled core is real here (installed by ``make setup``); a broker is not needed for what
these tests check: the schema, the driver's per-cluster decision, and the poll-timeout error of a
cluster nobody answers for (a closed loopback port).
"""

from __future__ import annotations

import json
import logging
import time

import pytest

from pyspark_dynamic_kafka.errors import OptionsError, ReadError
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.kafka.pool import ConsumerPool, consumer_pool
from pyspark_dynamic_kafka.source.config.options import parse_options
from pyspark_dynamic_kafka.source.executor.arrow import arrow_schema
from pyspark_dynamic_kafka.source.executor.native import (
    core,
    native_clusters,
    native_consumer,
    native_problem,
)
from pyspark_dynamic_kafka.source.executor.read import read_task
from pyspark_dynamic_kafka.source.executor.task import OffsetRange, ReadSettings, ReadTask

needs_core = pytest.mark.skipif(core() is None, reason="the compiled core is not installed")

PLAIN = {"bootstrap.servers": "127.0.0.1:9092"}
KERBEROS = {**PLAIN, "security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"}


def test_reader_option_defaults_to_auto_and_names_bad_values() -> None:
    options = {"metadataService": "singleCluster", "metadataService.bootstrapServers": "h:1"}
    assert parse_options({**options, "streamIds": "s"}).reader == "auto"
    assert parse_options({**options, "streamIds": "s", "reader": "Native"}).reader == "native"
    with pytest.raises(OptionsError, match=r"reader.*'fast'|'fast'.*reader"):
        parse_options({**options, "streamIds": "s", "reader": "fast"})


def test_python_reader_reads_every_cluster_in_python() -> None:
    assert native_clusters("python", {"east": PLAIN, "west": KERBEROS}) == frozenset()


@needs_core
def test_schema_is_the_python_readers() -> None:
    module = core()
    assert module is not None
    for headers in (False, True):
        assert module.arrow_schema(headers) == arrow_schema(headers)


@needs_core
def test_auto_reads_natively_where_the_properties_allow_and_logs_the_rest_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        chosen = native_clusters("auto", {"east": PLAIN, "kerberos-west": KERBEROS})
        native_clusters("auto", {"east": PLAIN, "kerberos-west": KERBEROS})
    assert chosen == {"east"}
    lines = [r.getMessage() for r in caplog.records if "kerberos-west" in r.getMessage()]
    assert len(lines) == 1 and "GSSAPI" in lines[0]


@needs_core
def test_native_fails_at_query_start_naming_the_cluster_and_reason() -> None:
    with pytest.raises(OptionsError) as failed:
        native_clusters("native", {"east": PLAIN, "west": KERBEROS})
    assert "cluster 'west' cannot be read natively" in str(failed.value)
    assert "GSSAPI" in str(failed.value) and "reader=auto" in str(failed.value)


@needs_core
def test_properties_librdkafka_refuses_are_named_without_secrets() -> None:
    problem = native_problem({**PLAIN, "sasl.password": "hunter2", "fetch.wait.max.ms": "soon"})
    assert problem is not None
    assert "fetch.wait.max.ms" in problem and "hunter2" not in problem
    assert native_problem({**PLAIN, "no.such.property": "1"}) is not None
    assert native_problem(PLAIN) is None


@needs_core
def test_no_answer_fails_with_the_stuck_message() -> None:
    # Nothing listens on 127.0.0.1:9: the range never makes progress.
    settings = ReadSettings(1200, 0, frozenset({"east"}), native_clusters=frozenset({"east"}))
    properties = FrozenProperties({"bootstrap.servers": "127.0.0.1:9", "group.id": "g"})
    task = ReadTask((OffsetRange("east", "orders", 2, 5, 9),), {"east": properties}, settings)
    with pytest.raises(ReadError) as stuck:
        list(read_task(task))
    assert str(stuck.value) == (
        "No progress for kafkaConsumer.pollTimeoutMs=1200 ms: east/orders/2 range [5, 9) stuck "
        "at position -1001. The cluster may be unreachable or the records may have been deleted."
    )


@needs_core
def test_pooled_native_consumers_are_reused_and_never_lent_twice() -> None:
    module = core()
    assert module is not None
    pool = ConsumerPool()
    props = FrozenProperties({"bootstrap.servers": "127.0.0.1:9", "group.id": "g"})
    first = pool.acquire("east", props, 0, native_consumer)
    assert isinstance(first, module.Consumer)
    reader = module.Reader("east", first, [("orders", 0, 5, 9)], 60_000, False, True)
    assert not first.available()
    with pytest.raises(module.ReadError, match="in use by another reader"):
        module.Reader("east", first, [("orders", 0, 5, 9)], 60_000, False, True)
    reader.close()  # unassigned and given back
    assert first.available()
    pool.release("east", props, first, True, 60_000, 0, native_consumer)
    assert pool.acquire("east", props, 0, native_consumer) is first
    # The Python reader's consumers are another kind: never handed out for a native one.
    pool.release("east", props, first, True, 60_000, 0, native_consumer)
    python = pool.acquire("east", props, 0)
    assert not isinstance(python, module.Consumer)
    pool.release("east", props, python, False, 60_000, 0)
    pool.close_all()
    assert not first.available()
    with pytest.raises(module.ReadError, match="closed"):
        module.Reader("east", first, [("orders", 0, 5, 9)], 60_000, False, True)


@needs_core
def test_a_native_consumer_keeps_librdkafka_statistics() -> None:
    module = core()
    assert module is not None
    config = [("bootstrap.servers", "127.0.0.1:9"), ("group.id", "g"), ("client.id", "measured")]
    measured = module.Consumer([*config, ("statistics.interval.ms", "100")])
    quiet = module.Consumer(config)
    try:
        # A reader serves the queue while it reads (here: 2 s without progress, then it fails).
        reader = module.Reader("east", measured, [("orders", 0, 5, 9)], 2000, False, True)
        with pytest.raises(module.ReadError, match="No progress"):
            list(reader)
        document = measured.statistics()
        assert document is not None, "no statistics while the reader polled for 2 s"
        assert json.loads(document)["client_id"] == "measured"
        assert json.loads(document)["type"] == "consumer"
        # An idle consumer's queue is served by statistics() itself: a newer document comes.
        deadline = time.monotonic() + 60
        while measured.statistics() == document and time.monotonic() < deadline:
            time.sleep(0.05)
        newer = measured.statistics()
        assert newer is not None and json.loads(newer)["ts"] > json.loads(document)["ts"]
        assert quiet.statistics() is None  # statistics.interval.ms=0, librdkafka's default
    finally:
        measured.close()
        quiet.close()


@needs_core
def test_read_task_pools_the_native_consumer_unless_reading_failed() -> None:
    pool = consumer_pool()
    pool.close_all()
    settings = ReadSettings(1200, 60_000, frozenset({"east"}), native_clusters=frozenset({"east"}))
    properties = FrozenProperties({"bootstrap.servers": "127.0.0.1:9", "group.id": "pooled"})
    empty = ReadTask((OffsetRange("east", "orders", 2, 5, 5),), {"east": properties}, settings)
    assert list(read_task(empty)) == []
    assert pool.idle_count() == 1
    pooled = pool.acquire("east", properties, 0, native_consumer)
    pool.release("east", properties, pooled, True, 60_000, 0, native_consumer)
    assert list(read_task(empty)) == [] and pool.idle_count() == 1
    assert pool.acquire("east", properties, 0, native_consumer) is pooled
    pool.release("east", properties, pooled, True, 60_000, 0, native_consumer)
    stuck = ReadTask((OffsetRange("east", "orders", 2, 5, 9),), {"east": properties}, settings)
    with pytest.raises(ReadError, match="No progress"):
        list(read_task(stuck))  # read with the pooled consumer, which is then closed
    assert pool.idle_count() == 0 and not pooled.available()


@needs_core
def test_native_problem_asks_librdkafka_once_per_properties_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = core()
    assert module is not None
    asked: list[object] = []
    real = module.config_problem

    def counting(config: object) -> str | None:
        asked.append(config)
        return real(config)  # type: ignore[no-any-return]

    monkeypatch.setattr(module, "config_problem", counting)
    unique = {**PLAIN, "client.id": f"cache-{id(asked)}"}
    for _ in range(3):  # like three micro-batches' planning
        assert native_clusters("auto", {"east": FrozenProperties(unique)}) == {"east"}
    assert len(asked) == 1
    refused = {**unique, "fetch.wait.max.ms": "soon"}
    assert native_problem(refused) is not None and native_problem(refused) is not None
    assert len(asked) == 2
