"""What the sink tests read back and write: every record of a topic (read_committed), the
metadata with a ``write: true`` marker, the sink's options, a frame of keyed rows, and the input
and runs of ``sink_app.py`` (a streaming write in a Spark session of its own)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from confluent_kafka import OFFSET_BEGINNING, Consumer, Message, TopicPartition
from tests.integration.helpers import wait_until

from pyspark_dynamic_kafka.sink.executor.produce import STAMP_HEADERS
from pyspark_dynamic_kafka.testing import BaseKafkaCluster
from pyspark_dynamic_kafka.testing.kafka_jars import ensure_kafka_jars, find_java

DEADLINE = 300.0
APP = Path(__file__).with_name("sink_app.py")
_KEY_PARTITIONS = Path(__file__).with_name("java") / "KeyPartitions.java"
_EPOCH_S = 1_700_000_000


@dataclass(frozen=True, order=True)
class Record:
    """One record as a test compares it."""

    value: str
    key: str | None
    partition: int
    headers: tuple[tuple[str, bytes], ...] = ()


def read_topic(
    cluster: BaseKafkaCluster, topic: str, isolation: str = "read_committed"
) -> list[Record]:
    """Every committed record of ``topic`` (``isolation.level=read_committed``; or every record,
    with ``read_uncommitted``), in offset order per partition, read up to the end offsets of the
    moment the call starts."""
    return [
        Record(
            (message.value() or b"").decode(),
            None if message.key() is None else message.key().decode(),
            message.partition(),
            tuple((k, v) for k, v in (message.headers() or [])),
        )
        for message in read_messages(cluster, topic, isolation)
    ]


def committed_values(cluster: BaseKafkaCluster, topic: str, count: int) -> list[str]:
    """The values of ``topic``'s committed records, sorted, once read_committed readers see
    ``count`` or more (what they see at the deadline otherwise): a transaction's markers are
    written to its partitions after EndTxn is answered, so its records show a moment after the
    commit returns."""
    seen: list[str] = []

    def enough() -> bool:
        seen[:] = sorted(r.value for r in read_topic(cluster, topic))
        return len(seen) >= count

    with contextlib.suppress(AssertionError):  # the caller's comparison shows the difference
        wait_until(enough, DEADLINE, f"{count} committed records of {topic}")
    return seen


def read_messages(
    cluster: BaseKafkaCluster, topic: str, isolation: str = "read_committed"
) -> list[Message]:
    """The messages :func:`read_topic` reads, as confluent-kafka gives them (bytes)."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "sink-test-reader",
            "enable.auto.commit": "false",
            "isolation.level": isolation,
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=30)
        partitions = sorted(metadata.topics[topic].partitions)
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in partitions
        }
        wanted = {p for p, end in ends.items() if end > 0}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in wanted])
        records: list[Message] = []
        deadline = time.monotonic() + DEADLINE
        positions = {p: 0 for p in wanted}
        while any(positions[p] < ends[p] for p in wanted):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out reading {topic}: at {positions}, ends {ends}")
            message = consumer.poll(0.5)
            if message is None:
                # Transaction markers take offsets: with read_committed the position may stop
                # short of the end with nothing left to return.
                for tp in consumer.position([TopicPartition(topic, p) for p in wanted]):
                    positions[tp.partition] = max(positions[tp.partition], tp.offset)
                continue
            if message.error():
                continue
            positions[message.partition()] = message.offset() + 1
            records.append(message)
        return records
    finally:
        consumer.close()


def java_partitions(keys: Sequence[bytes], partitions: int) -> list[int]:
    """The partition the Java producer's default partitioner (what Spark's ``kafka`` sink uses)
    gives each key in a topic of ``partitions`` (``java/KeyPartitions.java``, the Apache Kafka
    client of the brokers' own release)."""
    args = [key.hex() or "-" for key in keys]
    command = [find_java(), "-cp", f"{ensure_kafka_jars()}/*", str(_KEY_PARTITIONS)]
    done = subprocess.run(
        [*command, str(partitions), *args], capture_output=True, text=True, timeout=300, check=False
    )
    if done.returncode != 0:
        raise AssertionError(
            f"KeyPartitions.java failed ({done.returncode}): {done.stderr[-4000:]}"
        )
    return [int(line) for line in done.stdout.split()]


def stamp_of(record: Record) -> tuple[str, ...]:
    """The record's dedupe headers (sink, batch, partition, sequence), decoded."""
    headers = dict(record.headers)
    return tuple(headers[key].decode() for key in STAMP_HEADERS)


