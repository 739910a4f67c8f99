"""``make bench``'s tree comparison (:mod:`benchmarks.trees`) runs :mod:`benchmarks.tree_side`
with the old tree's ``src/`` first on ``PYTHONPATH``: the side may import only what that tree
has. The old tree is the real one, exported from git at the Makefile's ``BENCH_OLD_REV``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from benchmarks.trees import ROOT, export


def _old_rev() -> str:
    found = re.search(r"^BENCH_OLD_REV \?= (\w+)$", (ROOT / "Makefile").read_text(), re.M)
    assert found, "the Makefile sets no BENCH_OLD_REV"
    return found.group(1)


def test_the_tree_side_imports_on_the_old_tree(tmp_path: Path) -> None:
    src = export(_old_rev(), tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(src)
    probe = "import benchmarks.tree_side, pyspark_dynamic_kafka as p; print(p.__file__)"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_relative_to(src)
