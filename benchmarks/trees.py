"""The tree on disk against an older tree of the project, side by side in one run.

``python -m benchmarks.trees --rev dc7d380`` (the commit before the ``source/`` redesign) exports
``src/`` of that revision (``git archive``) into ``$BENCH_DIR/tree-<rev>/`` and reads the same data
three ways, each in a Spark session of its own process (:mod:`benchmarks.tree_side`):

* ``old``: the exported tree first on ``PYTHONPATH`` (driver and Python workers; each side
  prints where its driver and a worker imported ``pyspark_dynamic_kafka`` from, and the run stops
  if the old side did not import the export or a new side did), with its only reader;
* ``python``: this tree, ``reader=python`` (confluent-kafka);
* ``auto``: this tree, ``reader=auto`` (the compiled core where installed).

Only the public API is common to both: ``format("dynamic_kafka")``, its options and a metadata
file. Data, clusters, windows and CPU are those of :mod:`benchmarks.run` (same loading, same
:func:`benchmarks.spark_sides.measure`): a new query per read, the ``addBatch`` span of the batch
that reads everything, CPU of the side's JVM and its Python workers. A warm-up round, then
``--rounds`` rounds with the sides interleaved, order reversed every other round; the ratios
new / old per round and their medians are printed.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from contextlib import ExitStack
from pathlib import Path
from typing import IO, Any

from benchmarks import report
from benchmarks.measure import load_average
from benchmarks.run import CASES, load
from benchmarks.spark_sides import Run, write_metadata
from benchmarks.tree_side import PREFIX

from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.testing import start_clusters

ROOT = Path(__file__).resolve().parent.parent
#: side -> (tree, reader option); tree ``old`` is the exported revision.
SIDES = {"old": ("old", None), "python": ("new", "python"), "auto": ("new", "auto")}
PAIRS = [("python", "old"), ("auto", "old")]
#: Issue 20: "not slower" than the old tree, whichever reader.
TARGETS: dict[str, report.Target] = {"python/old": (1.0, 1.0), "auto/old": (1.0, 1.0)}


def export(rev: str, into: Path) -> Path:
    """``src/`` of ``rev`` under ``into``; the directory to put first on ``PYTHONPATH``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", rev, "src"],
        check=True,
        capture_output=True,
    ).stdout
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


class Side:
    """A :mod:`benchmarks.tree_side` process: one SparkSession reading with one tree."""

    def __init__(self, name: str, src: Path | None, reader: str | None) -> None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        if src is not None:
            env["PYTHONPATH"] = str(src)
        self.name = name
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.tree_side", reader or "-"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        where = self._answer()
        expected = str(src) if src is not None else str(ROOT / "src")
        for place in ("driver", "worker"):
            if not where[place].startswith(expected + os.sep):
                raise SystemExit(f"side {name}: {place} imported {where[place]}, not {expected}")
        print(f"side {name}: driver {where['driver']}, worker {where['worker']}", flush=True)

    def _answer(self) -> dict[str, Any]:
        out: IO[str] | None = self.process.stdout
        assert out is not None
        for line in out:
            if line.startswith(PREFIX):
                return dict(json.loads(line[len(PREFIX) :]))
        raise SystemExit(f"side {self.name} exited with {self.process.wait()}")

    def read(self, metadata: Path, total: int) -> Run:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps({"metadata": str(metadata), "total": total}) + "\n")
        stdin.flush()
        got = self._answer()
        return Run(int(got["rows"]), float(got["seconds"]), dict(got["cpu"]))

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=300)


def main() -> None:
    parser = report.parser(__doc__, 2_000_000)
    parser.add_argument("--rev", default="dc7d380", help="the old tree's revision")
    kafka_cases = [c for c in CASES if c.startswith("kafka") and CASES[c][3] is None]
    parser.add_argument("--cases", nargs="+", default=["kafka-1x8"], choices=kafka_cases)
    args = parser.parse_args()
    if core() is None:
        raise SystemExit("the compiled core is not installed (make setup): side auto needs it")
    workdir = Path(os.environ.get("BENCH_DIR", "/tmp/dynamic-kafka-bench"))
    old_src = export(args.rev, workdir / f"tree-{args.rev}")
    count = max(CASES[c][1] for c in args.cases)
    results: dict[str, list[dict[str, Run]]] = {case: [] for case in args.cases}
    with ExitStack() as stack:
        names = [f"kafka{i}" for i in range(count)]
        started = {"kafka": stack.enter_context(start_clusters(names, broker="kafka"))}
        data = {case: load(started, case, args.records, args.size) for case in args.cases}
        for case in args.cases:
            metadata = workdir / f"trees-{case}.yaml"
            write_metadata(metadata, data[case]["clusters"], data[case]["topic"])
        sides = {}
        for name, (tree, reader) in SIDES.items():
            sides[name] = Side(name, old_src if tree == "old" else None, reader)
            stack.callback(sides[name].close)
        for rnd in range(args.rounds + 1):
            for case in args.cases if rnd % 2 else reversed(args.cases):
                names = list(SIDES) if rnd % 2 else list(reversed(SIDES))
                load_now = load_average()
                total = data[case]["total"]
                runs = {n: sides[n].read(workdir / f"trees-{case}.yaml", total) for n in names}
                runs = {n: runs[n] for n in SIDES}
                if rnd:
                    results[case].append(runs)
                report.print_round(case, rnd, load_now, runs, PAIRS)

    print(f"\nrev {args.rev} (old) against the tree on disk; load average now {load_average():.1f}")
    for case, rounds in results.items():
        print(
            f"{case}, {len(rounds)} rounds:\n"
            + "\n".join(report.pair_summary(rounds, PAIRS, TARGETS))
        )
    out = workdir / "trees.json"
    out.write_text(json.dumps(report.as_json(results), indent=1))
    print(f"results: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
