"""Where the compiled core's CPU goes, read in one process without Spark.

On one Apache Kafka cluster (default 2,000,000 records of 100 bytes in 8 partitions), each pass
reads every record once with the core's ``Reader`` (the source's fetch settings, as a Spark task
of ``reader=native`` does, in two tasks of four partitions each); CPU is split per thread from
``/proc/self/task``: the main thread (consuming from librdkafka's queue and filling the Arrow
builders, with the GIL released) and librdkafka's own threads by name (``rdk:broker*`` fetch and
parse record batches, ``rdk:main`` runs timers and the consumer's queue forwarding). Passes:

* ``read``: the batches dropped as they come.
* ``read+ipc``: each batch also written as Arrow IPC into a pipe drained by another process, as
  Spark's Python worker writes it to the JVM: the hand-off's share.

``--set key=value`` overrides a librdkafka property, ``--max-rows`` the rows per batch;
``--other-core DIR`` (an unpacked wheel of another build of the core, e.g. of ``main``) adds its
passes beside the installed core's, interleaved in the same rounds (the two take turns going
first), so that two builds compare on the same broker and data; the median of the per-round
differences is printed too; ``--against key=value`` does the same with the installed core and
that property changed instead (``--against check.crcs=false``: what checking every batch's
CRC-32C costs). Run: ``python -m benchmarks.native_cost [--records N]``.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import statistics
import subprocess
import sys
import threading
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
from benchmarks.python_cost import loaded_topic

from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.kafka.pool import consumer_config

TOPIC = "nativecost"
_TICKS = os.sysconf("SC_CLK_TCK")


def _threads_cpu() -> dict[str, float]:
    """CPU seconds per thread kind of this process: ``main`` (the calling thread), ``rdk:broker``,
    ``rdk:main``, ``other``."""
    me = threading.get_native_id()
    out: dict[str, float] = defaultdict(float)
    for task in Path("/proc/self/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            name = (task / "comm").read_text().strip()
        except OSError:
            continue
        cpu = (int(fields[11]) + int(fields[12])) / _TICKS
        if int(task.name) == me:
            kind = "main"
        elif name.startswith("rdk:broker"):
            kind = "rdk:broker"
        elif name.startswith("rdk:"):
            kind = "rdk:main"
        else:
            kind = "other"
        out[kind] += cpu
    return out


def _priced(run: Callable[[], int]) -> dict[str, float]:
    """CPU µs per record of ``run()`` (which returns the records) per thread kind."""
    gc.disable()
    try:
        before = _threads_cpu()
        count = run()
        after = _threads_cpu()
    finally:
        gc.enable()
    return {k: (after[k] - before.get(k, 0.0)) / count * 1e6 for k in after}


class _Pipe:
    """A pipe drained by a ``cat > /dev/null`` child: a socket-like sink for the IPC stream."""

    def __init__(self) -> None:
        read_fd, write_fd = os.pipe()
        self.child = subprocess.Popen(["cat"], stdin=read_fd, stdout=subprocess.DEVNULL)
        os.close(read_fd)
        self.file = os.fdopen(write_fd, "wb", buffering=65536)

    def close(self) -> None:
        self.file.close()
        self.child.wait()


def read_pass(
    module: Any,
    consumers: list[Any],
    ends: dict[int, int],
    max_rows: int,
    sink: _Pipe | None,
) -> int:
    """Read every partition once, half of them per consumer (as two tasks would)."""
    parts = sorted(ends)
    count = 0
    writer = None
    for i, consumer in enumerate(consumers):
        ranges = [(TOPIC, p, 0, ends[p]) for p in parts[i :: len(consumers)]]
        reader = module.Reader("c", consumer, ranges, 120_000, False, True, max_rows)
        for batch in reader:
            count += batch.num_rows
            if sink is not None:
                if writer is None:
                    writer = pa.ipc.new_stream(sink.file, batch.schema)
                writer.write_batch(batch)
                sink.file.flush()
    if writer is not None:
        writer.close()
    return count


def _load_core(directory: str) -> Any:
    """The ``_core`` extension of another build (an unpacked wheel), beside the installed one."""
    found = sorted(Path(directory).glob("pyspark_dynamic_kafka_core/_core*.so"))
    if not found:
        raise SystemExit(f"no pyspark_dynamic_kafka_core/_core*.so under {directory}")
    spec = importlib.util.spec_from_file_location("other_core._core", found[0])
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {found[0]}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-rows", type=int, default=65536)
    parser.add_argument("--set", action="append", default=[], help="librdkafka key=value")
    parser.add_argument("--other-core", help="an unpacked wheel of another build of the core")
    parser.add_argument(
        "--against", action="append", default=[], help="key=value of the other side's consumers"
    )
    parser.add_argument("--no-ipc", action="store_true", help="leave the read+ipc pass out")
    args = parser.parse_args()
    installed = core()
    if installed is None:
        raise SystemExit("the compiled core is not installed (make setup)")
    modules = {"": installed}
    if args.other_core or args.against:
        modules["other "] = _load_core(args.other_core) if args.other_core else installed
    overrides = dict(item.split("=", 1) for item in args.set)
    against = dict(item.split("=", 1) for item in args.against)
    with loaded_topic("nativecost", TOPIC, args.records) as (bootstrap, ends):
        props = FrozenProperties({"bootstrap.servers": bootstrap, **overrides})
        config = sorted(consumer_config(props).items())
        other = sorted(consumer_config(FrozenProperties({**props, **against})).items())
        consumers = {
            k: [m.Consumer(c), m.Consumer(c)]
            for k, m in modules.items()
            for c in [other if k == "other " else config]
        }
        print(f"reading, pid {os.getpid()}", flush=True)
        results: dict[str, list[dict[str, float]]] = defaultdict(list)
        for rnd in range(args.rounds + 1):  # the first round warms up (connections), not counted
            # Two builds take turns going first, so that neither always reads after the other.
            order = list(modules.items())
            for label, module in order[rnd % 2 :] + order[: rnd % 2]:
                pair = consumers[label]
                plain = _priced(partial(read_pass, module, pair, ends, args.max_rows, None))
                if rnd:
                    results[f"{label}read"].append(plain)
                if args.no_ipc:
                    continue
                sink = _Pipe()
                try:
                    piped = _priced(partial(read_pass, module, pair, ends, args.max_rows, sink))
                finally:
                    sink.close()
                if rnd:
                    results[f"{label}read+ipc"].append(piped)
        for pair in consumers.values():
            for consumer in pair:
                consumer.close()
    print(f"settings: max_rows {args.max_rows}, overrides {overrides or 'none'}")
    if against:
        print(f"other: the installed core with {against}")
    for name, rounds in results.items():
        kinds = sorted({k for r in rounds for k in r})
        parts = {k: statistics.median(r.get(k, 0.0) for r in rounds) for k in kinds}
        total = statistics.median(sum(r.values()) for r in rounds)
        split = ", ".join(f"{k} {v:.3f}" for k, v in parts.items())
        print(f"{name:15} {total:.3f} us/record ({split}), median of {len(rounds)} rounds")
    for name in [n for n in results if not n.startswith("other ")]:
        if f"other {name}" in results:
            print(_paired(name, results[name], results[f"other {name}"]))
    sys.stdout.flush()


def _paired(name: str, mine: list[dict[str, float]], other: list[dict[str, float]]) -> str:
    """The median over rounds of (installed - other), in total and per thread: a difference
    taken within each round, so that load changing between rounds cancels."""
    pairs = list(zip(mine, other, strict=True))
    kinds = sorted({k for a, b in pairs for k in (*a, *b)})
    total = statistics.median(sum(a.values()) - sum(b.values()) for a, b in pairs)
    split = ", ".join(
        f"{k} {statistics.median(a.get(k, 0.0) - b.get(k, 0.0) for a, b in pairs):+.3f}"
        for k in kinds
    )
    return f"{name} - other: {total:+.3f} us/record ({split}), median of {len(mine)} rounds"


if __name__ == "__main__":
    main()
