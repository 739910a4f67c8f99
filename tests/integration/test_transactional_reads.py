"""read_committed and read_uncommitted by the Java consumer's rules, from every start offset, on
every reader: the compiled core's direct fetch path, the core through librdkafka's consumer,
and the Python reader.

The log (transactional_log.py) holds aborted and committed transactions of one producer and of
two interleaved, adjacent markers, plain and idempotent records and a compacted part. Every
reader reads it whole from every start offset, and cut into ranges of 1, 2 and 3 records
starting at every offset (as ``maxOffsetsPerTrigger``, ``minPartitions`` and
``maxRecordsPerPartition`` cut it), and must return exactly what the Java consumer
(``java/ConsumerReads.java``) reads of the same range: a range starting on an abort marker is
where the direct path once dropped the producer's next, committed, transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from tests.integration.helpers import EstateFactory, plaintext_servers, requires_kafka
from tests.integration.queries import parquet_query, parquet_values, wait_parquet
from tests.integration.raw_produce import produce_raw
from tests.integration.read_tasks import make_task, read_table
from tests.integration.transactional_log import java_reads, write_log

from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.errors import ReadError
from pyspark_dynamic_kafka.kafka.pool import consumer_config
from pyspark_dynamic_kafka.monitoring.progress import offset_document

pytestmark = pytest.mark.usefixtures("empty_consumer_pool")

_ISOLATIONS = ("read_committed", "read_uncommitted")
#: librdkafka's readers end a range on a marker by the position a fetch at the log's end
#: reports; the broker holds that fetch this long (100 ms by default): ~350 reads per reader.
_QUICK = {"fetch.wait.max.ms": "5"}
#: The core's readers: the direct fetch path, and librdkafka's consumer (the direct path turned
#: off); fallback() says which read.
_CORE_PATHS = {
    "direct": (True, None),
    "librdkafka": (False, "the direct path is turned off (direct=False)"),
}

Range = tuple[str, int, int, int]
Row = tuple[int, int, str]


def _ranges(ends: dict[int, int], topic: str, length: int | None) -> Iterator[list[Range]]:
    """For every start offset, the ranges of every partition that has records there: to its
    end (``length`` None), or ``length`` records long."""
    for start in range(max(ends.values())):
        yield [
            (topic, p, start, end if length is None else min(start + length, end))
            for p, end in sorted(ends.items())
            if start < end
        ]


def _rows(table: Any) -> list[Row]:
    values = ("-" if v is None else v.decode() for v in table["value"].to_pylist())
    return list(
        zip(table["partition"].to_pylist(), table["offset"].to_pylist(), values, strict=True)
    )


@requires_kafka("transactions and compaction")
def test_every_reader_reads_what_the_java_consumer_reads_from_every_offset(
    kafka_clusters: Any,
) -> None:
    east = kafka_clusters("east")["east"]
    module = core()
    ends = write_log(east, "tx", partitions=3)
    java = java_reads(east, "tx", 3, _ISOLATIONS)
    # The log is what it was written to be: the Java consumer skips every aborted record.
    committed = {v for rows in java["read_committed"][0].values() for _, v in rows}
    everything = {v for rows in java["read_uncommitted"][0].values() for _, v in rows}
    assert committed == {v for v in everything if "aborted" not in v}
    assert committed != everything

    def expected(ranges: list[Range], isolation: str) -> list[Row]:
        return sorted((p, o, v) for _, p, s, e in ranges for o, v in java[isolation][s][p] if o < e)

    readers = ["python"] + (list(_CORE_PATHS) if module is not None else [])
    checked = 0
    for isolation in _ISOLATIONS:
        consumers = {}
        for path, (direct, reason) in _CORE_PATHS.items():
            if module is not None:
                config = {**east.connection_properties(), "isolation.level": isolation}
                config = consumer_config({**config, **_QUICK})
                consumers[path] = (module.Consumer(sorted(config.items()), direct=direct), reason)
        try:
            for length in (None, 1, 2, 3):
                for ranges in _ranges(ends, "tx", length):
                    want = expected(ranges, isolation)
                    for reader in readers:
                        if reader == "python":
                            props = {"isolation.level": isolation, **_QUICK}
                            task = make_task(east, "python", *ranges, **props)
                            got = sorted(_rows(read_table(task)))
                        else:
                            consumer, reason = consumers[reader]
                            read = module.Reader("east", consumer, ranges, 30_000, False, True)
                            got = sorted(r for b in read for r in _rows(b))
                            assert read.fallback() == reason, reader
                            read.close()
                        assert got == want, (reader, isolation, ranges)
                        checked += 1
        finally:
            for consumer, _ in consumers.values():
                consumer.close()
    assert checked == len(readers) * 2 * (4 * max(ends.values()))


@requires_kafka("a batch written byte for byte")
def test_a_header_name_that_is_not_utf8(kafka_clusters: Any) -> None:
    # Go and C producers can write one (Kafka's protocol makes a header name bytes). The core's
    # paths give it as the Java client decodes it, invalid bytes as U+FFFD; reading it never
    # hands a batch over half-read (records came out twice that way). confluent-kafka cannot
    # decode it (Message.headers() raises SystemError), so the Python reader fails naming it.
    east = kafka_clusters("east")["east"]
    east.create_topic("h", partitions=1)
    east.produce("h", [(None, "before")], partition=0)
    raw = [(None, b"a", []), (b"k", b"b", [(b"n\xffx", b"1"), (b"ok", None)]), (None, b"c", [])]
    assert produce_raw(plaintext_servers(east), "h", 0, raw) == 1
    want = [
        (0, b"before", None),
        (1, b"a", None),
        (2, b"b", [{"key": "n\ufffdx", "value": b"1"}, {"key": "ok", "value": None}]),
        (3, b"c", None),
    ]
    module = core()
    config = consumer_config(east.connection_properties())
    for path, (direct, reason) in _CORE_PATHS.items() if module is not None else ():
        ranges = [("h", 0, 0, 4)]
        read = module.Reader(
            "east", sorted(config.items()), ranges, 30_000, True, True, direct=direct
        )
        rows = [(r["offset"], r["value"], r["headers"]) for b in read for r in b.to_pylist()]
        assert rows == want, path
        assert read.fallback() == reason, path
    with pytest.raises(ReadError, match=r"h/0 at offset 2 has a header name that is not UTF-8"):
        read_table(make_task(east, "python", ("h", 0, 0, 4), include_headers=True))
    rows = read_table(make_task(east, "python", ("h", 0, 0, 4))).to_pylist()
    assert [(r["offset"], r["value"]) for r in rows] == [(o, v) for o, v, _ in want]


@requires_kafka("transactions")
def test_a_stream_cut_on_markers_reads_every_committed_record_once(
    spark: Any, estate: EstateFactory, tmp_path: Path
) -> None:
    # Two transactional producers take two turns each; every third transaction aborts. Each
    # writes 2 records to each partition, then its marker: transaction i's marker is at offset
    # 3i + 2 of both partitions. 8 offsets per trigger over 2 partitions start micro-batches
    # every 4 offsets, on abort markers among them, with the producer's next, committed,
    # transaction right after; the query stops mid-stream and restarts from its checkpoint.
    setup = estate("east", partitions=2)
    east = setup["east"]
    producers = [
        Producer(east.client_properties(**{"transactional.id": f"s{n}-{uuid.uuid4().hex}"}))
        for n in range(2)
    ]
    for producer in producers:
        producer.init_transactions(60)
    committed, abort_markers = [], set()
    for i in range(12):
        producer = producers[i // 2 % 2]
        producer.begin_transaction()
        for p in range(2):
            for j in range(2):
                producer.produce("orders", value=f"tx{i}-p{p}-{j}", partition=p)
        producer.flush(60)
        if i % 3 == 2:
            producer.abort_transaction(60)
            abort_markers.add(3 * i + 2)
        else:
            producer.commit_transaction(60)
            committed += [f"tx{i}-p{p}-{j}" for p in range(2) for j in range(2)]
    options = setup.options(maxOffsetsPerTrigger="8", **{"kafka.isolation.level": "read_committed"})
    output = tmp_path / "out"
    for stop_at in (len(committed) // 3, len(committed)):
        query = parquet_query(spark, options, tmp_path)
        try:
            wait_parquet(spark, output, stop_at)
        finally:
            query.stop()
    assert sorted(parquet_values(spark, output)) == sorted(committed)
    starts = _batch_starts(tmp_path / "ckpt")
    assert starts & abort_markers, starts  # micro-batches started on abort markers


def _batch_starts(checkpoint: Path) -> set[int]:
    """Where the checkpoint's micro-batches after the first started, on cluster ``east``'s
    partitions: the end offsets in Spark's offset log of every batch but the newest (a batch
    starts where the one before it ended). The log, unlike a query's progress, holds the batch
    whose rows ended a wait: its progress may not be recorded yet when the query is stopped."""
    logs = [p for p in (checkpoint / "offsets").iterdir() if p.name.isdigit()]
    starts: set[int] = set()
    for log in sorted(logs, key=lambda p: int(p.name))[:-1]:
        end = offset_document(log.read_text().splitlines()[-1]) or {}
        for partitions in end.get("clusters", {}).get("east", {}).values():
            starts.update(int(o) for o in partitions.values())
    return starts
