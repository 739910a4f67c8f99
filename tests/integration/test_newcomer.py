"""What a newcomer does first works the first time.

``local_spark_session()`` gives Spark's Python workers the Python that runs the script.

A script run as ``.venv/bin/python job.py`` (the virtual environment not activated, so the
``python3`` on ``PATH`` lacks the package) and no ``PYSPARK_PYTHON`` in the environment reads a
stream: Spark's data source lookup and its Python workers run the script's interpreter, not the
``python3`` on ``PATH`` (which fails with ``DATA_SOURCE_NOT_FOUND``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest
from tests.integration.helpers import DEADLINE, numbered, on_tansu, produce, write_metadata
from tests.integration.queries import memory_query
from tests.query_start import ATTEMPTS, SLOW_WORKER, failed_initializing_in

from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.monitoring.progress import offset_document
from pyspark_dynamic_kafka.testing import ENV_VAR

ROOT = Path(__file__).resolve().parents[2]

# A job as a newcomer writes it: nothing but local_spark_session() about the workers' Python.
_JOB = textwrap.dedent(
    """
    import json, sys
    from pyspark_dynamic_kafka.testing import local_spark_session

    spark = local_spark_session("worker-python-job")
    query = (
        spark.readStream.format("dynamic_kafka")
        .option("metadataService", "file")
        .option("metadataService.path", sys.argv[1])
        .option("streamIds", "orders")
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("CAST(value AS STRING) AS value")
        .writeStream.format("memory")
        .queryName("job")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    values = sorted(r.value for r in spark.table("job").collect())
    print("VALUES " + json.dumps(values))
    spark.stop()
    """
)


def _python3_without_the_package(directory: Path) -> Path:
    """A directory whose ``python3`` is a Python without pyspark_dynamic_kafka (and pyspark)."""
    system = shutil.which("python3", path="/usr/bin:/bin") or shutil.which("python3.11")
    assert system is not None, "no system python3 to stand for the PATH's python3"
    probe = subprocess.run(
        [system, "-c", "import pyspark_dynamic_kafka"], capture_output=True, timeout=120
    )
    assert probe.returncode != 0, f"{system} has the package: not a newcomer's python3"
    directory.mkdir()
    (directory / "python3").symlink_to(system)
    (directory / "python").symlink_to(system)
    return directory


def _newcomer_environment(tmp_path: Path) -> dict[str, str]:
    """The environment of a shell where the venv is not activated and nothing Spark is set."""
    venv_bin = str(Path(sys.executable).parent)
    path = [str(_python3_without_the_package(tmp_path / "path-bin"))] + [
        p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin
    ]
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")
    }
    env["PATH"] = os.pathsep.join(path)
    return env


def run_as_newcomer(
    tmp_path: Path,
    argv: list[str],
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``.venv/bin/python ARGV...`` as from a shell without the venv activated (``env``:
    variables exported there too).

    Run again, at most twice, only when a streaming query of the run failed while initializing
    because Spark's fixed 10 s for a new Python worker to connect back ran out on a loaded
    machine (tests/query_start.py, which the examples, being a user's scripts, do not install).
    """

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *argv],
            env={**_newcomer_environment(tmp_path), **(env or {})},
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=DEADLINE * 3,
        )

    done = run()
    for _ in range(ATTEMPTS - 1):
        if done.returncode == 0 or not failed_initializing_in(done.stdout + done.stderr):
            break
        print(f"{argv[0]}: a query failed initializing ({SLOW_WORKER}); running it again")
        done = run()
    return done


@pytest.mark.smoke
def test_a_script_run_with_the_venv_python_reads_a_stream(
    kafka_clusters: Any, tmp_path: Path
) -> None:
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=2)
    values = numbered("v", 20)
    produce(east, "orders", values)
    metadata = tmp_path / "streams.yaml"
    write_metadata(metadata, {"east": east}, {"orders": [("east", ["orders"])]})
    job = tmp_path / "job.py"
    job.write_text(_JOB)

    done = run_as_newcomer(tmp_path, [str(job), str(metadata)])

    assert done.returncode == 0, done.stderr[-4000:]
    assert "DATA_SOURCE_NOT_FOUND" not in done.stderr
    line = [x for x in done.stdout.splitlines() if x.startswith("VALUES ")]
    assert line, done.stdout[-2000:]
    assert json.loads(line[-1][len("VALUES ") :]) == sorted(values)


@pytest.mark.smoke
@pytest.mark.skipif(
    bool(os.environ.get(ENV_VAR)),
    reason="the first job starts clusters of its own (start_clusters), not the existing ones",
)
def test_the_readme_first_job_runs_as_written(tmp_path: Path) -> None:
    """examples/first_job.py, which the README shows verbatim (tests/unit/test_docs.py), run as
    a newcomer runs it: 100 orders on east, the stream moved to west while the query runs, 50
    there; each exactly once."""
    broker = "kafka" if not on_tansu() else "tansu"
    done = run_as_newcomer(tmp_path, [str(ROOT / "examples" / "first_job.py"), broker], cwd=ROOT)

    assert done.returncode == 0, done.stderr[-4000:]
    assert "first job: 150 orders {'east': 100, 'west': 50}, 150 distinct ids" in done.stdout
    assert "Moved stream 'orders' from 'east' to 'west'" in done.stdout
    # The driver's log (its standard error; no logging configured) has one line per
    # reconciliation that changed what the query reads: the start on east, the move to west.
    lines = [json.loads(x[x.index("{") :]) for x in done.stderr.splitlines() if _RECONCILED in x]
    assert [(c["clustersAdded"], c["clustersRemoved"]) for c in lines] == [
        (["east"], []),
        (["west"], ["east"]),
    ], done.stderr[-4000:]
    assert lines[1]["topicsAdded"] == ["west/orders"] and lines[1]["partitionsEntered"] == 2
    assert "127.0.0.1" not in "".join(x for x in done.stderr.splitlines() if _RECONCILED in x)


