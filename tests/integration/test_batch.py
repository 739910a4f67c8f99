"""Batch reads (spark.read) on real brokers: exact offset ranges, splitting, headers, transactions.

Every test asserts the exact set of records read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.integration.helpers import (
    DEADLINE,
    Estate,
    EstateFactory,
    numbered,
    pause_for_a_timestamp,
    produce,
    requires_kafka,
    transactions,
)
from tests.integration.queries import available_now, batch_read, keyed_rows


def _records(cluster: Any, topic: str, partitions: int, count: int) -> dict[tuple[int, int], str]:
    """Produce ``count`` records per partition; (partition, offset) -> value."""
    produced: dict[tuple[int, int], str] = {}
    for p in range(partitions):
        values = numbered(f"{cluster.name}-{p}-", count)
        for (partition, offset), value in zip(
            cluster.produce(topic, [(None, v) for v in values], partition=p), values, strict=True
        ):
            produced[(partition, offset)] = value
    return produced


def _batch_options(setup: Estate, **extra: str) -> dict[str, str]:
    """Options of a batch read of stream ``orders`` (no startingOffsets: the batch default)."""
    options = setup.options()
    options.pop("startingOffsets")
    return options | extra


@pytest.mark.smoke
def test_batch_read_over_two_clusters_with_per_partition_json_ends(
    spark: Any, estate: EstateFactory
) -> None:
    setup = estate("east", "west", partitions=2)
    produced = {
        name: _records(cluster, "orders", 2, 10) for name, cluster in setup.clusters.items()
    }
    starting = {"east": {"orders": {"0": 3}}, "west": {"orders": {"1": -2}}}
    ending = {"east": {"orders": {"0": 8, "1": -1}}, "west": {"orders": {"0": 4}}}
    options = _batch_options(
        setup, startingOffsets=json.dumps(starting), endingOffsets=json.dumps(ending)
    )

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
    # Default: few tasks, whole ranges (one for so few records).
    assert batch_read(spark, options).rdd.getNumPartitions() == 1


def test_batch_read_between_timestamps(spark: Any, estate: EstateFactory) -> None:
    setup = estate("east")
    east = setup["east"]
    produce(east, "orders", numbered("old", 3), key=False)
    start_ms = pause_for_a_timestamp()
    produce(east, "orders", numbered("mid", 4), key=False)
    end_ms = pause_for_a_timestamp()
    produce(east, "orders", numbered("new", 2), key=False)
    options = _batch_options(setup)

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


def test_headers_round_trip(spark: Any, estate: EstateFactory) -> None:
    setup = estate("east")
    east = setup["east"]
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
    options = _batch_options(setup)

    df = batch_read(spark, options | {"includeHeaders": "true"})
    assert df.columns == [
        "key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers",
        "cluster",
    ]  # fmt: skip
    assert df.schema["headers"].dataType.simpleString() == "array<struct<key:string,value:binary>>"
    assert _headers(df.orderBy("offset").collect()) == headers
    assert {r.timestampType for r in df.collect()} == {0}  # CreateTime
    assert "headers" not in batch_read(spark, options).columns

    # The same through a stream (Trigger.AvailableNow into a memory table).
    query = available_now(spark, setup.options(includeHeaders="true"), "headers_stream")
    streamed = spark.sql(f"select offset, headers from {query.table} order by offset").collect()
    assert _headers(streamed) == headers


def _headers(rows: list[Any]) -> list[list[tuple[str, bytes | None]] | None]:
    return [
        None
        if r.headers is None
        else [(h.key, None if h.value is None else bytes(h.value)) for h in r.headers]
        for r in rows
    ]


def _transactions(setup: Estate) -> None:
    setup["east"].create_topic("tx", partitions=1)
    batches = [(numbered("c", 5), True), (numbered("a", 3), False), (numbered("d", 2), True)]
    transactions(setup["east"], "tx", batches, "parity-tx")  # ends with a commit marker
    setup.write({"tx": [("east", ["tx"])]})


def _committed_values(spark: Any, setup: Estate, **extra: str) -> tuple[list[str], list[str]]:
    """Values read by a batch read and by a Trigger.AvailableNow stream, sorted."""
    options = setup.options(streamIds="tx", **extra)
    batch = [
        v for *_, v in keyed_rows(batch_read(spark, {**options, "startingOffsets": "earliest"}))
    ]
    # Ranges ending at a transaction marker must not hang.
    streamed = available_now(spark, options, "tx_stream").values()
    return sorted(batch), streamed


COMMITTED = ["c0", "c1", "c2", "c3", "c4", "d0", "d1"]
ABORTED = ["a0", "a1", "a2"]


def test_transactions_end_at_markers_without_hanging(spark: Any, estate: EstateFactory) -> None:
    setup = estate("east", partitions=0)
    _transactions(setup)
    batch, streamed = _committed_values(spark, setup)
    assert batch == streamed == sorted(COMMITTED + ABORTED)  # read_uncommitted (the default)
    batch, streamed = _committed_values(spark, setup, **{"kafka.isolation.level": "read_committed"})
    assert set(COMMITTED) <= set(batch) and set(COMMITTED) <= set(streamed)


@requires_kafka(
    "Tansu's Fetch response lists no aborted transactions, so no read_committed client can "
    "skip them (a plain confluent-kafka consumer receives a0..a2 too)"
)
def test_read_committed_skips_aborted_transactions(spark: Any, estate: EstateFactory) -> None:
    setup = estate("east", partitions=0)
    _transactions(setup)
    batch, streamed = _committed_values(spark, setup, **{"kafka.isolation.level": "read_committed"})
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
            query.awaitTermination(DEADLINE)
        message = str(info.value)
        query.stop()
    assert "'endingOffsets' is not valid for streaming queries" in message
