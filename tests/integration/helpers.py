"""Helpers shared by the integration tests: metadata files, producing, running queries."""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from confluent_kafka import Producer

Record = tuple[str, str, int, str]  # cluster, topic, partition, value


def write_metadata(
    path: Path,
    clusters: Mapping[str, Any],
    streams: Mapping[str, Sequence[tuple[str, Sequence[str]]]],
    extra: Mapping[str, Mapping[str, str]] | None = None,
    starting: Mapping[tuple[str, str], Any] | None = None,
) -> None:
    """Write a metadata file atomically (temp + rename), as an operator's tool would.

    ``starting`` gives a stream entry's ``startingOffsets`` by (stream id, cluster id).
    """

    def entry(sid: str, cluster: str, topics: Sequence[str]) -> dict[str, Any]:
        item: dict[str, Any] = {"cluster": cluster, "topics": list(topics)}
        if starting and (sid, cluster) in starting:
            item["startingOffsets"] = starting[(sid, cluster)]
        return item

    document = {
        "clusters": {
            name: {"bootstrap.servers": c.bootstrap_servers, **(extra or {}).get(name, {})}
            for name, c in clusters.items()
        },
        "streams": {
            sid: [entry(sid, cl, topics) for cl, topics in entries]
            for sid, entries in streams.items()
        },
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(document))
    os.replace(tmp, path)


def produce(
    bootstrap: str, topic: str, values: Iterable[str], partitions: int = 1, key: str | None = None
) -> list[tuple[str, int, str]]:
    """Produce one record per value, round-robin over partitions, one record per batch.

    Returns (topic, partition, value) for each record.
    """
    producer = Producer({"bootstrap.servers": bootstrap, "batch.num.messages": 1, "linger.ms": 0})
    errors: list[str] = []
    sent = []
    for i, value in enumerate(values):
        partition = i % partitions
        producer.produce(
            topic,
            key=key or value,
            value=value,
            partition=partition,
            on_delivery=lambda err, _msg: errors.append(str(err)) if err else None,
        )
        sent.append((topic, partition, value))
    producer.flush(30)
    assert not errors, errors
    return sent


def batch_read(spark: Any, options: Mapping[str, str]) -> Any:
    """A batch DataFrame of the dynamic_kafka source."""
    reader = spark.read.format("dynamic_kafka")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def keyed_rows(df: Any) -> list[tuple[str, str, int, int, str]]:
    """(cluster, topic, partition, offset, value) of a DataFrame of the source, sorted."""
    return sorted(
        (r.cluster, r.topic, r.partition, r.offset, r.value.decode())
        for r in df.select("cluster", "topic", "partition", "offset", "value").collect()
    )


def wait_until(
    condition: Callable[[], bool], timeout: float = 90.0, what: str = "condition"
) -> None:
    """Poll ``condition`` until it holds; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def source_options(metadata_path: Path, **extra: str) -> dict[str, str]:
    """Options of a file-backed dynamic_kafka source with fast discovery for tests."""
    options = {
        "metadataService": "file",
        "metadataService.path": str(metadata_path),
        "startingOffsets": "earliest",
        "metadataDiscoveryIntervalMs": "0",
        "kafkaConsumer.cacheTimeoutMs": "2000",
    }
    options.update(extra)
    return options


def rows(spark: Any, table: str) -> list[tuple[str, str, int, int, str]]:
    """(cluster, topic, partition, offset, value) of every row in a memory-sink table."""
    return [
        (r.cluster, r.topic, r.partition, r.offset, r.value.decode())
        for r in spark.sql(
            f"select cluster, topic, partition, offset, value from {table}"
        ).collect()
    ]


def values_of(spark: Any, table: str) -> list[str]:
    """The decoded values of a table (with duplicates)."""
    return sorted(value for *_, value in rows(spark, table))


def latest_offset_json(query: Any) -> dict[str, Any]:
    """The end offset of the query's last progress (as JSON)."""
    progress = query.lastProgress
    if not progress:
        return {}
    end = progress["sources"][0]["endOffset"]
    return json.loads(end) if isinstance(end, str) else end


_tables = itertools.count()


def start_memory_query(
    spark: Any, options: Mapping[str, str], prefix: str = "t", **trigger: Any
) -> tuple[Any, str]:
    """Start a ``dynamic_kafka`` stream into a fresh memory table; returns (query, table).

    ``trigger`` is passed to ``DataStreamWriter.trigger`` (every 200 ms by default).
    """
    table = f"{prefix}{next(_tables)}"
    query = (
        spark.readStream.format("dynamic_kafka")
        .options(**options)
        .load()
        .writeStream.format("memory")
        .queryName(table)
        .trigger(**(trigger or {"processingTime": "200 milliseconds"}))
        .start()
    )
    return query, table


def wait_values(
    spark: Any, query: Any, table: str, expected: Sequence[str], timeout: float = 120.0
) -> None:
    """Wait until ``table`` holds as many rows as ``expected``, then assert it holds exactly them
    (a failed query fails at once with its error)."""

    def done() -> bool:
        if query.exception() is not None:
            raise AssertionError(f"query failed: {query.exception()}")
        return len(values_of(spark, table)) >= len(expected)

    wait_until(done, timeout=timeout, what=f"{len(expected)} rows in {table}")
    query.processAllAvailable()
    assert values_of(spark, table) == sorted(expected)
