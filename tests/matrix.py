"""``make test-matrix``: the wheels in a new virtualenv per cell, on each PySpark minor PyPI serves
from the lowest supported (its newest patch) with this Python, and on each other supported Python
with the newest PySpark that installs on it (PySpark 4.3 needs Python 3.11); in each, the
integration smoke on Apache Kafka plus the tests of what differs between PySpark versions
(:data:`TESTS`). A table of what each cell ran and printed goes to standard output and to
``build/matrix/results.md``.

Run as ``python tests/matrix.py [--wheels DIR] [--oldest | CELL ...]``, a cell as ``3.11:4.0.5``;
the wheels are ``dist/``'s (``make wheel``) unless ``--wheels`` names another folder (``make
test-oldest``: :mod:`tests.local_wheels`'). ``--oldest`` is the one cell of the oldest supported
pair (the lowest Python, the lowest PySpark minor's newest patch), which CI runs beside make
test. Exits non-zero when a cell fails.
"""

from __future__ import annotations

import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "build" / "matrix"
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
LOWEST_SPARK = (4, 0)
#: The test tools, at requirements-dev.txt's pins (authlib, attrs, cachetools and httpx: the tests'
#: confluent-kafka schema registry client).
TOOLS = ("pytest", "pytest-timeout", "pytest-xdist", "hypothesis", "httpx", "authlib", "attrs")
TOOLS += ("cachetools",)
#: Beyond the smoke tests: Avro from registries, the batch and the stream sink (PySpark 4.0's
#: stream writer takes rows), the read limits PySpark 4.2 brings.
TESTS = (
    "tests/integration/test_avro_source.py",
    "tests/integration/test_sink_write.py::test_batch_write_puts_every_row_on_the_route",
    "tests/integration/test_sink_write.py::"
    "test_streaming_write_follows_a_metadata_flip_between_micro_batches",
    "tests/integration/test_pyspark_versions.py",
)


