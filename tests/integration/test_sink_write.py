"""The sink, atLeastOnce: ``df.write`` and ``writeStream`` to ``dynamic_kafka`` on real Kafka
and real Spark, with exact record sets; the route follows the metadata between micro-batches.
Every test runs with both writers (``writer=python`` and ``writer=native``)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
from tests.engine_roles import WRITERS, skip_without_core
from tests.integration.helpers import EstateFactory, wait_until
from tests.integration.sink_records import (
    Record,
    drop_file,
    java_partitions,
    keyed_rows,
    read_messages,
    read_topic,
    sink_options,
    write_dead_route,
    write_routes,
)

from pyspark_dynamic_kafka.sink.executor.produce import STAMP_HEADERS


@pytest.fixture(params=WRITERS)
def writer(request: pytest.FixtureRequest) -> str:
    """Every test here runs with both writers: confluent-kafka and the compiled core."""
    skip_without_core(request.param)
    return str(request.param)


def _frame(spark: Any, rows: list[tuple[Any, ...]], schema: str) -> Any:
    return spark.createDataFrame(rows, schema)


def _save(df: Any, options: dict[str, str]) -> None:
    df.write.format("dynamic_kafka").options(**options).mode("append").save()


def test_batch_write_puts_every_row_on_the_route(
    writer: str, spark: Any, estate: EstateFactory
) -> None:
    setup = estate("east", "west", partitions=0)
    for cluster in setup.clusters.values():
        cluster.create_topic("orders", partitions=3)
        cluster.create_topic("audit", partitions=1)
    write_routes(
        setup.meta,
        setup.clusters,
        [("east", ["orders"], False), ("west", ["orders", "audit"], True)],
    )
    rows = [
        (f"k{i}", f"v{i}", "orders" if i % 4 else "audit", i % 3 if i % 4 else 0) for i in range(40)
    ]
    df = _frame(spark, rows, "key string, value string, topic string, partition int")
    df = df.selectExpr(
        "key",
        "CAST(value AS BINARY) AS value",
        "topic",
        "partition",
        "array(named_struct('key', 'id', 'value', CAST(key AS BINARY))) AS headers",
    ).repartition(3)
    _save(df, sink_options(setup.meta, writer=writer))

    def expected(topic: str) -> list[Record]:
        return sorted(Record(v, k, p, (("id", k.encode()),)) for k, v, t, p in rows if t == topic)

    assert sorted(read_topic(setup["west"], "orders")) == expected("orders")
    assert sorted(read_topic(setup["west"], "audit")) == expected("audit")
    assert read_topic(setup["east"], "orders") == []
    assert read_topic(setup["east"], "audit") == []


def test_single_cluster_stream_needs_no_marker_and_keys_are_optional(
    writer: str, spark: Any, estate: EstateFactory
) -> None:
    setup = estate("east", partitions=2)  # metadata: orders -> east/orders, nothing marked
    df = spark.range(25).selectExpr("CAST(id AS STRING) AS value")
    _save(df, sink_options(setup.meta, writer=writer))
    records = read_topic(setup["east"], "orders")
    assert sorted(int(r.value) for r in records) == list(range(25))
    assert {r.key for r in records} == {None}


def test_every_column_kind_is_written_exactly(
    writer: str, spark: Any, estate: EstateFactory
) -> None:
    """Binary keys with nulls, string values, headers (none, one, two, a null value), a
    partition column with nulls (the partitioner's choice), a topic column with nulls (the
    route's only topic) and dedupe headers after a row's own."""
    setup = estate("east", partitions=4)  # metadata: orders -> east/orders, nothing marked
    rows, df = keyed_rows(
        spark,
        48,
        3,
        "IF(id % 5 = 0, NULL, 'orders') AS topic",
        "IF(id % 2 = 0, id % 4, NULL) AS partition",
        "CASE id % 3 WHEN 0 THEN NULL WHEN 1 THEN array(named_struct('key', 'a', 'value', "
        "CAST(value AS BINARY))) ELSE array(named_struct('key', 'a', 'value', CAST(NULL AS "
        "BINARY)), named_struct('key', 'b', 'value', CAST(key AS BINARY))) END AS headers",
    )
    _save(df.repartition(2), sink_options(setup.meta, writer=writer))

    def own(i: int, key: str | None, value: str) -> tuple[tuple[str, Any], ...]:
        if i % 3 == 1:
            return (("a", value.encode()),)
        if i % 3 == 2:
            return (("a", None), ("b", (key or "").encode()))
        return ()

    records = read_topic(setup["east"], "orders")
    got = sorted(records, key=lambda r: r.value)
    expected = sorted(((v, k, own(i, k, v)) for i, k, v in rows), key=lambda r: r[0])
    assert [(r.value, r.key, r.headers) for r in got] == expected
    by_value = {r.value: r.partition for r in records}
    assert all(by_value[f"v{i}"] == i % 4 for i in range(0, 48, 2))
    assert {by_value[f"v{i}"] for i in range(1, 48, 2)} <= {0, 1, 2, 3}


def test_keyed_rows_go_where_the_java_producer_puts_them(
    writer: str, spark: Any, estate: EstateFactory
) -> None:
    """A row with a key and no partition lands where Spark's own sink (the Java producer's
    default partitioner) puts that key, for keys of every length (the empty key too), so a query
    moved over from ``format("kafka")`` keeps each key's records in one partition."""
    setup = estate("east", partitions=7)  # metadata: orders -> east/orders, nothing marked
    keys = [b"", b"k", b"\x00\xff", *(f"key-{i}".encode() * (i % 5 + 1) for i in range(200))]
    df = spark.createDataFrame(
        [(k, str(i)) for i, k in enumerate(keys)], "key binary, value string"
    )
    _save(df.repartition(3), sink_options(setup.meta, writer=writer))
    landed = {int(m.value()): m.partition() for m in read_messages(setup["east"], "orders")}
    assert sorted(landed) == list(range(len(keys)))
    assert [landed[i] for i in range(len(keys))] == java_partitions(keys, 7)