def write_routes(
    path: Path,
    clusters: Mapping[str, BaseKafkaCluster],
    entries: Sequence[tuple[str, Sequence[str], bool]],
    stream: str = "orders",
    extra: Mapping[str, Mapping[str, str]] | None = None,
) -> None:
    """Write the metadata: stream ``stream`` with ``(cluster, topics, write)`` entries (and each
    cluster's ``extra`` properties, e.g. its schema registry)."""
    document = {
        "clusters": {
            n: {"bootstrap.servers": c.bootstrap_servers, **(extra or {}).get(n, {})}
            for n, c in clusters.items()
        },
        "streams": {
            stream: [
                {"cluster": name, "topics": list(topics), **({"write": True} if write else {})}
                for name, topics, write in entries
            ]
        },
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(document))
    os.replace(tmp, path)


def sink_options(meta: Path, **extra: str) -> dict[str, str]:
    """Options of a write of stream ``orders`` through the metadata file ``meta``."""
    return {
        "metadataService": "file",
        "metadataService.path": str(meta),
        "streamId": "orders",
        **extra,
    }


def keyed_rows(
    spark: Any, count: int, null_key_every: int, *columns: str
) -> tuple[list[tuple[int, str | None, str]], Any]:
    """Rows ``(id, key, value)``: ``k<id>`` (null for every ``null_key_every``-th id) and
    ``v<id>``; and the sink's frame of them: the key as binary, the value and ``columns`` (SQL
    expressions of ``id``, ``key`` and ``value``, e.g. a ``topic`` or ``headers`` column)."""
    rows = [(i, None if i % null_key_every == 0 else f"k{i}", f"v{i}") for i in range(count)]
    df = spark.createDataFrame(rows, "id int, key string, value string").selectExpr(
        "CAST(key AS BINARY) AS key", "value", *columns
    )
    return rows, df


def drop_file(
    incoming: Path, staging: Path, name: str, ids: Iterable[int], mtime: float | None = None
) -> None:
    """A text file ``name`` of ``ids``, one a line, written in ``staging`` and moved into
    ``incoming`` in whole (the file source lists the directory); its modification time
    ``mtime`` (seconds since the epoch) when given."""
    path = staging / name
    path.write_text("".join(f"{i}\n" for i in ids))
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    shutil.move(path, incoming / name)


def drop_files(incoming: Path, staging: Path, sizes: list[int], first: int = 0) -> list[int]:
    """One text file per micro-batch with consecutive ids from ``first``; returns every id.

    The file source takes the files in modification-time order, and files written in one
    millisecond tie (then its order is arbitrary): each file's time is its first id in seconds
    past a fixed instant.
    """
    ids: list[int] = []
    for size in sizes:
        batch = list(range(first + len(ids), first + len(ids) + size))
        drop_file(incoming, staging, f"f{batch[0]:06d}.txt", batch, mtime=_EPOCH_S + batch[0])
        ids += batch
    return ids


def app_command(tmp_path: Path, config: dict[str, Any]) -> list[str]:
    """The command that runs ``sink_app.py`` with ``config`` (written to a new file)."""
    path = tmp_path / f"app{len(list(tmp_path.glob('app*.json')))}.json"
    path.write_text(json.dumps(config))
    return [sys.executable, str(APP), str(path)]


def run_sink_app(tmp_path: Path, config: dict[str, Any], logs: list[str] | None = None) -> str:
    """Run ``sink_app.py`` to its end; the query's error (``"none"`` when it ended well). Its
    standard error (Spark's log) is appended to ``logs`` when given."""
    done = subprocess.run(
        app_command(tmp_path, config),
        capture_output=True,
        text=True,
        timeout=DEADLINE * 2,
        check=True,
    )
    if logs is not None:
        logs.append(done.stderr)
    lines = [line for line in done.stdout.splitlines() if line.startswith("ERROR ")]
    assert lines, done.stdout[-2000:] + done.stderr[-4000:]
    return lines[-1].removeprefix("ERROR ")


def write_dead_route(path: Path, secret: str) -> None:
    """Metadata routing stream ``orders`` to cluster east on a port nothing listens on (the
    discard port), with ``secret`` as east's ``sasl.password``."""
    path.write_text(
        "clusters:\n"
        "  east:\n"
        "    bootstrap.servers: 127.0.0.1:9\n"
        f"    sasl.password: {secret}\n"
        "streams:\n"
        "  orders: [{cluster: east, topics: [orders], write: true}]\n"
    )