def spark_versions(python: str | None = None) -> list[str]:
    """The newest patch of each PySpark minor on PyPI from the lowest supported, of those that
    install on ``python`` (a version such as ``3.10``; this Python by default): asked of that
    interpreter's pip, which leaves out a release whose Requires-Python refuses it (PySpark
    4.3 needs Python 3.11)."""
    pip = [interpreter(python) if python else sys.executable, "-m", "pip"]
    index = subprocess.run(
        [*pip, "index", "versions", "pyspark"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    listed = re.search(r"Available versions: (.*)", index)
    if listed is None:
        raise SystemExit(f"pip index versions pyspark printed no versions:\n{index}")
    newest: dict[tuple[int, int], str] = {}
    for version in (v.strip() for v in listed.group(1).split(",")):
        parts = version.split(".")
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            continue  # a pre-release
        minor = (int(parts[0]), int(parts[1]))
        if minor >= LOWEST_SPARK and minor not in newest:  # listed newest first
            newest[minor] = version
    return [newest[m] for m in sorted(newest)]


def cells() -> list[tuple[str, str]]:
    """Every PySpark minor with this Python, then with each other Python the newest PySpark
    that installs on it."""
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    others = [(p, spark_versions(p)[-1]) for p in PYTHONS if p != here]
    return [(here, s) for s in spark_versions()] + others


def interpreter(version: str) -> str:
    """A ``python<version>`` that runs: on the PATH, else pyenv's."""
    candidates = [f"python{version}"]
    root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    candidates += sorted(glob.glob(f"{root}/versions/{version}.*/bin/python{version}"))
    for candidate in candidates:
        found = shutil.which(candidate) or (candidate if Path(candidate).exists() else None)
        if found and subprocess.run([found, "-c", "pass"], capture_output=True).returncode == 0:
            return found
    raise SystemExit(f"no Python {version} here (tried {', '.join(candidates)})")


def pins() -> dict[str, str]:
    found = {}
    for line in (ROOT / "requirements-dev.txt").read_text().splitlines():
        name, _, version = line.strip().partition("==")
        if version:
            found[name.lower()] = f"{name}=={version}"
    return found


def run_cell(python: str, spark: str, wheels: Path) -> dict[str, object]:
    """Install and run one cell (the wheels from ``wheels``); what it ran and printed."""
    venv = OUT / f"py{python}-spark{spark}"
    shutil.rmtree(venv, ignore_errors=True)
    started = time.monotonic()
    subprocess.run([interpreter(python), "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    (wheel,) = glob.glob(str(wheels / "pyspark_dynamic_kafka-*.whl"))
    cores = glob.glob(str(wheels / f"pyspark_dynamic_kafka_core-*{platform.machine()}*.whl"))
    pinned = pins()
    install = [f"pyspark=={spark}", f"{wheel}[server,monitoring,testing]", *cores]
    pip = subprocess.run(
        [py, "-m", "pip", "install", "--quiet", *install], capture_output=True, text=True
    )
    if pip.returncode == 0:  # the test tools at the dev pins, else (not on this Python) newest
        tools = [py, "-m", "pip", "install", "--quiet"]
        pip = subprocess.run([*tools, *(pinned.get(t, t) for t in TOOLS)], capture_output=True)
        if pip.returncode != 0:
            pip = subprocess.run([*tools, *TOOLS], capture_output=True, text=True)
    cell: dict[str, object] = {"python": python, "pyspark": spark}
    if pip.returncode != 0:
        cell.update(result="install failed", detail=str(pip.stderr)[-2000:])
        return cell
    env = {**os.environ, "DYNAMIC_KAFKA_TEST_BROKER": "kafka", "PYTHONPATH": str(ROOT)}
    env.pop("VIRTUAL_ENV", None)
    tests = subprocess.run(
        [py, "-m", "pytest", "-q", "-ra", "-p", "no:cacheprovider", "-n", "2", "-m", "smoke",
         "tests/integration", "--ignore", "tests/integration/test_server_contract_fuzz.py"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    more = subprocess.run(
        [py, "-m", "pytest", "-q", "-ra", "-p", "no:cacheprovider", "-n", "2", *TESTS],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    cell["smoke"] = _summary(tests.stdout)
    cell["more"] = _summary(more.stdout)
    cell["result"] = "passed" if tests.returncode == more.returncode == 0 else "failed"
    cell["minutes"] = round((time.monotonic() - started) / 60, 1)
    if cell["result"] != "passed":
        cell["detail"] = (tests.stdout[-3000:] if tests.returncode else "") + more.stdout[-3000:]
    return cell


def _summary(output: str) -> str:
    lines = [line for line in output.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    return lines[-1].strip("= ") if lines else "no summary"


def main(argv: list[str]) -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    wheels = ROOT / "dist"
    if argv[:1] == ["--wheels"]:
        wheels, argv = Path(argv[1]).resolve(), argv[2:]
    if argv == ["--oldest"]:
        chosen = [(PYTHONS[0], spark_versions(PYTHONS[0])[0])]
    else:
        chosen = [(a.split(":", 1)[0], a.split(":", 1)[1]) for a in argv] if argv else cells()
    results = []
    for python, spark in chosen:
        print(f"== Python {python}, PySpark {spark}", flush=True)
        cell = run_cell(python, spark, wheels)
        print(json.dumps(cell, indent=1)[:4000], flush=True)
        results.append(cell)
    table = ["| Python | PySpark | result | smoke | more | minutes |", "|---|---|---|---|---|---|"]
    for c in results:
        row = [c["python"], c["pyspark"], c["result"], c.get("smoke"), c.get("more")]
        table.append("| " + " | ".join(map(str, [*row, c.get("minutes")])) + " |")
    text = "\n".join(table)
    (OUT / "results.md").write_text(text + "\n")
    print(text)
    return 0 if all(c["result"] == "passed" for c in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
