"""The write floor benchmark's pure parts (benchmarks/write_floor.py, benchmarks/measure.py,
benchmarks/floor.py): thread groups, the split's arithmetic, the floor's count. The benchmark
itself runs with ``python -m benchmarks.write_floor``, not here."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from benchmarks.floor import Counted, FloorStreamWriter, floor_rows
from benchmarks.measure import thread_group
from benchmarks.spark_sides import Run
from benchmarks.write_floor import GROUPS, above, split, split_lines


def test_threads_are_grouped_by_process_kind_and_name() -> None:
    assert thread_group("Python", "python3", True) == "Python main"
    assert thread_group("Python", "rdk:broker1", False) == "Python rdk"
    assert thread_group("Python", "rdk:main", False) == "Python rdk"
    assert thread_group("Python", "python3", False) == "Python other"
    assert thread_group("JVM", "Executor task l", False) == "JVM task"
    assert thread_group("JVM", "kafka-producer-", False) == "JVM kafka"
    assert thread_group("JVM", "GC Thread#1", False) == "JVM GC"
    assert thread_group("JVM", "G1 Conc#0", False) == "JVM GC"
    assert thread_group("JVM", "C2 CompilerThre", False) == "JVM JIT"
    assert thread_group("JVM", "java", True) == "JVM other"
    assert {thread_group("JVM", "x", False), thread_group("Python", "x", False)} <= set(GROUPS)


def test_the_split_is_the_median_per_group_and_the_difference_above_a_base() -> None:
    def run(**cpu: float) -> Run:  # CPU seconds of 1,000,000 rows: µs per record as given
        return Run(1_000_000, 1.0, {k.replace("_", " "): v for k, v in cpu.items()})

    rounds = [
        {"floor": run(JVM_task=0.5, Python_main=0.3), "native": run(JVM_task=0.6, Python_main=1.0)},
        {"floor": run(JVM_task=0.7, Python_main=0.5), "native": run(JVM_task=0.4, Python_main=0.8)},
        {"floor": run(JVM_task=0.6, Python_main=0.4), "native": run(JVM_task=0.5, Python_main=0.9)},
    ]
    table = split(rounds)
    assert round(table["floor"]["JVM task"], 6) == 0.6
    assert round(table["native"]["Python main"], 6) == 0.9
    assert round(table["native"]["total"], 6) == 1.4
    assert table["native"]["Python rdk"] == 0.0
    diff = above(table, "native", "floor")
    assert round(diff["JVM"], 6) == -0.1
    assert round(diff["Python"], 6) == 0.5
    assert round(diff["total"], 6) == 0.4
    lines = split_lines(table)
    assert lines[0].startswith("| side | JVM task |")
    assert "| native / floor | -0.10 | +0.50 | +0.00 | +0.00 | +0.40 |" in lines


def test_the_floor_counts_every_row_it_is_handed(tmp_path: Path) -> None:
    writer = FloorStreamWriter(str(tmp_path / "counts"))
    batch = pa.RecordBatch.from_pydict({"key": ["a", "b", "c"], "value": [b"1", b"2", b"3"]})
    message = writer.write(iter([batch, batch.slice(0, 1)]))
    assert message == Counted(4, 2)
    assert floor_rows(tmp_path / "counts") == 0
    writer.commit([message, None, Counted(6, 1)], 0)
    writer.commit([Counted(1, 1)], 1)
    assert floor_rows(tmp_path / "counts") == 11
