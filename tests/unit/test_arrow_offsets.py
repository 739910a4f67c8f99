"""The offset column of ``BatchBuilder``: gap-free runs are built vectorised, gapped runs as
given; either way the column holds each record's own offset.

confluent-kafka's ``Message`` can be built directly (no broker needed to hold an offset)."""

from __future__ import annotations

import pytest
from confluent_kafka import Message

from pyspark_dynamic_kafka.engines.read_python_batches import BatchBuilder
from pyspark_dynamic_kafka.source.schema import ARROW_SCHEMA


def _messages(partition: int, offsets: list[int]) -> list[Message]:
    return [
        Message(
            topic="t",
            partition=partition,
            offset=o,
            key=None,
            value=str(o).encode(),
            timestamp=(1, 1_700_000_000_000 + o),
        )
        for o in offsets
    ]


@pytest.mark.parametrize(
    "runs",
    [
        [(0, [5, 6, 7, 8])],  # gap-free
        [(0, [5, 7, 8, 20])],  # gaps (compaction, transaction markers)
        [(0, [0]), (1, [3, 4]), (0, [1, 2, 9]), (1, [5])],  # mixed, interleaved partitions
        [(0, list(range(10**12, 10**12 + 70_000)))],  # longer than the cached 0..65535
        [(2, [3, 2**40])],  # two records, gap of more than the run length
    ],
)
def test_offsets_column_holds_every_record_offset(runs: list[tuple[int, list[int]]]) -> None:
    builder = BatchBuilder("c", max_rows=10**9)
    for partition, offsets in runs:
        builder.add_run("t", partition, _messages(partition, offsets))
    expected = [o for _, offsets in runs for o in offsets]
    assert len(builder) == len(expected)
    batch = builder.flush()
    assert batch.schema == ARROW_SCHEMA
    assert batch.column("offset").to_pylist() == expected
    assert batch.column("value").to_pylist() == [str(o).encode() for o in expected]
    assert batch.column("partition").to_pylist() == [p for p, offs in runs for _ in offs]
    assert len(builder) == 0


def test_due_counts_rows_of_gap_free_runs() -> None:
    builder = BatchBuilder("c", max_rows=10)
    builder.add_run("t", 0, _messages(0, list(range(9))))
    assert not builder.due
    builder.add_run("t", 0, _messages(0, [9]))
    assert builder.due
    assert builder.flush().column("offset").to_pylist() == list(range(10))
