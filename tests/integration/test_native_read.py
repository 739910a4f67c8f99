"""The compiled core's read path against the Python reader, on a real broker, without Spark.

Every test reads through :func:`~pyspark_dynamic_kafka.source.executor.read.read_task`, once with
the cluster in ``ReadSettings.native_clusters`` (the compiled core) and once without (the Python
reader); the differential test checks that both give identical Arrow tables.
"""

from __future__ import annotations

import logging
import pickle
import uuid
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import Producer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql.pandas.types import to_arrow_schema
from tests.integration.helpers import delete_records, numbered, requires_kafka, transactions

from pyspark_dynamic_kafka.errors import DataLossError, ReadError
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.kafka.pool import confluent_consumer, consumer_pool
from pyspark_dynamic_kafka.source.executor.arrow import spark_schema
from pyspark_dynamic_kafka.source.executor.native import core, native_consumer
from pyspark_dynamic_kafka.source.executor.read import read_task
from pyspark_dynamic_kafka.source.executor.task import OffsetRange, ReadSettings, ReadTask

pytestmark = [
    pytest.mark.usefixtures("empty_consumer_pool"),
    pytest.mark.skipif(core() is None, reason="the compiled core is not installed (NATIVE=0)"),
]

READERS = ("python", "native")


def _task(
    cluster: Any,
    reader: str,
    *ranges: tuple[str, int, int, int],
    poll_timeout_ms: int = 30_000,
    fail_on_data_loss: bool = True,
    include_headers: bool = False,
    **props: str,
) -> ReadTask:
    native = frozenset({cluster.name}) if reader == "native" else frozenset()
    settings = ReadSettings(
        poll_timeout_ms,
        60_000,
        frozenset({cluster.name}),
        fail_on_data_loss=fail_on_data_loss,
        include_headers=include_headers,
        native_clusters=native,
    )
    properties = FrozenProperties({"bootstrap.servers": cluster.bootstrap_servers, **props})
    spans = tuple(OffsetRange(cluster.name, t, p, s, e) for t, p, s, e in ranges)
    return pickle.loads(pickle.dumps(ReadTask(spans, {cluster.name: properties}, settings)))


def _read(task: ReadTask) -> pa.Table:
    schema = to_arrow_schema(spark_schema(task.settings.include_headers), timezone="UTC")
    batches = list(read_task(task))
    assert all(b.schema == schema for b in batches)
    return pa.Table.from_batches(batches, schema=schema)


@pytest.mark.parametrize("reader", READERS)
def test_exact_ranges_keys_and_schema(kafka_clusters: Any, reader: str) -> None:
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=2)
    east.produce("orders", [(f"k{i}", f"v{i}") for i in range(10)], partition=0)
    east.produce("orders", [(None, f"w{i}") for i in range(10)], partition=1)

    table = _read(_task(east, reader, ("orders", 0, 2, 7), ("orders", 1, 0, 3)))
    got = sorted(zip(table["partition"].to_pylist(), table["offset"].to_pylist(), strict=True))
    assert got == [(0, o) for o in range(2, 7)] + [(1, o) for o in range(3)]
    rows = {(r["partition"], r["offset"]): r for r in table.to_pylist()}
    assert rows[(0, 2)]["key"] == b"k2" and rows[(0, 2)]["value"] == b"v2"
    assert rows[(1, 0)]["key"] is None and rows[(1, 0)]["value"] == b"w0"
    assert {r["cluster"] for r in rows.values()} == {"east"}
    assert {r["topic"] for r in rows.values()} == {"orders"}
    assert {r["timestampType"] for r in rows.values()} == {0}  # CreateTime


@requires_kafka("read_committed skipping aborted transactions")
@pytest.mark.parametrize("reader", READERS)
def test_transaction_markers_and_aborted_records(kafka_clusters: Any, reader: str) -> None:
    east = kafka_clusters("east")["east"]
    east.create_topic("tx", partitions=1)
    transactions(east, "tx", [(numbered("committed", 5), True), (numbered("aborted", 3), False)])
    _, high = east.watermarks("tx")[0]
    assert high == 10  # 5 records, a commit marker, 3 records, an abort marker

    committed = {"isolation.level": "read_committed"}
    values = _read(_task(east, reader, ("tx", 0, 0, 6), **committed))["value"].to_pylist()
    assert values == [f"committed{i}".encode() for i in range(5)]
    # The whole range under read_committed: the aborted records are skipped, and the read ends
    # on the abort marker (offset 9) that never arrives as a record.
    whole = _read(_task(east, reader, ("tx", 0, 0, high), **committed))
    assert whole["offset"].to_pylist() == [0, 1, 2, 3, 4]
    uncommitted = _read(_task(east, reader, ("tx", 0, 0, high)))
    assert uncommitted["offset"].to_pylist() == [0, 1, 2, 3, 4, 6, 7, 8]
    assert _read(_task(east, reader, ("tx", 0, 5, 6))).num_rows == 0


@requires_kafka("DeleteRecords")
@pytest.mark.parametrize("reader", READERS)
def test_offsets_out_of_range_fail_or_resume(
    kafka_clusters: Any, reader: str, caplog: pytest.LogCaptureFixture
) -> None:
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=1)
    east.produce("orders", [(None, f"v{i}") for i in range(20)], partition=0)
    delete_records(east, "orders", {0: 12})

    with pytest.raises(DataLossError) as failed:
        _read(_task(east, reader, ("orders", 0, 5, 15)))
    assert "Data loss: offsets [5, 15) of east/orders/0 cannot be read" in str(failed.value)
    assert "failOnDataLoss=false" in str(failed.value)

    with caplog.at_level(logging.WARNING):
        table = _read(_task(east, reader, ("orders", 0, 5, 15), fail_on_data_loss=False))
    assert table["offset"].to_pylist() == [12, 13, 14]
    assert "offsets [5, 12) of east/orders/0" in caplog.text  # exactly the records lost

    gone = _read(_task(east, reader, ("orders", 0, 2, 10), fail_on_data_loss=False))
    assert gone.num_rows == 0


