"""Batch reads (spark.read) on real brokers: exact offset ranges, splitting, headers, transactions.

Every test asserts the exact set of records read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from tests.integration.helpers import batch_read, keyed_rows, source_options, write_metadata

from pyspark_dynamic_kafka.testing import ENV_VAR


def _records(cluster: Any, topic: str, partitions: int, count: int) -> dict[tuple[int, int], str]:
    """Produce ``count`` records per partition; (partition, offset) -> value."""
    produced: dict[tuple[int, int], str] = {}
    for p in range(partitions):
        values = [f"{cluster.name}-{p}-{i}" for i in range(count)]
        for (partition, offset), value in zip(
            cluster.produce(topic, [(None, v) for v in values], partition=p), values, strict=True
        ):
            produced[(partition, offset)] = value
    return produced


def test_batch_read_over_two_clusters_with_per_partition_json_ends(
    spark: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    clusters = kafka_clusters("east", "west")
    produced = {}
    for name, cluster in clusters.items():
        cluster.create_topic("orders", partitions=2)
        produced[name] = _records(cluster, "orders", 2, 10)
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"orders": [("east", ["orders"]), ("west", ["orders"])]})
    starting = {"east": {"orders": {"0": 3}}, "west": {"orders": {"1": -2}}}
    ending = {"east": {"orders": {"0": 8, "1": -1}}, "west": {"orders": {"0": 4}}}
    options = source_options(meta, streamIds="orders")
    options.pop("startingOffsets")  # batch default: earliest
    options |= {"startingOffsets": json.dumps(starting), "endingOffsets": json.dumps(ending)}

    spans = {
        ("east", 0): (3, 8),  # named start and end
        ("east", 1): (0, 10),  # -1: latest
        ("west", 0): (0, 4),  # end named, start earliest
        ("west", 1): (0, 10),  # start -2, end latest by default
    }
    expected = sorted(
        (c, "orders", p, o, produced[c][(p, o)])
        for (c, p), (start, end) in spans.items()
        for o in range(start, end)
    )
    assert keyed_rows(batch_read(spark, options)) == expected

    # Splitting into more tasks reads exactly the same records.
    split = batch_read(spark, options | {"maxRecordsPerPartition": "5"})
    assert split.rdd.getNumPartitions() == 6  # ceil(29 / 5)
    assert keyed_rows(split) == expected
    wide = batch_read(spark, options | {"minPartitions": "12"})
    assert wide.rdd.getNumPartitions() == 12
    assert keyed_rows(wide) == expected
    # Default: few tasks, whole ranges.
    assert batch_read(spark, options).rdd.getNumPartitions() == 2


def test_batch_read_between_timestamps(spark: Any, kafka_clusters: Any, tmp_path: Path) -> None:
    import time

    clusters = kafka_clusters("east")
    east = clusters["east"]
    east.create_topic("orders", partitions=1)
    east.produce("orders", [(None, f"old{i}") for i in range(3)], partition=0)
    time.sleep(1.2)
    start_ms = int(time.time() * 1000)
    time.sleep(1.2)
    east.produce("orders", [(None, f"mid{i}") for i in range(4)], partition=0)
    time.sleep(1.2)
    end_ms = int(time.time() * 1000)
    time.sleep(1.2)
    east.produce("orders", [(None, f"new{i}") for i in range(2)], partition=0)
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"orders": [("east", ["orders"])]})
    options = source_options(meta, streamIds="orders")
    options.pop("startingOffsets")

    df = batch_read(
        spark, options | {"startingTimestamp": str(start_ms), "endingTimestamp": str(end_ms)}
    )
    assert [v for *_, v in keyed_rows(df)] == [f"mid{i}" for i in range(4)]
    by_partition = json.dumps({"east": {"orders": {"0": start_ms}}})
    df = batch_read(spark, options | {"startingOffsetsByTimestamp": by_partition})
    assert [v for *_, v in keyed_rows(df)] == [f"mid{i}" for i in range(4)] + ["new0", "new1"]
    ends = json.dumps({"east": {"orders": {"0": end_ms}}})
    df = batch_read(spark, options | {"endingOffsetsByTimestamp": ends})
    assert [v for *_, v in keyed_rows(df)] == [f"old{i}" for i in range(3)] + [
        f"mid{i}" for i in range(4)
    ]


def test_headers_round_trip(spark: Any, kafka_clusters: Any, tmp_path: Path) -> None:
    clusters = kafka_clusters("east")
    east = clusters["east"]
    east.create_topic("orders", partitions=1)
    headers: list[list[tuple[str, bytes | None]] | None] = [
        [("trace", b"t-1"), ("trace", b"t-2")],  # duplicate keys keep their order
        [("nullable", None), ("empty", b"")],
        None,
        [("utf8-\u00fc", "\u00fc".encode()), ("bin", bytes(range(256)))],
    ]
    east.produce(
        "orders",
        [
            {"value": f"v{i}", "headers": h} if h else {"value": f"v{i}"}
            for i, h in enumerate(headers)
        ],
        partition=0,
    )
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"orders": [("east", ["orders"])]})
    options = source_options(meta, streamIds="orders")
    options.pop("startingOffsets")

    df = batch_read(spark, options | {"includeHeaders": "true"})
    assert df.columns == [
        "key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers",
        "cluster",
    ]  # fmt: skip
    assert df.schema["headers"].dataType.simpleString() == "array<struct<key:string,value:binary>>"
    got = [
        None
        if r.headers is None
        else [(h.key, None if h.value is None else bytes(h.value)) for h in r.headers]
        for r in df.orderBy("offset").collect()
    ]
    assert got == headers
    assert {r.timestampType for r in df.collect()} == {0}  # CreateTime
    assert "headers" not in batch_read(spark, options).columns

    # The same through a stream (Trigger.AvailableNow into a memory table).
    query = (
        spark.readStream.format("dynamic_kafka")
        .options(**source_options(meta, streamIds="orders", includeHeaders="true"))
        .load()
        .writeStream.format("memory")
        .queryName("headers_stream")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    streamed = spark.sql("select offset, headers from headers_stream order by offset").collect()
    assert [
        None
        if r.headers is None
        else [(h.key, None if h.value is None else bytes(h.value)) for h in r.headers]
        for r in streamed
    ] == headers


def _transactions(bootstrap: str) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": "parity-tx",
            "linger.ms": 0,
            "batch.num.messages": 1,
        }
    )
    producer.init_transactions(30)
    for prefix, count, commit in (("c", 5, True), ("a", 3, False), ("d", 2, True)):
        producer.begin_transaction()
        for i in range(count):
            producer.produce("tx", value=f"{prefix}{i}", partition=0)
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    producer.flush(30)


def _committed_values(
    spark: Any, meta: Path, name: str, **extra: str
) -> tuple[list[str], list[str]]:
    """Values read by a batch read and by a Trigger.AvailableNow stream, sorted."""
    options = source_options(meta, streamIds="tx", **extra)
    batch = [
        v for *_, v in keyed_rows(batch_read(spark, {**options, "startingOffsets": "earliest"}))
    ]
    query = (
        spark.readStream.format("dynamic_kafka")
        .options(**options)
        .load()
        .writeStream.format("memory")
        .queryName(name)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)  # ranges ending at a transaction marker must not hang
    assert not query.isActive and query.exception() is None
    streamed = [r.v for r in spark.sql(f"select cast(value as string) v from {name}").collect()]
    return sorted(batch), sorted(streamed)


COMMITTED = ["c0", "c1", "c2", "c3", "c4", "d0", "d1"]
ABORTED = ["a0", "a1", "a2"]


def test_transactions_end_at_markers_without_hanging(
    spark: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    clusters = kafka_clusters("east")
    clusters["east"].create_topic("tx", partitions=1)
    _transactions(clusters["east"].bootstrap_servers)  # ends with a commit marker
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"tx": [("east", ["tx"])]})
    batch, streamed = _committed_values(spark, meta, "uncommitted_stream")
    assert batch == streamed == sorted(COMMITTED + ABORTED)  # read_uncommitted (the default)
    batch, streamed = _committed_values(
        spark, meta, "committed_stream", **{"kafka.isolation.level": "read_committed"}
    )
    assert set(COMMITTED) <= set(batch) and set(COMMITTED) <= set(streamed)


@pytest.mark.xfail(
    not os.environ.get(ENV_VAR),
    reason="Tansu's Fetch response lists no aborted transactions, so no read_committed client "
    "can skip them (a plain confluent-kafka consumer receives a0..a2 too); passes on Apache "
    f"Kafka ({ENV_VAR}=east=host:port)",
    strict=True,
)
def test_read_committed_skips_aborted_transactions(
    spark: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    clusters = kafka_clusters("east")
    clusters["east"].create_topic("tx", partitions=1)
    _transactions(clusters["east"].bootstrap_servers)
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, clusters, {"tx": [("east", ["tx"])]})
    batch, streamed = _committed_values(
        spark, meta, "aborted_stream", **{"kafka.isolation.level": "read_committed"}
    )
    assert batch == streamed == COMMITTED


def test_options_valid_only_for_the_other_kind_of_read(spark: Any, tmp_path: Path) -> None:
    meta = tmp_path / "streams.yaml"
    meta.write_text(
        "clusters:\n  east: {bootstrap.servers: '127.0.0.1:1'}\n"
        "streams:\n  orders: [{cluster: east, topics: [orders]}]\n"
    )
    base = {"metadataService": "file", "metadataService.path": str(meta), "streamIds": "orders"}
    with pytest.raises(Exception, match=r"'startingOffsets' cannot start a batch read at 'latest'"):
        batch_read(spark, base | {"startingOffsets": "latest"}).collect()
    with pytest.raises(Exception, match=r"kafka\.key\.deserializer' is not supported"):
        batch_read(spark, base | {"kafka.key.deserializer": "x"})
    stream = spark.readStream.format("dynamic_kafka").options(**base, endingOffsets="latest")
    try:
        query = stream.load().writeStream.format("memory").queryName("ending_stream").start()
    except Exception as exc:  # raised at start
        message = str(exc)
    else:
        with pytest.raises(Exception) as info:  # the stream reader is built when the query runs
            query.awaitTermination(60)
        message = str(info.value)
        query.stop()
    assert "'endingOffsets' is not valid for streaming queries" in message
