"""The small micro-batch benchmark's time in the batch (benchmarks/write_latency.py): each
record's append time less the start of the micro-batch that wrote it, from Spark's progress
reports. The benchmark runs with ``python -m benchmarks.write_latency``, not here."""

from __future__ import annotations

import pytest
from pyspark.sql import datasource

if not hasattr(datasource, "DataSourceStreamArrowWriter"):  # PySpark 4.0 (make test-min)
    pytest.skip(
        "the write floor is a DataSourceStreamArrowWriter, which PySpark 4.0 lacks",
        allow_module_level=True,
    )

from benchmarks.write_latency import in_batches


def test_a_record_counts_from_the_start_of_the_latest_micro_batch_before_its_append() -> None:
    # progress reports of micro-batches that began at 10.000 s, 11.000 s and 12.000 s (any order)
    reports = [
        {"timestamp": "1970-01-01T00:00:11.000Z"},
        {"timestamp": "1970-01-01T00:00:10.000Z"},
        {"timestamp": "1970-01-01T00:00:12.000Z"},
    ]
    appended = [9_999, 10_000, 10_040, 11_250, 12_001, 13_500]
    assert in_batches(appended, reports) == [0.0, 40.0, 250.0, 1.0, 1_500.0]
    assert in_batches(appended, []) == []
