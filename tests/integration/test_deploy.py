"""The source where users run it: a standalone Spark cluster, Spark Connect, spark-submit.

A standalone cluster (a master and two workers, each a JVM of its own, started from the pyspark
wheel) runs the executors. Their Python is an environment of its own that has the package
(worker_python.py); nothing ships it to them (no ``addPyFile``, no ``--py-files``, no
``PYTHONPATH``). Two kinds of driver use the cluster:

- a Spark Connect server, the driver of the tests' remote PySpark session (``sc://...``), whose
  own Python is the workers' too: the migration scenario, a restart from a checkpoint, a batch
  read, each through the Connect client;
- an application started by ``spark-submit`` (query_app.py, the path docs/deploy.md shows),
  draining a stream into Parquet.

Each test asserts exact records, and that the tasks ran in executors under the workers' JVMs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow.dataset
import pytest
from tests.integration.helpers import DEADLINE, EstateFactory, numbered, produce
from tests.integration.queries import batch_read, keyed_rows
from tests.integration.scenarios import migrate_east_to_west, stop_mid_stream_and_restart
from tests.integration.worker_python import package_location

from pyspark_dynamic_kafka.testing import SparkConnectServer, SparkStandalone, spark_home
from pyspark_dynamic_kafka.testing.spark_process import spark_env

pytestmark = pytest.mark.deploy

QUERY_APP = Path(__file__).resolve().parent / "query_app.py"


def _python_workers(spark: Any) -> list[tuple[int, str]]:
    """(pid, directory the package was imported from) of the Python workers that ran the four
    tasks of a UDF (defined here, so it is pickled by value: nothing of the tests is imported
    on the executors)."""
    from pyspark.sql.functions import udf

    def where(_: int) -> str:
        import os

        import pyspark_dynamic_kafka

        return f"{os.getpid()} {os.path.dirname(pyspark_dynamic_kafka.__file__)}"

    rows = spark.range(0, 4, 1, 4).select(udf(where, useArrow=False)("id").alias("w")).collect()
    return [(int(pid), location) for pid, location in (r.w.split(" ", 1) for r in rows)]


def _assert_executors_ran_it(
    spark: Any, server: SparkConnectServer, cluster: SparkStandalone, worker_python: Path
) -> None:
    """Tasks ran in executors, none in the driver; every worker ran an executor of the server's
    application; Python workers live under a worker's JVM and import the package from the
    workers' environment."""
    tasks = {e["id"]: e["totalTasks"] for e in server.executors()}
    assert tasks.pop("driver") == 0, tasks
    assert len(tasks) >= 2 and sum(tasks.values()) > 0, tasks
    app = server.application_id()
    assert all(worker.executors_of(app) for worker in cluster.workers)
    installed = package_location(worker_python)
    assert installed.startswith(str(worker_python.parent.parent)), installed
    for pid, location in _python_workers(spark):
        assert location == installed
        assert pid not in (os.getpid(), server.process.pid)
        assert cluster.worker_running(pid) is not None, f"Python worker {pid} not under a worker"


def test_migration_on_a_standalone_cluster_through_spark_connect(
    connect_spark: Any,
    connect_server: SparkConnectServer,
    spark_standalone: SparkStandalone,
    worker_python: Path,
    estate: EstateFactory,
) -> None:
    migrate_east_to_west(connect_spark, estate)
    _assert_executors_ran_it(connect_spark, connect_server, spark_standalone, worker_python)


def test_restart_from_checkpoint_on_a_standalone_cluster_through_spark_connect(
    connect_spark: Any, estate: EstateFactory, tmp_path: Path
) -> None:
    stop_mid_stream_and_restart(connect_spark, estate, tmp_path)


def test_batch_read_through_spark_connect_registered_or_not(
    connect_spark: Any, estate: EstateFactory
) -> None:
    setup = estate("east", partitions=2)
    values = produce(setup["east"], "orders", numbered("east-", 9), 2)
    expected = [("east", "orders", i % 2, i // 2, v) for i, v in enumerate(values)]
    # Auto-registered server-side: the server's Python has the package.
    assert keyed_rows(batch_read(connect_spark, setup.options())) == sorted(expected)
    # register() works on Connect too (the class is pickled by reference: the server needs the
    # package all the same).
    from pyspark_dynamic_kafka import DefaultSource

    connect_spark.dataSource.register(DefaultSource)
    assert keyed_rows(batch_read(connect_spark, setup.options())) == sorted(expected)


def _spark_submit(cluster: SparkStandalone, worker_python: Path, args: Sequence[str]) -> str:
    """Run query_app.py through ``spark-submit`` on ``cluster`` (driver: this test's Python;
    executors: the workers' own); its application id."""
    conf = {
        "spark.pyspark.python": str(worker_python),
        "spark.pyspark.driver.python": sys.executable,
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.cores.max": "2",
        "spark.executor.cores": "1",
        "spark.executor.memory": "768m",
        "spark.ui.enabled": "false",
    }
    command = [str(spark_home() / "bin" / "spark-submit"), "--master", cluster.master_url]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    done = subprocess.run(
        [*command, str(QUERY_APP), *args],
        env=spark_env(),
        capture_output=True,
        text=True,
        timeout=2 * DEADLINE,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return next(line.split()[1] for line in done.stdout.splitlines() if line.startswith("APP "))


def _parquet_values(output: Path) -> list[str]:
    """The ``value`` column of the files a Parquet sink wrote (its ``_spark_metadata`` skipped)."""
    table = pyarrow.dataset.dataset(str(output), format="parquet").to_table(columns=["value"])
    return [str(v) for v in table.column("value").to_pylist()]


def test_spark_submit_on_a_standalone_cluster(
    spark_standalone: SparkStandalone, worker_python: Path, estate: EstateFactory, tmp_path: Path
) -> None:
    setup = estate("east", partitions=3)
    expected = produce(setup["east"], "orders", numbered("submitted-", 30), 3)
    args = [str(setup.meta), str(tmp_path / "ckpt"), str(tmp_path / "out"), "orders", "drain"]
    app = _spark_submit(spark_standalone, worker_python, args)
    assert sorted(_parquet_values(tmp_path / "out")) == sorted(expected)
    # The application's executors ran in both workers' JVMs.
    assert all(worker.executors_of(app) for worker in spark_standalone.workers), app
