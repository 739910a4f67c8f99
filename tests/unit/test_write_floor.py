"""The write floor benchmark's pure parts (benchmarks/write_floor.py, benchmarks/measure.py,
benchmarks/floor.py, benchmarks/write_profile.py): thread groups, the split's arithmetic, the
floor's count, perf samples by code. The benchmarks run with ``python -m benchmarks.write_floor``
and ``python -m benchmarks.write_profile``, not here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import datasource

if not hasattr(datasource, "DataSourceStreamArrowWriter"):  # PySpark 4.0 (make test-min)
    pytest.skip(
        "the write floor is a DataSourceStreamArrowWriter, which PySpark 4.0 lacks",
        allow_module_level=True,
    )

from benchmarks.floor import Counted, FloorStreamWriter, floor_rows
from benchmarks.measure import is_planner, thread_group
from benchmarks.spark_sides import Run
from benchmarks.write_floor import (
    GROUPS,
    MAX_WARM_UPS,
    above,
    broker_line,
    split,
    split_lines,
    warm,
    warm_up,
)
from benchmarks.write_profile import code_of, split_by_code, tally


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
    assert thread_group("Python", "python3", True, planner=True) == "Python planner"
    assert is_planner(b"python\0-m\0pyspark.daemon\0pyspark.sql.worker.create_data_source\0")
    assert not is_planner(b"python\0-m\0pyspark.daemon\0pyspark.worker\0")
    assert {thread_group("JVM", "x", False), thread_group("Python", "x", False)} <= set(GROUPS)


def test_the_brokers_cpu_is_each_sides_median_and_a_side_not_measured_is_left_out() -> None:
    line = broker_line({"floor": [0.0, 0.01, 0.0], "native": [0.25, 0.2, 0.3], "kafka": []})
    assert line.endswith("(medians; not in the CPU above): floor 0.00, native 0.25")


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
    assert "| native / floor | -0.10 | +0.00 | +0.50 | +0.00 | +0.00 | +0.40 |" in lines


def test_the_floor_counts_every_row_it_is_handed(tmp_path: Path) -> None:
    writer = FloorStreamWriter(str(tmp_path / "counts"))
    batch = pa.RecordBatch.from_pydict({"key": ["a", "b", "c"], "value": [b"1", b"2", b"3"]})
    message = writer.write(iter([batch, batch.slice(0, 1)]))
    assert message == Counted(4, 2)
    assert floor_rows(tmp_path / "counts") == 0
    writer.commit([message, None, Counted(6, 1)], 0)
    writer.commit([Counted(1, 1)], 1)
    assert floor_rows(tmp_path / "counts") == 11
    first = json.loads((tmp_path / "counts").read_text().splitlines()[0])
    assert first == {"batch": 0, "rows": 10, "batches": 3, "tasks": 2}


def test_perf_samples_are_counted_by_thread_group_and_code() -> None:
    core = "/venv/site-packages/pyspark_dynamic_kafka_core/_core.abi3.so"
    assert code_of(core, "rd_kafka_msg_new") == "librdkafka"
    assert code_of(core, "pyspark_dynamic_kafka_core::write::Producer::send") == "core"
    assert code_of("/usr/lib/libpython3.11.so.1.0", "_PyEval_EvalFrameDefault") == "Python"
    assert code_of("/venv/site-packages/pyarrow/libarrow.so.2100", "arrow::ipc::x") == "Arrow"
    assert code_of("/usr/lib/x86_64-linux-gnu/libc.so.6", "__memmove_avx_unaligned") == "libc"
    assert code_of("[kernel.kallsyms]", "tcp_sendmsg") == "kernel"
    script = "\n".join(
        [
            f"          python  700/700       7f01 rd_kafka_produceva ({core})",
            f"          python  700/700       7f02 core::send::h1 ({core})",
            f"     rdk:broker1  700/705       7f03 rd_kafka_transport_io_serve ({core})",
            "     rdk:broker1  700/705       7f04 tcp_sendmsg ([kernel.kallsyms])",
            "          python  999/999       7f05 gc_collect_main (/usr/lib/libpython3.11.so.1.0)",
            "         swapper     0/0         7f06 [unknown] ([kernel.kallsyms])",
        ]
    )
    counts = tally(script, {700: False})
    assert counts == {
        ("Python main", "librdkafka"): 1,
        ("Python main", "core"): 1,
        ("Python rdk", "librdkafka"): 1,
        ("Python rdk", "kernel"): 1,
    }
    window = Run(1_000_000, 1.0, {"Python main": 1.0, "Python rdk": 0.5})
    table = split_by_code(window, counts)
    assert table["Python main"]["librdkafka"] == 0.5 and table["Python main"]["core"] == 0.5
    assert table["Python rdk"]["kernel"] == 0.25 and table["Python rdk"]["Python"] == 0.0


def _jit(**per_record: float) -> dict[str, Run]:
    """One round's sides, each with its JIT threads' CPU in µs per record (1,000,000 rows)."""
    return {
        name: Run(1_000_000, 1.0, {"JVM JIT": us, "JVM task": 0.5})
        for name, us in per_record.items()
    }


def test_the_jvm_is_warm_once_no_side_s_jit_still_falls_by_a_fifth() -> None:
    # Spark's to_avro into its sink, warm-up rounds 1 to 3: still compiling
    assert not warm(_jit(kafka=2.51, native=1.32), _jit(kafka=1.84, native=0.49))
    # one side settled, another still falling
    assert not warm(_jit(kafka=0.88, native=0.30), _jit(kafka=0.62, native=0.30))
    # what is left is under 0.2 µs per record, however it fell (noise, at that size)
    assert warm(_jit(kafka=0.62, native=0.19), _jit(kafka=0.17, native=0.12))
    # Spark's sink compiles each query's code anew: a steady 0.5-0.7 is warm
    assert warm(_jit(kafka=0.62, floor=0.17), _jit(kafka=0.71, floor=0.13))
    assert warm(_jit(kafka=0.62), _jit(kafka=0.50))
    assert not warm(_jit(kafka=0.62), _jit(kafka=0.49))


def test_warm_ups_run_until_the_jvm_is_warm_twice_in_a_row() -> None:
    def rounds(*jit: float) -> tuple[list[int], Any]:
        ran: list[int] = []

        def warming(index: int) -> dict[str, Run]:
            ran.append(index)
            return _jit(kafka=jit[index], native=0.1)

        return ran, warming

    # to_avro into Spark's sink: a step down after a round that did not fall
    ran, warming = rounds(2.28, 1.30, 0.88, 0.97, 0.62, 0.17, 0.09, 0.08)
    assert warm_up(warming) == 7
    assert ran == [0, 1, 2, 3, 4, 5, 6]
    # Spark's own sink on bytes: its code compiled anew each query, steady from the third
    ran, warming = rounds(1.42, 0.83, 0.62, 0.71, 0.65, 0.9, 0.9, 0.9)
    assert warm_up(warming) == 5
    # to_avro's plateau before its step down: warm twice by the fourth round; with at least 7,
    # the step down (0.52, 0.24) starts the count again
    ran, warming = rounds(2.27, 1.20, 0.97, 1.01, 0.52, 0.24, 0.06, 0.11)
    assert warm_up(warming) == 4
    assert warm_up(warming, least=7) == 8
    # never settles: at most MAX_WARM_UPS
    ran, warming = rounds(*[2.0 * 0.7**i for i in range(MAX_WARM_UPS)])
    assert warm_up(warming) == MAX_WARM_UPS
