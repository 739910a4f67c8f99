"""The package's wheel and the compiled core's wheel for this machine, built quickly: the core by
plain ``maturin build`` from make setup's cargo cache (packaging again, not building again), so
its tag is this machine's glibc (``make wheel`` builds the manylinux2014 wheels users get, a
first build of its own that takes longer than a test should). Used by the clean-install test
and by ``make test-oldest``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: make setup's cargo cache (Makefile CARGO_TARGET_DIR).
CARGO_CACHE = Path.home() / ".cache" / "pyspark-dynamic-kafka" / "native-target"


def build_local_wheels(out: Path) -> list[Path]:
    """Build both wheels into ``out`` (``DYNAMIC_KAFKA_WHEELS``: a folder holding both, built
    already); their paths."""
    given = os.environ.get("DYNAMIC_KAFKA_WHEELS")
    if given:
        return sorted(Path(given).resolve().glob("*.whl"))
    # From a copy of the sources: setuptools builds in the tree it is given (build/), where
    # another build (make wheel, a second suite) may be under way.
    tree = out.parent / "sources"
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    pip = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(tree)]
    subprocess.run(pip, check=True, timeout=900)
    maturin = Path(sys.executable).parent / "maturin"
    command = [str(maturin), "build", "--quiet", "--release", "--locked", "-j", "2"]
    command += ["-m", str(ROOT / "native" / "Cargo.toml"), "-i", sys.executable, "-o", str(out)]
    env = {**os.environ, "CARGO_TARGET_DIR": os.environ.get("CARGO_TARGET_DIR", str(CARGO_CACHE))}
    subprocess.run(command, check=True, timeout=3600, env=env)
    return sorted(out.glob("*.whl"))


if __name__ == "__main__":
    for wheel in build_local_wheels(Path(sys.argv[1]).resolve()):
        print(wheel)