#: The metadata of most bad writes: orders on east alone, marked as the write route.
EAST_ONLY = [("east", ["orders"], True)]
#: Their rows: the id as a string value (``|`` separates the select expressions).
ID_VALUE = "CAST(id AS STRING) AS value"


@pytest.mark.parametrize(
    ("entries", "df_sql", "options", "message"),
    [
        (
            [("east", ["orders"], False), ("west", ["orders"], False)],
            ID_VALUE,
            {},
            "Ambiguous write route for stream 'orders': it is on clusters 'east', 'west'",
        ),
        (EAST_ONLY, ID_VALUE, {"streamId": "refunds"}, "Unknown stream 'refunds'"),
        (
            EAST_ONLY,
            f"{ID_VALUE} | IF(id = 7, 'payments', 'orders') AS topic",
            {},
            "A row's topic 'payments' is not in the write route stream 'orders' -> cluster "
            "'east' (topics: 'orders')",
        ),
        (
            EAST_ONLY,
            ID_VALUE,
            {"topic": "payments"},
            "A row's topic 'payments' is not in the write route",
        ),
        (
            EAST_ONLY,
            "CAST(id AS STRING) AS key",
            {},
            "Writes to format dynamic_kafka need a 'value' column",
        ),
        (
            EAST_ONLY,
            "id AS value",
            {},
            "Column 'value' of a write to format dynamic_kafka must be string or binary, got "
            "bigint",
        ),
    ],
    ids=["ambiguous", "unknown-stream", "topic-column", "topic-option", "no-value", "bad-type"],
)
def test_bad_writes_fail_clearly_and_write_nothing(
    writer: str,
    spark: Any,
    estate: EstateFactory,
    entries: list[tuple[str, list[str], bool]],
    df_sql: str,
    options: dict[str, str],
    message: str,
) -> None:
    setup = estate("east", "west")
    write_routes(setup.meta, setup.clusters, entries)
    df = spark.range(10).selectExpr(*[part.strip() for part in df_sql.split(" | ")]).coalesce(1)
    with pytest.raises(Exception) as caught:
        _save(df, sink_options(setup.meta, writer=writer, **options))
    assert message in str(caught.value)
    assert read_topic(setup["east"], "orders") == []
    assert read_topic(setup["west"], "orders") == []


