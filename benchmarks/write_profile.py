"""Where a Python worker's write time goes, by code: ``perf`` samples of the write floor and ours.

The setting of :mod:`benchmarks.write_floor` (same broker, rows and queries); each ``--sides`` side
(default ``floor``, ``native`` and ``exactly_once_native``) runs once to warm up, then once under
``perf record -a -F 999`` (system-wide: the Python workers are forked while the query runs).
Only the samples of the Spark tree's Python processes count; each is put in a thread group
(:func:`benchmarks.measure.thread_group`: the worker's main thread, librdkafka's ``rdk:``
threads) and a code class by its shared object and symbol (:func:`code_of`): the interpreter,
Arrow (pyarrow), the compiled core's own code, librdkafka (linked into the core), libc, the
kernel. A group's CPU per record measured by the query's :class:`~benchmarks.measure.ThreadSampler`
(its ``addBatch`` window) is then split in proportion to its samples: the CPU is measured, the
split by code is sampled (``--avro``: the rows and sides of :mod:`benchmarks.avro_sink`). Needs
``perf`` (Linux, permission to sample every CPU: root or ``perf_event_paranoid`` <= 0).
``python -m benchmarks.write_profile``; ``--records N --sides ... --avro``.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

from benchmarks.measure import (
    children_map,
    cmdline,
    descendants,
    is_planner,
    process_cpu,
    thread_group,
)
from benchmarks.spark_sides import Run
from benchmarks.write_floor import FloorWrites, floor_writes

#: Symbols of the code linked into the core that is librdkafka's (and its C dependencies').
_RDKAFKA = ("rd_", "cnd_", "mtx_", "thrd_", "tss_", "LZ4", "ZSTD", "crc32c", "snappy")
CODES = ["Python", "Arrow", "core", "librdkafka", "libc", "kernel", "other"]


def code_of(dso: str, sym: str) -> str:
    """The code class of one sample from its shared object's path and its symbol."""
    name = dso.rsplit("/", 1)[-1]
    if "kernel" in name:
        return "kernel"
    if "_core.abi3" in name:
        return "librdkafka" if sym.startswith(_RDKAFKA) else "core"
    if name.startswith(("libpython", "python")):
        return "Python"
    if "arrow" in dso:  # libarrow*.so, pyarrow's extension modules
        return "Arrow"
    if name.startswith(("libc.", "libc-", "libm.", "ld-linux", "libpthread")):
        return "libc"
    return "other"


def tally(
    script: str, pids: dict[int, bool], symbols: Counter[tuple[str, str, str]] | None = None
) -> Counter[tuple[str, str]]:
    """``perf script -F comm,pid,tid,ip,sym,dso`` lines of ``pids`` (``{pid: is a planner}``)
    counted by (thread group, code class); by (group, code, symbol) into ``symbols`` too."""
    counts: Counter[tuple[str, str]] = Counter()
    for line in script.splitlines():
        head, _, rest = line.partition("/")
        comm_pid = head.rsplit(None, 1)
        if len(comm_pid) != 2 or not comm_pid[1].isdigit() or int(comm_pid[1]) not in pids:
            continue
        comm, pid = comm_pid[0].strip(), int(comm_pid[1])
        fields = rest.split(None, 2)
        tid = int(fields[0])
        sym, _, dso = fields[2].rpartition(" (") if len(fields) > 2 else ("", "", "")
        group = thread_group("Python", comm, tid == pid, pids[pid])
        code = code_of(dso.rstrip(")"), sym)
        counts[(group, code)] += 1
        if symbols is not None:
            symbols[(group, code, sym)] += 1
    return counts


def split_by_code(window: Run, counts: Counter[tuple[str, str]]) -> dict[str, dict[str, float]]:
    """``{thread group: {code: µs/record}}``: each group's measured CPU in ``window`` shared out
    by its samples."""
    table = {}
    for group in sorted({g for g, _ in counts}):
        samples = sum(n for (g, _), n in counts.items() if g == group)
        cpu = window.cpu.get(group, 0.0) / window.rows * 1e6
        table[group] = {c: cpu * counts[(group, c)] / samples for c in CODES}
    return table


def _python_pids(jvm: int) -> dict[int, bool]:
    tree = [jvm, *descendants(jvm, children_map())]
    python = [pid for pid in tree if (found := process_cpu(pid)) and found[0] == "Python"]
    return {pid: is_planner(cmdline(pid)) for pid in python}


def profiled(
    writes: FloorWrites, side: str, data: Path, symbols: Counter[tuple[str, str, str]]
) -> tuple[Run, Counter[tuple[str, str]]]:
    """One run of ``side`` under ``perf record``: its ``addBatch`` window and its samples (by
    symbol into ``symbols``)."""
    perf = subprocess.Popen(
        ["perf", "record", "-a", "-F", "999", "-q", "-o", str(data)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _, window = writes.side(side)
        pids = _python_pids(writes.jvm)
    finally:
        perf.send_signal(signal.SIGINT)
        perf.wait(60)
    fields = "comm,pid,tid,ip,sym,dso"
    script = subprocess.run(
        ["perf", "script", "-i", str(data), "-F", fields],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return window, tally(script, pids, symbols)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--sides", nargs="+", default=["floor", "native", "exactly_once_native"])
    parser.add_argument("--top", type=int, default=12, help="symbols listed per side")
    parser.add_argument("--avro", action="store_true", help="benchmarks.avro_sink's rows")
    args = parser.parse_args()
    if args.avro:
        from benchmarks.avro_sink import avro_writes

        opened = avro_writes(args.records, False)
    else:
        opened = floor_writes("write_profile", args.records, args.size)
    with opened as writes:
        for side in args.sides:  # warm-up
            writes.side(side)
        with tempfile.TemporaryDirectory() as tmp:
            for side in args.sides:
                load = os.getloadavg()[0]
                symbols: Counter[tuple[str, str, str]] = Counter()
                window, counts = profiled(writes, side, Path(tmp) / f"{side}.data", symbols)
                print(f"\n{side}: addBatch window, load {load:.1f}; µs per record by code")
                print(f"| thread | {' | '.join(CODES)} | samples |")
                print("|" + " --- |" * (len(CODES) + 2))
                for group, row in split_by_code(window, counts).items():
                    n = sum(v for (g, _), v in counts.items() if g == group)
                    cells = " | ".join(f"{row[c]:.2f}" for c in CODES)
                    print(f"| {group} | {cells} | {n} |", flush=True)
                total = sum(symbols.values())
                print(f"top symbols of {side} (share of its Python processes' samples):")
                for (group, code, sym), n in symbols.most_common(args.top):
                    print(f"  {n / total:6.1%} {group:14} {code:10} {sym[:70]}")


if __name__ == "__main__":
    main()