@pytest.mark.parametrize("reader", READERS)
def test_no_progress_fails_with_the_stuck_message(kafka_clusters: Any, reader: str) -> None:
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=1)
    east.produce("orders", [(None, f"v{i}") for i in range(3)], partition=0)
    assert east.watermarks("orders")[0] == (0, 3)
    # The range ends past what exists: the records never come.
    with pytest.raises(ReadError) as stuck:
        _read(_task(east, reader, ("orders", 0, 0, 10), poll_timeout_ms=1500))
    assert str(stuck.value).startswith("No progress for kafkaConsumer.pollTimeoutMs=1500 ms: ")
    assert "east/orders/0 range [0, 10) stuck at position 3." in str(stuck.value)


@pytest.mark.parametrize("reader", READERS)
def test_consecutive_tasks_reuse_the_pooled_consumer(kafka_clusters: Any, reader: str) -> None:
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=2)
    east.produce("orders", [(None, f"v{i}") for i in range(10)], partition=0)
    east.produce("orders", [(None, f"w{i}") for i in range(10)], partition=1)
    pool = consumer_pool()
    # Like consecutive micro-batches: partition 0 is paused at the end of each range, then read
    # again by the next task with the same consumer; partition 1 joins in the third.
    batches = [
        (("orders", 0, 0, 4),),
        (("orders", 0, 4, 7),),
        (("orders", 0, 7, 10), ("orders", 1, 2, 5)),
    ]
    seen: list[tuple[int, int]] = []
    consumers = set()
    for ranges in batches:
        task = _task(east, reader, *ranges)
        table = _read(task)
        seen += zip(table["partition"].to_pylist(), table["offset"].to_pylist(), strict=True)
        assert pool.idle_count() == 1
        properties = task.properties[east.name]
        factory = native_consumer if reader == "native" else confluent_consumer
        consumer = pool.acquire(east.name, properties, 0, factory)
        consumers.add(id(consumer))
        pool.release(east.name, properties, consumer, True, 60_000, 0, factory)
    assert sorted(seen) == [(0, o) for o in range(10)] + [(1, o) for o in range(2, 5)]
    assert len(consumers) == 1


# -- the differential test --------------------------------------------------------------------

_SIZES = st.sampled_from([0, 1, 10, 100, 1000, 64 << 10, 1 << 20])
_HEADER = st.tuples(
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=6),
    st.none() | st.binary(max_size=8),
)
_RECORD = st.fixed_dictionaries(
    {
        "key": st.none() | st.binary(max_size=16),
        "value": st.none() | _SIZES,
        "headers": st.none() | st.lists(_HEADER, min_size=1, max_size=3),
    }
)
#: Each chunk of records is produced plainly, or in a transaction that commits or aborts.
_CHUNKS = st.lists(
    st.tuples(
        st.lists(_RECORD, min_size=1, max_size=6), st.sampled_from(["plain", "commit", "abort"])
    ),
    min_size=1,
    max_size=4,
)


def _produce(cluster: Any, topic: str, codec: str, chunks: Sequence[tuple[list[Any], str]]) -> None:
    """Produce the chunks in order: plain ones by an ordinary producer, the others in a
    transaction that commits or aborts (a transactional producer cannot write outside one)."""
    config = {"compression.type": codec, "message.max.bytes": 4 << 20, "linger.ms": 5}
    plain = Producer(cluster.client_properties(**config))
    tx = Producer(cluster.client_properties(**config, **{"transactional.id": uuid.uuid4().hex}))
    tx.init_transactions(30)
    for n, (records, how) in enumerate(chunks):
        producer = plain if how == "plain" else tx
        if how != "plain":
            tx.begin_transaction()
        for i, record in enumerate(records):
            size = record["value"]
            value = None if size is None else bytes([(n * 7 + i) % 251]) * size
            producer.produce(
                topic, value=value, key=record["key"], headers=record["headers"], partition=0
            )
        producer.flush(60)
        if how == "commit":
            tx.commit_transaction(60)
        elif how == "abort":
            tx.abort_transaction(60)


@requires_kafka("read_committed skipping aborted transactions")
def test_both_readers_give_identical_tables(kafka_clusters: Any) -> None:
    east = kafka_clusters("east")["east"]

    @settings(
        max_examples=12,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )
    @given(
        chunks=_CHUNKS,
        codec=st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"]),
        isolation=st.sampled_from(["read_committed", "read_uncommitted"]),
        headers=st.booleans(),
        cut=st.tuples(st.floats(0, 1), st.floats(0, 1)),
    )
    def check(
        chunks: list[tuple[list[Any], str]],
        codec: str,
        isolation: str,
        headers: bool,
        cut: tuple[float, float],
    ) -> None:
        topic = f"diff-{uuid.uuid4().hex[:12]}"
        east.create_topic(topic, partitions=1, config={"max.message.bytes": str(4 << 20)})
        _produce(east, topic, codec, chunks)
        _, high = east.watermarks(topic)[0]
        start, end = sorted(round(c * high) for c in cut)
        props = {"isolation.level": isolation}
        tables = {
            reader: _read(
                _task(east, reader, (topic, 0, start, end), include_headers=headers, **props)
            )
            for reader in READERS
        }
        assert tables["native"].equals(tables["python"]), (start, end, codec, isolation)
        offsets = tables["native"]["offset"].to_pylist()
        assert all(start <= o < end for o in offsets) and offsets == sorted(set(offsets))

    check()
