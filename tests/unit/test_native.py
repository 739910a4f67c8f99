"""The compiled core's reader on an executor, without a broker (the driver's decision of the
engine is tests/unit/test_engine.py).

The compiled core is real here (installed by ``make setup``); a broker is not needed for what
these tests check: the schema, pooled consumers, the poll-timeout error of a cluster nobody
answers for (a closed loopback port), and the direct path's handover to librdkafka's consumer
when it cannot connect there.
"""

from __future__ import annotations

import json
import logging
import time

import pytest

from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.engines.read_core import direct_consumer
from pyspark_dynamic_kafka.errors import ReadError
from pyspark_dynamic_kafka.frozen import FrozenMapping
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.kafka.pool import ClientPool, consumer_pool
from pyspark_dynamic_kafka.source.executor.read import read_task
from pyspark_dynamic_kafka.source.executor.task import OffsetRange, ReadSettings, ReadTask
from pyspark_dynamic_kafka.source.schema import arrow_schema

needs_core = pytest.mark.skipif(core() is None, reason="the compiled core is not installed")


@needs_core
def test_schema_is_the_python_readers() -> None:
    module = core()
    assert module is not None
    for headers in (False, True):
        assert module.arrow_schema(headers) == arrow_schema(headers)


def _settings(engine: str, cache_timeout_ms: int = 0) -> ReadSettings:
    engines = FrozenMapping({"east": engine})
    return ReadSettings(1200, cache_timeout_ms, frozenset({"east"}), engines=engines)


@needs_core
@pytest.mark.parametrize("engine", ["direct", "librdkafka"])
def test_no_answer_fails_with_the_stuck_message(engine: str) -> None:
    # Nothing listens on 127.0.0.1:9: the range never makes progress.
    properties = FrozenProperties({"bootstrap.servers": "127.0.0.1:9", "group.id": "g"})
    task = ReadTask(
        (OffsetRange("east", "orders", 2, 5, 9),), {"east": properties}, _settings(engine)
    )
    with pytest.raises(ReadError) as stuck:
        list(read_task(task))
    assert str(stuck.value) == (
        "No progress for kafkaConsumer.pollTimeoutMs=1200 ms: east/orders/2 range [5, 9) stuck "
        "at position -1001. The cluster may be unreachable or the records may have been deleted."
    )


@needs_core
def test_a_handover_from_the_direct_path_is_logged_once_per_cluster_and_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Nothing listens on 127.0.0.1:9: the direct path cannot connect and hands the range to
    # librdkafka's consumer (which then makes no progress either). The cluster id and the
    # password are this test's own, so no earlier line of this process hides the warning.
    cluster, secret = f"east-{id(caplog)}", f"hunter-{id(caplog)}"
    engines = FrozenMapping({cluster: "direct"})
    settings = ReadSettings(1200, 0, frozenset({cluster}), engines=engines)
    client = {"bootstrap.servers": "127.0.0.1:9", "group.id": "g", "sasl.password": secret}
    properties = FrozenProperties(client)
    task = ReadTask((OffsetRange(cluster, "orders", 2, 5, 9),), {cluster: properties}, settings)
    with caplog.at_level(logging.INFO, logger="pyspark_dynamic_kafka"):
        for _ in range(2):
            with pytest.raises(ReadError, match="No progress"):
                list(read_task(task))
    lines = [r for r in caplog.records if "handed reading over" in r.getMessage()]
    assert [r.levelno for r in lines] == [logging.WARNING]
    assert lines[0].getMessage() == (
        f"Cluster '{cluster}': the direct fetch path handed reading over to librdkafka's "
        "consumer: connecting to 127.0.0.1:9 failed: Connection refused (os error 111)"
    )
    assert secret not in caplog.text


@needs_core
def test_no_handover_is_reported_for_a_cluster_planned_on_librdkafka(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = f"west-{id(caplog)}"  # no earlier line of this process names it
    settings = ReadSettings(
        1200, 0, frozenset({cluster}), engines=FrozenMapping({cluster: "librdkafka"})
    )
    properties = FrozenProperties({"bootstrap.servers": "127.0.0.1:9", "group.id": "g"})
    task = ReadTask((OffsetRange(cluster, "orders", 2, 5, 9),), {cluster: properties}, settings)
    with (
        caplog.at_level(logging.INFO, logger="pyspark_dynamic_kafka"),
        pytest.raises(ReadError, match="No progress"),
    ):
        list(read_task(task))
    assert "handed reading over" not in caplog.text


@needs_core
def test_pooled_direct_consumers_are_reused_and_never_lent_twice() -> None:
    module = core()
    assert module is not None
    pool = ClientPool()
    props = FrozenProperties({"bootstrap.servers": "127.0.0.1:9", "group.id": "g"})
    first = pool.acquire("east", props, 0, direct_consumer)
    assert isinstance(first, module.Consumer)
    reader = module.Reader("east", first, [("orders", 0, 5, 9)], 60_000, False, True)
    assert not first.available()
    with pytest.raises(module.ReadError, match="in use by another reader"):
        module.Reader("east", first, [("orders", 0, 5, 9)], 60_000, False, True)
    reader.close()  # unassigned and given back
    assert first.available()
    pool.release("east", props, first, True, 60_000, 0, direct_consumer)
    assert pool.acquire("east", props, 0, direct_consumer) is first
    # The Python reader's consumers are another kind: never handed out for a native one.
    pool.release("east", props, first, True, 60_000, 0, direct_consumer)
    python = pool.acquire("east", props, 0)
    assert not isinstance(python, module.Consumer)
    pool.release("east", props, python, False, 60_000, 0)
    pool.close_all()
    assert not first.available()
    with pytest.raises(module.ReadError, match="closed"):
        module.Reader("east", first, [("orders", 0, 5, 9)], 60_000, False, True)


@needs_core
def test_a_direct_consumer_keeps_librdkafka_statistics() -> None:
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
def test_read_task_pools_the_direct_consumer_unless_reading_failed() -> None:
    pool = consumer_pool()
    pool.close_all()
    settings = _settings("direct", cache_timeout_ms=60_000)
    properties = FrozenProperties({"bootstrap.servers": "127.0.0.1:9", "group.id": "pooled"})
    empty = ReadTask((OffsetRange("east", "orders", 2, 5, 5),), {"east": properties}, settings)
    assert list(read_task(empty)) == []
    assert pool.idle_count() == 1
    pooled = pool.acquire("east", properties, 0, direct_consumer)
    pool.release("east", properties, pooled, True, 60_000, 0, direct_consumer)
    assert list(read_task(empty)) == [] and pool.idle_count() == 1
    assert pool.acquire("east", properties, 0, direct_consumer) is pooled
    pool.release("east", properties, pooled, True, 60_000, 0, direct_consumer)
    stuck = ReadTask((OffsetRange("east", "orders", 2, 5, 9),), {"east": properties}, settings)
    with pytest.raises(ReadError, match="No progress"):
        list(read_task(stuck))  # read with the pooled consumer, which is then closed
    assert pool.idle_count() == 0 and not pooled.available()
