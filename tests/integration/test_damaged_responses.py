"""Damaged Fetch responses between a real Apache Kafka broker and the readers (issue 33): every
record is read exactly once with its exact bytes, and a cut connection costs seconds.

The broker advertises a :class:`~tests.integration.damaging_proxy.DamagingProxy` (a proxy is
the only way to damage a real broker's answers), so every client connection goes through it. It
damages the first Fetch response carrying a record batch after it is armed, in its first batch:

- ``flip``, a byte of a record's value inverted: the compiled core's direct path finds the
  CRC-32C mismatch and fetches the batch again, which comes whole; the Python reader's
  librdkafka (``check.crcs=true``) reports the mismatch and the task fails: the executor-level
  read is read again, as Spark retries a task, and the streaming query's task is retried by
  Spark (one failed task);
- ``huge``, the batch's length 2 GiB - 1: the direct path takes a length past
  ``receive.message.max.bytes`` for damage and fetches again; librdkafka takes the batch for a
  partial one and fetches again; neither fails;
- ``negative``, the batch's length -1: the direct path takes a length shorter than a batch's
  header for damage and fetches again; librdkafka fetches again about 0.5 s later (its fetch
  backoff after a response it could not parse); neither fails;
- ``cut``, the connection closed half way through the response: the direct path sends the
  request again on a new connection; librdkafka reconnects (about 1 s) and fetches again.

The direct path recovers from each without handing the partition to librdkafka
(``Reader.fallback()`` stays ``None``), and no read takes more than seconds (a cut was once
measured at 62 s: :data:`CUT_BOUND_S` is far under it).

Each reader's outcome per damage is :data:`OUTCOMES`, asserted as it is; the executor-level
reads run without Spark (``read_tasks.py``), the streaming queries in a Spark session of their
own whose tasks are retried (``fault_app.py``, ``local[2,4]``), all damages in turn in one query
per reader. One cluster and proxy serve the module.

A connection that goes silent (``silence``: responses swallowed, the connection left open) is
the compiled core's alone to test (issue 41): its direct path gives up on the request after
the request timeout (``request.timeout.ms``, the Java consumer's bound), drops the connection
and sends the request again on a new one, so the read ends long before librdkafka's
``socket.timeout.ms`` (60 s) would have fired, without handing anything to librdkafka.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.engine_roles import READERS
from tests.integration.damaging_proxy import DAMAGES, SILENCE, DamagingProxy
from tests.integration.faults import fault_app
from tests.integration.helpers import local_kafka_problem, source_options, write_metadata
from tests.integration.read_tasks import make_task, read_table

from pyspark_dynamic_kafka.engines import read_core as native
from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.errors import ReadError
from pyspark_dynamic_kafka.kafka.pool import consumer_config
from pyspark_dynamic_kafka.testing.apache_kafka import ApacheKafkaCluster
from pyspark_dynamic_kafka.testing.kafka_jars import tooling_problem

pytestmark = pytest.mark.usefixtures("empty_consumer_pool")

#: Records per topic, in batches of several records (an idempotent producer's, uncompressed).
RECORDS = 120
#: A damaged response, a cut included, costs seconds: far under the 62 s once measured for a cut.
CUT_BOUND_S = 20.0

#: librdkafka's socket.timeout.ms default: how long the direct path waited on a silent
#: connection before issue 41 (then handing the read to librdkafka).
SOCKET_TIMEOUT_S = 60.0

#: What each reader does with one damaged response: ``None`` when it reads on, else the words
#: of the read's failure (the task failed; read again, it reads everything).
OUTCOMES: dict[tuple[str, str], str | None] = {
    ("native", "flip"): None,
    ("native", "huge"): None,
    ("native", "negative"): None,
    ("native", "cut"): None,
    ("python", "flip"): "CRC",
    ("python", "huge"): None,
    ("python", "negative"): None,
    ("python", "cut"): None,
}


@pytest.fixture(scope="module")
def proxied() -> Iterator[tuple[ApacheKafkaCluster, DamagingProxy]]:
    """An Apache Kafka cluster ``east`` of one broker that advertises a damaging proxy (started
    first: the cluster's readiness check asks metadata through it)."""
    problem = local_kafka_problem() or tooling_problem()
    if problem is not None:
        pytest.skip(f"needs an Apache Kafka broker of its own behind a proxy: {problem}")
    clusters: list[ApacheKafkaCluster] = []
    proxy = DamagingProxy(lambda: ("127.0.0.1", clusters[0].listening_ports[0]))
    try:
        clusters.append(ApacheKafkaCluster("east", advertised_ports=[proxy.port]))
        yield clusters[0].start(), proxy
    finally:
        for cluster in clusters:
            cluster.stop()
        proxy.close()


def _produce(cluster: Any, topic: str, prefix: str) -> list[tuple[int, bytes, bytes]]:
    """``RECORDS`` records into a new topic of one partition, in batches of several; (offset,
    key, value) of each."""
    cluster.create_topic(topic, partitions=1)
    records = [(f"k{i}", f"{prefix}-{i:04d}-" + "x" * (i % 50)) for i in range(RECORDS)]
    placed = cluster.produce(topic, records, partition=0, config={"linger.ms": 50})
    return [(o, k.encode(), v.encode()) for (_, o), (k, v) in zip(placed, records, strict=True)]


def _read(task: Any) -> tuple[list[tuple[int, bytes, bytes]], str | None]:
    """The task's rows (offset, key, value), read again once when the first read fails, as
    Spark retries a task; the first read's failure, or ``None``."""
    failure = None
    try:
        table = read_table(task)
    except ReadError as exc:
        failure = str(exc)
        table = read_table(task)
    columns = (table[name].to_pylist() for name in ("offset", "key", "value"))
    rows = zip(*columns, strict=True)
    return sorted(rows), failure


def _fallbacks(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The compiled core's readers made from now on (their ``fallback()``: ``None`` while the
    direct path reads, else why librdkafka's consumer took over)."""
    module = core()
    made: list[Any] = []
    if module is not None:
        real = module.Reader

        def recorded(*args: Any, **kwargs: Any) -> Any:
            made.append(real(*args, **kwargs))
            return made[-1]

        monkeypatch.setattr(module, "Reader", recorded)
    return made


@pytest.mark.parametrize("damage", DAMAGES)
def test_an_executor_read_through_a_damaged_response_returns_every_record_once(
    proxied: tuple[Any, DamagingProxy], reader: str, damage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    east, proxy = proxied
    made = _fallbacks(monkeypatch)
    topic = f"batch-{damage}-{reader}"
    expected = _produce(east, topic, damage)
    before = len(proxy.damaged)
    proxy.arm(damage)
    started = time.monotonic()
    rows, failure = _read(make_task(east, reader, (topic, 0, 0, RECORDS)))
    took = time.monotonic() - started
    fallbacks = [r.fallback() for r in made]
    print(f"{reader} {damage}: {took:.2f} s, first read failed: {failure}, core: {fallbacks}")
    assert [kind for kind, _ in proxy.damaged[before:]] == [damage]  # the damage was done
    assert rows == expected
    outcome = OUTCOMES[(reader, damage)]
    assert (failure is None) == (outcome is None), failure
    assert outcome is None or outcome in str(failure)
    # The compiled core's direct path read it all, handing nothing to librdkafka.
    assert fallbacks == ([None] if reader == "native" else [])
    assert took < CUT_BOUND_S


@pytest.mark.parametrize("reader_option", READERS)
def test_a_stream_through_damaged_responses_returns_every_record_once(
    proxied: tuple[Any, DamagingProxy], tmp_path: Path, reader_option: str
) -> None:
    east, proxy = proxied
    topic = f"stream-{reader_option}"
    east.create_topic(topic, partitions=1)
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, {"east": east}, {"orders": [("east", [topic])]})
    options = source_options(meta, streamIds="orders", reader=reader_option)
    expected: list[str] = []
    with fault_app(tmp_path / "app", options, max_failures=4) as app:
        for damage in ("none", *DAMAGES):
            before = len(proxy.damaged)
            if damage != "none":
                proxy.arm(damage)
            values = [f"{damage}-{i:04d}-" + "y" * (i % 40) for i in range(RECORDS)]
            started = time.monotonic()
            east.produce(topic, [(f"k{i}", v) for i, v in enumerate(values)], partition=0)
            expected += values
            app.wait_rows(len(expected))
            took = time.monotonic() - started
            print(f"stream {reader_option} {damage}: {took:.2f} s")
            if damage != "none":
                assert [kind for kind, _ in proxy.damaged[before:]] == [damage]
                assert took < CUT_BOUND_S
        result = app.finish()
    assert result.error is None
    assert result.values == sorted(expected)  # each record once, its bytes as written
    failing = [d for d in DAMAGES if OUTCOMES[(reader_option, d)] is not None]
    assert result.failed_tasks == len(failing), result.logs[-3000:]


def test_a_silent_connection_is_given_up_after_the_request_timeout_and_made_again(
    proxied: tuple[Any, DamagingProxy],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    if core() is None:
        pytest.skip("the compiled core is not installed")
    east, proxy = proxied
    made = _fallbacks(monkeypatch)
    topic = "batch-silence-native"
    expected = _produce(east, topic, SILENCE)
    before = len(proxy.damaged)
    proxy.arm(SILENCE)
    # The poll timeout (which bounds every wait of the direct path) is far longer than the
    # socket timeout: only the request timeout ends the wait.
    task = make_task(
        east,
        "native",
        (topic, 0, 0, RECORDS),
        poll_timeout_ms=120_000,
        **{"request.timeout.ms": "3000"},
    )
    started = time.monotonic()
    with caplog.at_level(logging.INFO, logger=native.__name__):
        rows, failure = _read(task)
    took = time.monotonic() - started
    print(f"native silence: {took:.2f} s, first read failed: {failure}")
    assert [kind for kind, _ in proxy.damaged[before:]] == [SILENCE]  # a response swallowed
    assert failure is None
    assert rows == expected
    (reader,) = made
    assert reader.fallback() is None  # read directly, nothing handed to librdkafka
    # One request given up after 3,000 ms + fetch.wait.max.ms (the broker may hold a Fetch that
    # long), sent again on a new connection.
    (reconnect,) = reader.reconnects()
    held = int(consumer_config(task.properties[east.name])["fetch.wait.max.ms"])
    assert reconnect.startswith("broker 0 at 127.0.0.1:"), reconnect
    assert f"did not answer within {3000 + held} ms" in reconnect, reconnect
    logged = [r.getMessage() for r in caplog.records if r.name == native.__name__]
    assert any("sent a request again on a new connection" in m and reconnect in m for m in logged)
    assert took < SOCKET_TIMEOUT_S
