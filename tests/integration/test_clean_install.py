"""What a user installs, in a new virtualenv: the package's wheel and the compiled core's wheel,
built for this machine (:mod:`tests.local_wheels`; ``make wheel-check`` checks make wheel's
manylinux2014 wheels), installed next to PySpark alone with the dependencies the
package declares (pip resolves them: no dev requirements), with no Rust toolchain on ``PATH``.

There, every module of the package imports, or fails only for want of an optional extra's
package (pyproject's ``optional-dependencies``: an import the code needs but does not declare
fails this test); ``dynamic-kafka serve`` without the ``server`` extra names it; and a user's job
reads a stream through the core, reads Avro values with both readers (a schema registry on
loopback), writes a batch through the sink and reads it back, and validates its metadata file
with the CLI.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastavro
import pytest
import yaml
from tests.local_wheels import build_local_wheels
from tests.min_requirements import requirement_name
from tests.unit.avro_schemas import ORDER_V1 as ORDER

from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.testing.schema_registry import LocalSchemaRegistry

pytestmark = pytest.mark.skipif(core() is None, reason="the compiled core is not installed")
# Python 3.11's; the oldest supported Python (make test-oldest) collects this module too.
tomllib = pytest.importorskip("tomllib", reason="reads pyproject.toml with Python 3.11's tomllib")

ROOT = Path(__file__).resolve().parents[2]

#: Run in the new virtualenv: import every module of the package; the modules that failed, with
#: the module that was missing.
IMPORT_ALL = """
import importlib, json, pkgutil
import pyspark_dynamic_kafka, pyspark_dynamic_kafka_core
missing = {}
for found in pkgutil.walk_packages(pyspark_dynamic_kafka.__path__, "pyspark_dynamic_kafka."):
    if found.name.endswith(".__main__"):  # runs the command line
        continue
    try:
        importlib.import_module(found.name)
    except ModuleNotFoundError as exc:
        missing[found.name] = exc.name
print(json.dumps(missing))
"""

#: Run in the new virtualenv: a user's job (see the module's docstring); what it read, as JSON.
JOB = """
import json, sys
from pyspark.sql import SparkSession
meta, schema = sys.argv[1], sys.argv[2]
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.driver.host", "127.0.0.1").getOrCreate())
base = {"metadataService": "file", "metadataService.path": meta, "startingOffsets": "earliest"}
def read(stream, **options):
    return spark.read.format("dynamic_kafka").options(**base, streamIds=stream, **options).load()
orders = read("orders", reader="native").collect()
got = {"core": sorted([r.offset, r.value.decode()] for r in orders)}
for reader in ("native", "python"):
    df = read("avro", reader=reader, valueFormat="avro", valueSchema=schema)
    got[reader] = sorted([r.offset, r.value.id, r.value.item] for r in df.collect())
rows = spark.createDataFrame([(f"k{i}", f"w{i}") for i in range(20)], "key string, value string")
(rows.selectExpr("key", "CAST(value AS BINARY) AS value").write.format("dynamic_kafka")
    .options(**{"metadataService": "file", "metadataService.path": meta}, streamId="out")
    .mode("append").save())
got["sink"] = sorted(r.value.decode() for r in read("out").collect())
print(json.dumps(got))
"""


def _dev_pin(name: str) -> str:
    """``name``'s exact pin in requirements-dev.txt."""
    return next(
        line
        for line in (ROOT / "requirements-dev.txt").read_text().splitlines()
        if line.lower().startswith(f"{name.lower()}==")
    )


def _user_environment(home: Path) -> dict[str, str]:
    """A shell's environment with the new virtualenv first on PATH and no Rust toolchain, no
    PYTHONPATH and nothing of the suite's own virtualenv."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CARGO", "RUSTUP", "PYSPARK", "PYTHON", "VIRTUAL_ENV"))
    }
    suite = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(
        [str(home / "bin")]
        + [
            p
            for p in env.get("PATH", "").split(os.pathsep)
            if p
            and p != suite
            and shutil.which("cargo", path=p) is None
            and shutil.which("rustc", path=p) is None
        ]
    )
    env["PYSPARK_PYTHON"] = str(home / "bin" / "python")
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """A new virtualenv with PySpark, then the two wheels and what they declare; its folder and
    the environment to run it in."""
    scratch = tmp_path_factory.mktemp("clean-install")
    wheels = build_local_wheels(scratch / "wheels")
    assert len(wheels) == 2, wheels
    home = scratch / "venv"
    venv.create(home, with_pip=True)
    env = _user_environment(home)
    assert shutil.which("cargo", path=env["PATH"]) is None
    assert shutil.which("rustc", path=env["PATH"]) is None
    pip = [str(home / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, _dev_pin("pyspark")], check=True, env=env, timeout=1200, cwd=scratch)
    subprocess.run([*pip, *map(str, wheels)], check=True, env=env, timeout=1200, cwd=scratch)
    yield home, env


def _run(installed: tuple[Path, dict[str, str]], *argv: str) -> subprocess.CompletedProcess[str]:
    home, env = installed
    return subprocess.run(
        [str(home / "bin" / argv[0]), *argv[1:]],
        check=False,
        env=env,
        timeout=600,
        cwd=home,
        capture_output=True,
        text=True,
    )


def _extras_modules() -> dict[str, str]:
    """Each optional extra's packages, by the name they import as: the extra's name."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    found = {}
    for extra, requirements in project["optional-dependencies"].items():
        for requirement in requirements:
            found[requirement_name(requirement).replace("-", "_")] = extra
    return found


