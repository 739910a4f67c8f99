"""Executor-side events no test broker can produce, with a scripted consumer (real messages).

Tansu keeps every record (no retention, DeleteRecords drops the connection) and answers a fetch
past the end with no data instead of OFFSET_OUT_OF_RANGE, and ignores LogAppendTime: so offsets
out of range and LogAppendTime records are scripted here, for every broker kind. Real reads are
in ``tests/integration/test_read.py``; on Apache Kafka, records deleted under a query and
LogAppendTime topics in ``tests/integration/test_kafka_semantics.py``.
"""

from __future__ import annotations

import logging
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from pyspark_dynamic_kafka.engines.read_python import _RangeReader
from pyspark_dynamic_kafka.engines.read_python_batches import BatchBuilder
from pyspark_dynamic_kafka.errors import DataLossError
from pyspark_dynamic_kafka.source.executor.task import OffsetRange, ReadSettings
from pyspark_dynamic_kafka.source.schema import spark_schema
from pyspark_dynamic_kafka.spark_versions import arrow_schema


def _message(
    topic: str,
    partition: int,
    offset: int,
    error: KafkaError | None = None,
    headers: list[tuple[str, bytes | None]] | None = None,
    timestamp: tuple[int, int] = (1, 1_700_000_000_000),
) -> Message:
    """A real confluent-kafka message, as a consumer would return it."""
    value = None if error else f"v{offset}".encode()
    return Message(
        topic=topic,
        partition=partition,
        offset=offset,
        key=None if error else b"k",
        value=value,
        headers=headers,
        error=error,
        timestamp=timestamp,
    )


class _Consumer:
    """A consumer after an offset-out-of-range error, as librdkafka leaves it: it refuses to
    seek the partition, which fetches again once it is assigned again (``restarts``)."""

    def __init__(self, low: int, high: int) -> None:
        self.low, self.high = low, high
        self.restarts: list[tuple[str, int, int]] = []
        self.unassigned: list[tuple[str, int]] = []
        self.paused: list[tuple[str, int]] = []

    def get_watermark_offsets(self, tp: TopicPartition, timeout: float, cached: bool) -> Any:
        return self.low, self.high

    def seek(self, tp: TopicPartition) -> None:
        error = KafkaError(KafkaError._STATE, f"Failed to seek to offset {tp.offset}")
        raise KafkaException(error)

    def incremental_unassign(self, tps: list[TopicPartition]) -> None:
        self.unassigned += [(tp.topic, tp.partition) for tp in tps]

    def incremental_assign(self, tps: list[TopicPartition]) -> None:
        assert [(tp.topic, tp.partition) for tp in tps] == self.unassigned[-len(tps) :]
        self.restarts += [(tp.topic, tp.partition, tp.offset) for tp in tps]

    def pause(self, tps: list[TopicPartition]) -> None:
        self.paused += [(tp.topic, tp.partition) for tp in tps]


def _reader(consumer: _Consumer, start: int, end: int, fail: bool) -> _RangeReader:
    settings = ReadSettings(1000, 1000, frozenset({"east"}), fail_on_data_loss=fail)
    return _RangeReader(consumer, "east", [OffsetRange("east", "t", 0, start, end)], settings)


def _out_of_range(offset: int) -> Message:
    return _message("t", 0, offset, KafkaError(KafkaError._AUTO_OFFSET_RESET, "out of range"))


def _accept_without_fail(
    consumer: _Consumer, messages: list[Message], caplog: pytest.LogCaptureFixture
) -> tuple[_RangeReader, list[str]]:
    """A failOnDataLoss=false reader of east/t/0 [10, 60) after ``messages``, and every data
    loss warning logged so far."""
    reader = _reader(consumer, 10, 60, fail=False)
    with caplog.at_level(logging.WARNING):
        reader.accept(messages)
    return reader, [r.getMessage() for r in caplog.records if "Data loss" in r.getMessage()]


def test_out_of_range_fails_with_cluster_topic_partition_and_offsets() -> None:
    reader = _reader(_Consumer(low=50, high=90), 10, 60, fail=True)
    reader.accept([_message("t", 0, 10), _message("t", 0, 11)])
    with pytest.raises(DataLossError) as info:
        reader.accept([_out_of_range(12)])
    assert "offsets [12, 60) of east/t/0" in str(info.value)
    assert "failOnDataLoss=false" in str(info.value)


def test_out_of_range_without_fail_resumes_at_the_earliest_available_offset(
    caplog: pytest.LogCaptureFixture,
) -> None:
    consumer = _Consumer(low=50, high=90)
    messages = [_message("t", 0, 10), _message("t", 0, 11), _out_of_range(12)]
    reader, (warning,) = _accept_without_fail(consumer, messages, caplog)
    assert consumer.restarts == [("t", 0, 50)]
    # Exactly the records lost: from the next offset to the earliest one still available.
    assert "offsets [12, 50) of east/t/0" in warning
    reader.accept([_message("t", 0, o) for o in range(50, 61)])
    assert not reader.pending
    offsets = reader.builder.flush()["offset"].to_pylist()
    assert offsets == [10, 11, *range(50, 60)]  # nothing twice, nothing past the end


def test_out_of_range_without_fail_ends_a_range_that_is_entirely_gone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    consumer = _Consumer(low=80, high=90)
    reader, _ = _accept_without_fail(consumer, [_out_of_range(10)], caplog)
    assert not reader.pending and consumer.restarts == []
    recreated = _Consumer(low=0, high=5)  # the topic was recreated: offsets 10.. do not exist
    reader, warnings = _accept_without_fail(recreated, [_out_of_range(10)], caplog)
    assert not reader.pending and recreated.restarts == []
    assert len(warnings) == 2 and all("offsets [10, 60) of east/t/0" in w for w in warnings)


def test_partition_gone_while_reading() -> None:
    gone = KafkaError(KafkaError._UNKNOWN_PARTITION, "unknown partition")
    with pytest.raises(DataLossError, match="no longer exists"):
        _reader(_Consumer(0, 0), 0, 5, fail=True).accept([_message("t", 0, 0, gone)])
    reader = _reader(_Consumer(0, 0), 0, 5, fail=False)
    reader.accept([_message("t", 0, 0, gone)])
    assert not reader.pending


def test_headers_and_timestamp_types_match_spark() -> None:
    builder = BatchBuilder("east", include_headers=True)
    builder.add_run(
        "t",
        0,
        [
            _message("t", 0, 0, headers=[("a", b"1"), ("a", None), ("b", b"")]),
            _message("t", 0, 1, headers=None, timestamp=(2, 1_700_000_000_123)),
            _message("t", 0, 2, headers=[], timestamp=(0, -1)),
        ],
    )
    batch = builder.flush()
    assert batch.schema == arrow_schema(spark_schema(True))
    assert batch["headers"].to_pylist() == [
        [{"key": "a", "value": b"1"}, {"key": "a", "value": None}, {"key": "b", "value": b""}],
        None,
        None,
    ]
    # Spark's ids: 0 CreateTime, 1 LogAppendTime, -1 none.
    assert batch["timestampType"].to_pylist() == [0, 1, -1]
    stamps = batch["timestamp"].cast(pa.int64()).to_pylist()
    assert stamps == [1_700_000_000_000_000, 1_700_000_000_123_000, None]
    plain = BatchBuilder("east")
    plain.add_run("t", 0, [_message("t", 0, 0, headers=[("a", b"1")])])
    assert "headers" not in plain.flush().schema.names
