"""The timestamp column of the Python reader's ``BatchBuilder`` at the edges of Spark's range.

Spark's kafka source turns a record's milliseconds into its timestamp's microseconds with an
exact multiplication (``DateTimeUtils.millisToMicros``, ``Math.multiplyExact``): from
-9223372036854775 to 9223372036854775 ms the column holds ``ms * 1000``, past either end the task
fails. A wrapped multiplication would give a garbage timestamp instead.

confluent-kafka's ``Message`` can be built directly: no broker accepts a timestamp of every
value (brokers bound CreateTime by ``message.timestamp.before/after.max.ms``), so these edges
are set here; the integration test ``test_timestamps_past_range.py`` produces a real one.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Message

from pyspark_dynamic_kafka.engines.batches import EARLIEST_MS, LATEST_MS
from pyspark_dynamic_kafka.engines.read_python_batches import BatchBuilder
from pyspark_dynamic_kafka.errors import ReadError

CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP = 1, 2, 0


def _message(offset: int, kind: int, ms: int, topic: str = "orders", partition: int = 3) -> Message:
    return Message(
        topic=topic, partition=partition, offset=offset, value=b"v", timestamp=(kind, ms)
    )


def test_the_edges_of_sparks_range_are_exact_microseconds() -> None:
    assert (EARLIEST_MS, LATEST_MS) == (-9223372036854775, 9223372036854775)
    builder = BatchBuilder("east")
    stamps = [
        (CREATE_TIME, LATEST_MS),
        (LOG_APPEND_TIME, EARLIEST_MS),
        (CREATE_TIME, -1),  # a timestamp like any other: 1969-12-31 23:59:59.999
        (NO_TIMESTAMP, -(2**63)),  # no timestamp: null, whatever the value beside it
        (CREATE_TIME, 1_700_000_000_123),
    ]
    builder.add_run("orders", 3, [_message(i, k, ms) for i, (k, ms) in enumerate(stamps)])
    batch = builder.flush()
    micros = batch.column("timestamp").cast("int64").to_pylist()
    assert micros == [
        9_223_372_036_854_775_000,
        -9_223_372_036_854_775_000,
        -1_000,
        None,
        1_700_000_000_123_000,
    ]
    assert batch.column("timestampType").to_pylist() == [0, 1, 0, -1, 0]


@pytest.mark.parametrize(
    ("kind", "ms"),
    [
        (CREATE_TIME, 9_223_372_036_854_776),  # one past the latest
        (LOG_APPEND_TIME, -9_223_372_036_854_776),  # one past the earliest
        (CREATE_TIME, 1_764_316_800_000_000_000),  # 2025-11-28 in nanoseconds
        (CREATE_TIME, 2**63 - 1),
        (CREATE_TIME, -(2**63)),
    ],
)
def test_a_timestamp_past_sparks_range_fails_naming_the_record(kind: int, ms: int) -> None:
    builder = BatchBuilder("east")
    builder.add_run("orders", 3, [_message(o, CREATE_TIME, 1_700_000_000_000) for o in (7, 8)])
    # the bad record in a later run, after a gap: its own offset is named, not its row's
    builder.add_run("other", 0, [_message(0, CREATE_TIME, 1)])
    builder.add_run("orders", 3, [_message(20, CREATE_TIME, 5), _message(41, kind, ms)])
    with pytest.raises(ReadError) as failed:
        builder.flush()
    assert str(failed.value) == (
        f"Reading from cluster 'east' failed: the record of orders/3 at offset 41 has a timestamp "
        f"of {ms} ms, past Spark's timestamp range (-9223372036854775 to 9223372036854775 ms): "
        "was it written in nanoseconds or microseconds? Spark's own kafka source fails on it "
        "too. Fix the producer; to read on, start from a later offset"
    )
