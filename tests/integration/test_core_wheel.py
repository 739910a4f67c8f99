"""The compiled core's wheel installs into a fresh virtualenv with no Rust toolchain on PATH and
reads records from a real Kafka topic there.

The wheel is the one ``make wheel`` builds (``maturin build --release``; the cargo build is cached
by ``make setup``, so this only packages it again).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import pytest

from pyspark_dynamic_kafka.source.executor.native import core

pytestmark = pytest.mark.skipif(core() is None, reason="the compiled core is not installed")

ROOT = Path(__file__).resolve().parents[2]

#: Run inside the fresh virtualenv: read [2, 7) of partition 0 with the core alone.
SCRIPT = """
import json, sys
import pyspark_dynamic_kafka_core as core
reader = core.Reader(
    "east",
    [("bootstrap.servers", sys.argv[1]), ("group.id", "wheel-test"),
     ("enable.partition.eof", "true"), ("auto.offset.reset", "error")],
    [("orders", 0, 2, 7)],
    30000, True, True,
)
rows = [row for batch in reader for row in batch.to_pylist()]
print(json.dumps({
    "version": core.librdkafka_version(),
    "rows": [[r["offset"], r["key"].decode(), r["value"].decode(), r["cluster"],
              [[h["key"], h["value"].decode()] for h in (r["headers"] or [])]] for r in rows],
}))
"""


def _build_wheel(out: Path) -> Path:
    given = os.environ.get("DYNAMIC_KAFKA_CORE_WHEEL")
    if given:
        return Path(given).resolve()
    maturin = Path(sys.executable).parent / "maturin"
    command = [str(maturin), "build", "--quiet", "--release", "--locked", "-j", "2"]
    command += ["-m", str(ROOT / "native" / "Cargo.toml"), "-i", sys.executable, "-o", str(out)]
    # make setup's cargo cache (Makefile CARGO_TARGET_DIR): packaging again, not building again
    cache = Path.home() / ".cache" / "pyspark-dynamic-kafka" / "native-target"
    env = {**os.environ, "CARGO_TARGET_DIR": os.environ.get("CARGO_TARGET_DIR", str(cache))}
    subprocess.run(command, check=True, timeout=3600, env=env)
    (wheel,) = out.glob("pyspark_dynamic_kafka_core-*.whl")
    return wheel


def test_wheel_installs_without_rust_and_reads_records(kafka_clusters: Any, tmp_path: Path) -> None:
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=1)
    east.produce(
        "orders",
        [{"key": f"k{i}", "value": f"v{i}", "headers": [("h", f"x{i}")]} for i in range(10)],
        partition=0,
    )
    wheel = _build_wheel(tmp_path / "wheel")

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CARGO", "RUSTUP"))}
    env["PATH"] = os.pathsep.join(
        p
        for p in env.get("PATH", "").split(os.pathsep)
        if p and shutil.which("cargo", path=p) is None and shutil.which("rustc", path=p) is None
    )
    assert shutil.which("cargo", path=env["PATH"]) is None
    assert shutil.which("rustc", path=env["PATH"]) is None
    home = tmp_path / "venv"
    venv.create(home, with_pip=True)
    python = str(home / "bin" / "python")
    pyarrow = next(
        line
        for line in (ROOT / "requirements-dev.txt").read_text().splitlines()
        if line.startswith("pyarrow==")
    )
    install = [python, "-m", "pip", "install", "--quiet", "--no-deps", str(wheel), pyarrow]
    subprocess.run(install, check=True, env=env, timeout=900, cwd=tmp_path)

    done = subprocess.run(
        [python, "-c", SCRIPT, east.bootstrap_servers],
        check=False,
        env=env,
        timeout=300,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["version"].startswith("2.")
    assert result["rows"] == [[i, f"k{i}", f"v{i}", "east", [["h", f"x{i}"]]] for i in range(2, 7)]