@pytest.mark.skipif(
    bool(os.environ.get(ENV_VAR)),
    reason="the Avro migration starts clusters of its own (start_clusters), not the existing ones",
)
def test_the_avro_migration_example_decodes_each_record_with_its_clusters_registry(
    tmp_path: Path,
) -> None:
    """examples/avro_migration.py run as a newcomer runs it: 100 Avro orders on east (schema id
    1 of east's registry), the stream moved to west while the query runs, 30 there with the same
    schema (id 1000 of west's) and 20 with a v2 (id 1001); each decoded once into the reader
    schema's columns."""
    broker = "kafka" if not on_tansu() else "tansu"
    example = str(ROOT / "examples" / "avro_migration.py")
    done = run_as_newcomer(tmp_path, [example, broker], cwd=ROOT)

    assert done.returncode == 0, done.stderr[-4000:]
    assert (
        "avro migration: 150 orders, 150 distinct ids, (cluster, schema id) "
        "[('east', 1), ('west', 1000), ('west', 1001)], every amount decoded: True"
    ) in done.stdout, done.stdout[-2000:]
    assert "Moved stream 'orders' from 'east' to 'west'" in done.stdout


@pytest.mark.skipif(
    bool(os.environ.get(ENV_VAR)) or on_tansu(),
    reason="the Avro test starts an Apache Kafka cluster of its own (start_clusters)",
)
def test_the_readme_avro_test_passes_as_a_projects_own_test(tmp_path: Path) -> None:
    """examples/test_avro_job.py, which docs/avro.md shows verbatim (tests/unit/test_docs.py), run
    by pytest in a project of its own: a copy in an empty directory, none of this suite's
    configuration or fixtures."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "examples" / "test_avro_job.py", project)
    argv = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_avro_job.py"]
    done = run_as_newcomer(tmp_path, argv, cwd=project)

    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "1 passed" in done.stdout


_RECONCILED = '"event": "reconciliation"'


@pytest.mark.skipif(
    bool(os.environ.get(ENV_VAR)) or on_tansu(),
    reason="the secure job starts Apache Kafka clusters of its own with TLS and SASL listeners",
)
def test_the_readme_secure_job_runs_as_written(tmp_path: Path) -> None:
    """examples/secure_job.py, which docs/coming-from-kafka.md shows verbatim
    (tests/unit/test_docs.py), run as a newcomer runs it, with the package's INFO log on: two
    SASL_SSL clusters (SCRAM, PLAIN), passwords by reference, the stream moved while the query
    runs; each order exactly once, the driver's log naming each cluster's reader and path once,
    and the password nowhere."""
    password = f"SENTINEL-east-{uuid.uuid4().hex}"
    env = {"EAST_KAFKA_PASSWORD": password, "DYNAMIC_KAFKA_LOG_LEVEL": "INFO"}
    done = run_as_newcomer(tmp_path, [str(ROOT / "examples" / "secure_job.py")], cwd=ROOT, env=env)

    assert done.returncode == 0, done.stderr[-4000:]
    assert "secure job: 150 orders {'east': 100, 'west': 50}, 150 distinct ids" in done.stdout
    assert "streams.json: valid (2 clusters, 1 streams)" in done.stdout
    assert "Moved stream 'orders' from 'east' to 'west'" in done.stdout
    # reader=auto (the job's default): the compiled core's direct path where it is installed
    path = (
        "the compiled core's direct fetch path (its own Fetch requests)"
        if core() is not None
        else "the Python reader: the compiled core (pyspark-dynamic-kafka-core) is not installed"
    )
    paths = [x[x.index("reader=") :] for x in done.stderr.splitlines() if " reader=" in x]
    assert paths == [f"reader=auto: cluster '{c}' is read with {path}" for c in ("east", "west")]
    assert password not in done.stdout + done.stderr


def test_a_move_is_visible_in_the_progress_of_the_micro_batch_it_took_effect_in(
    spark: Any, estate: Any
) -> None:
    """The reconciliation of a move shows in sources[].latestOffset (dynamicKafka.changes) of
    the progress of the micro-batch that first reads west: its startOffset lacks west, its
    endOffset has it."""
    setup = estate("east", "west", listed=["east"])
    produce(setup["east"], "orders", numbered("e", 5))
    with memory_query(spark, setup.options()) as query:
        query.expect(numbered("e", 5))
        produce(setup["west"], "orders", numbered("w", 3))
        setup.route("west")
        query.expect(numbered("e", 5) + numbered("w", 3))
        progress = list(query.query.recentProgress)

    def changes(p: dict[str, Any]) -> list[dict[str, Any]]:
        latest = p["sources"][0]["latestOffset"]
        latest = offset_document(latest)
        return list((latest or {}).get("dynamicKafka", {}).get("changes", []))

    def clusters(offset: Any) -> set[str]:
        offset = offset_document(offset)
        return set((offset or {}).get("clusters", {}))

    moved = [p for p in progress if any(c["clustersAdded"] == ["west"] for c in changes(p))]
    assert moved, [changes(p) for p in progress]
    first = moved[0]
    [change] = [c for c in changes(first) if c["clustersAdded"] == ["west"]]
    assert change["clustersRemoved"] == ["east"] and change["topicsAdded"] == ["west/orders"]
    assert "west" not in clusters(first["sources"][0]["startOffset"])
    assert clusters(first["sources"][0]["endOffset"]) == {"west"}
    assert isinstance(first["batchId"], int)
