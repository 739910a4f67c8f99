"""A Spark Python worker's heap frozen by the first task of ours it runs (gcpause.py), so the full
collection PySpark's daemon runs after every task skips the worker's modules: in real Spark tasks,
on the session's reused workers."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

from pyspark_dynamic_kafka.gcpause import freeze_worker_heap


def test_each_worker_freezes_its_heap_once_in_a_task_and_the_driver_never(spark: Any) -> None:
    # defined here, so Spark's workers get it by value (they cannot import this module)
    def _probe(_: Iterator[int]) -> Iterator[tuple[int, bool, bool, int]]:
        import gc
        import os

        from pyspark_dynamic_kafka.gcpause import freeze_worker_heap

        first = freeze_worker_heap()
        again = freeze_worker_heap()
        yield os.getpid(), first, again, gc.get_freeze_count()

    frozen_here = gc.get_freeze_count()
    froze: list[int] = []
    for _ in range(2):  # the second job's tasks run in workers that froze in the first
        rows = spark.sparkContext.parallelize(range(4), 4).mapPartitions(_probe).collect()
        assert len(rows) == 4
        assert all(count > 0 for *_, count in rows), rows
        assert not any(again for _, _, again, _ in rows), rows
        froze += [pid for pid, first, _, _ in rows if first]
    assert len(froze) == len(set(froze)), froze  # once per worker process
    assert freeze_worker_heap() is False
    assert gc.get_freeze_count() == frozen_here