def test_a_clean_install_imports_serves_and_runs_a_users_job(
    installed: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    """One test, so that one worker builds and installs (the steps below need the same venv)."""
    _every_module_imports_with_the_declared_dependencies(installed)
    _serve_without_the_server_extra_names_it(installed, tmp_path)
    _a_users_job_reads_through_the_core_decodes_avro_writes_and_validates(
        installed, kafka_clusters, tmp_path
    )


def _every_module_imports_with_the_declared_dependencies(installed: Any) -> None:
    done = _run(installed, "python", "-c", IMPORT_ALL)
    assert done.returncode == 0, done.stderr
    missing: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    extras = _extras_modules()
    undeclared = {m: name for m, name in missing.items() if name.split(".")[0] not in extras}
    assert undeclared == {}, "imported but not declared"
    # What the missing extras leave out is theirs alone: the server, the Prometheus exposition,
    # the embedded Tansu broker.
    assert {extras[name.split(".")[0]] for name in missing.values()} <= {
        "server",
        "monitoring",
        "testing",
    }
    assert any(m.startswith("pyspark_dynamic_kafka.server.") for m in missing)


def _serve_without_the_server_extra_names_it(installed: Any, tmp_path: Path) -> None:
    meta = tmp_path / "empty.yaml"
    meta.write_text(yaml.safe_dump({"clusters": {}, "streams": {}}))
    done = _run(installed, "dynamic-kafka", "serve", "--metadata", str(meta), "--port", "0")
    assert done.returncode == 1
    assert "pip install 'pyspark-dynamic-kafka[server]'" in done.stderr, done.stderr


def _a_users_job_reads_through_the_core_decodes_avro_writes_and_validates(
    installed: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    east = kafka_clusters("east")["east"]
    for topic in ("orders", "avro", "out"):
        east.create_topic(topic, partitions=1)
    east.produce("orders", [(f"k{i}", f"v{i}") for i in range(10)], partition=0)
    with LocalSchemaRegistry(first_id=3) as registry:
        schema_id = registry.register("avro-value", json.dumps(ORDER))
        east.produce("avro", [(None, _framed(schema_id, i)) for i in range(6)], partition=0)
        meta = tmp_path / "meta.yaml"
        cluster = {"bootstrap.servers": east.bootstrap_servers, "schema.registry.url": registry.url}
        streams = {
            "orders": [{"cluster": "east", "topics": ["orders"]}],
            "avro": [{"cluster": "east", "topics": ["avro"]}],
            "out": [{"cluster": "east", "topics": ["out"], "write": True}],
        }
        meta.write_text(yaml.safe_dump({"clusters": {"east": cluster}, "streams": streams}))
        job = tmp_path / "job.py"
        job.write_text(JOB)
        done = _run(installed, "python", str(job), str(meta), json.dumps(ORDER))
    assert done.returncode == 0, done.stderr[-4000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["core"] == [[i, f"v{i}"] for i in range(10)]
    assert got["native"] == got["python"] == [[i, i, f"item-{i}"] for i in range(6)]
    assert got["sink"] == sorted(f"w{i}" for i in range(20))
    validated = _run(installed, "dynamic-kafka", "validate", "--metadata", str(meta))
    assert validated.returncode == 0, validated.stderr


def _framed(schema_id: int, i: int) -> bytes:
    """Order ``i`` as Confluent's serializers frame it: magic byte 0, the id, the Avro body."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(ORDER), {"id": i, "item": f"item-{i}"})
    return b"\0" + schema_id.to_bytes(4, "big") + out.getvalue()