def _batches(query: Any) -> int:
    return sum(1 for p in query.recentProgress if p["numInputRows"] > 0)


def test_streaming_write_follows_a_metadata_flip_between_micro_batches(
    writer: str, spark: Any, estate: EstateFactory, tmp_path: Path
) -> None:
    setup = estate("east", "west", partitions=2)
    write_routes(
        setup.meta, setup.clusters, [("east", ["orders"], True), ("west", ["orders"], False)]
    )
    incoming, staging = tmp_path / "in", tmp_path / "staging"
    incoming.mkdir()
    staging.mkdir()

    drop = functools.partial(drop_file, incoming, staging)

    query = (
        spark.readStream.format("text")
        .option("maxFilesPerTrigger", "1")
        .load(str(incoming))
        .selectExpr("value AS key", "value")
        .repartition(2)
        .writeStream.format("dynamic_kafka")
        .options(**sink_options(setup.meta, writer=writer))
        .option("checkpointLocation", str(tmp_path / "chk"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    try:
        drop("a.txt", range(0, 30))
        wait_until(lambda: _batches(query) >= 1, what="the first micro-batch")
        write_routes(
            setup.meta, setup.clusters, [("east", ["orders"], False), ("west", ["orders"], True)]
        )
        drop("b.txt", range(30, 70))
        wait_until(lambda: _batches(query) >= 2, what="the second micro-batch")
        write_routes(
            setup.meta, setup.clusters, [("east", ["orders"], True), ("west", ["orders"], False)]
        )
        drop("c.txt", range(70, 90))
        wait_until(lambda: _batches(query) >= 3, what="the third micro-batch")
    finally:
        query.stop()
    assert query.exception() is None
    east = sorted(int(r.value) for r in read_topic(setup["east"], "orders"))
    west = sorted(int(r.value) for r in read_topic(setup["west"], "orders"))
    assert east == [*range(0, 30), *range(70, 90)]
    assert west == list(range(30, 70))


def test_a_cluster_down_fails_the_write_naming_it_without_secrets(
    writer: str, spark: Any, tmp_path: Path
) -> None:
    meta = tmp_path / "streams.yaml"
    secret = "hunter2-sink-secret"
    write_dead_route(meta, secret)
    df = spark.range(5).selectExpr("CAST(id AS STRING) AS value").coalesce(1)
    with pytest.raises(Exception) as caught:
        _save(df, sink_options(meta, writer=writer, **{"kafkaProducer.flushTimeoutMs": "3000"}))
    text = str(caught.value)
    assert "A record was not written to topic 'orders' on cluster 'east' (stream 'orders')" in text
    assert "Message timed out" in text
    assert secret not in text


def test_batch_write_stamps_dedupe_headers_with_one_write_id(
    writer: str, spark: Any, estate: EstateFactory
) -> None:
    setup = estate("east", partitions=2)
    df = spark.range(30).selectExpr("CAST(id AS STRING) AS value").repartition(3)
    _save(df, sink_options(setup.meta, writer=writer, sinkId="batch-writer", dedupeHeaders="true"))
    records = read_topic(setup["east"], "orders")
    assert sorted(int(r.value) for r in records) == list(range(30))
    stamps = [tuple(v.decode() for _, v in r.headers) for r in records]
    assert {[k for k, _ in r.headers] == list(STAMP_HEADERS) for r in records} == {True}
    assert {s[0] for s in stamps} == {"batch-writer"}
    (write_id,) = {s[1] for s in stamps}  # one id for the whole df.write
    assert write_id.startswith("write-")
    assert {s[2] for s in stamps} == {"0", "1", "2"}
    by_partition: dict[str, list[int]] = {}
    for stamp in stamps:
        by_partition.setdefault(stamp[2], []).append(int(stamp[3]))
    assert all(sorted(seq) == list(range(len(seq))) for seq in by_partition.values())
