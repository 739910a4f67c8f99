"""A Spark Connect server on this machine, started from the pyspark wheel (which ships
``spark-connect``), bound to loopback, for remote PySpark clients (``sc://127.0.0.1:PORT``)."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark_dynamic_kafka.testing.errors import free_ports
from pyspark_dynamic_kafka.testing.spark_process import (
    SparkProcess,
    get_json,
    spark_env,
    spark_home,
    wait_ready,
)
from pyspark_dynamic_kafka.testing.tcp import accepts_connections

__all__ = ["SparkConnectServer", "start_spark_connect"]

CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
"""What ``sbin/start-connect-server.sh`` runs through ``spark-submit``."""


@dataclass(frozen=True)
class SparkConnectServer:
    """A running Spark Connect server (see :func:`start_spark_connect`): the driver of its
    clients' queries."""

    process: SparkProcess
    url: str
    """``sc://127.0.0.1:PORT``: what ``SparkSession.builder.remote`` takes."""
    ui_url: str
    """The driver's web UI; ``ui_url + "/api/v1/applications"`` is Spark's status REST API."""

    def application_id(self) -> str:
        """The id of the server's Spark application (one per server)."""
        apps = get_json(f"{self.ui_url}/api/v1/applications")
        return str(apps[0]["id"])

    def executors(self) -> list[dict[str, Any]]:
        """The application's executors as the status REST API reports them (``id``:
        ``driver`` or a number, ``hostPort``, ``totalTasks``, ...)."""
        app = self.application_id()
        executors: list[dict[str, Any]] = get_json(
            f"{self.ui_url}/api/v1/applications/{app}/allexecutors"
        )
        return executors


@contextlib.contextmanager
def start_spark_connect(
    master: str = "local[2]",
    *,
    python: str | None = None,
    conf: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    log_dir: Path | None = None,
    timeout: float = 300.0,
) -> Iterator[SparkConnectServer]:
    """Start a Spark Connect server (``spark-submit --class SparkConnectServer``, as
    ``sbin/start-connect-server.sh`` does, but in the foreground) on free loopback ports.

    The server is a Spark driver: data sources are looked up and planned by *its* Python
    (``python``), and its executors run the reads, so the package must be installed there,
    never on the client. The context waits until the server accepts connections; on exit it
    gets SIGTERM, then SIGKILL after a minute.

    Parameters
    ----------
    master:
        The server's master: ``local[N]`` or a standalone cluster's ``spark://...``.
    python:
        The Python of the server's and its executors' Python workers (``spark.pyspark.python``,
        ``spark.pyspark.driver.python`` and the same environment variables); this process's
        ``PYSPARK_PYTHON`` when ``None``.
    conf:
        More Spark settings of the server.
    env:
        More environment variables of the server.
    log_dir:
        Where its log goes (a temporary directory, removed on exit, when ``None``).
    timeout:
        Seconds to wait for the server to accept connections.

    Yields
    ------
    SparkConnectServer
        The running server.

    Raises
    ------
    SparkStartError
        If the server exits during start-up or does not listen in time (with its log's tail).

    Examples
    --------
    >>> with start_spark_connect() as server:  # doctest: +SKIP
    ...     spark = SparkSession.builder.remote(server.url).create()
    """
    with contextlib.ExitStack() as stack:
        if log_dir is None:
            log_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="connect-")))
        port, ui_port = free_ports(2)
        pythons = {"PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python} if python else {}
        settings = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(port),
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.port": str(ui_port),
            "spark.ui.showConsoleProgress": "false",
            # spark.pyspark.python and spark.pyspark.driver.python, as the variables say
            **{f"spark.{k.lower().replace('_', '.')}": v for k, v in pythons.items()},
            **(conf or {}),
        }
        command = [str(spark_home() / "bin" / "spark-submit"), "--class", CONNECT_SERVER_CLASS]
        command += ["--name", "Spark Connect server", "--master", master]
        for key, value in settings.items():
            command += ["--conf", f"{key}={value}"]
        # As sbin/start-connect-server.sh: the server itself runs in classic mode.
        extra_env = {"SPARK_CONNECT_MODE": "0", **pythons, **(env or {})}
        process = SparkProcess(
            "connect server", command, log_dir / "connect.log", spark_env(extra_env)
        )
        stack.callback(process.stop)
        process.start()
        wait_ready(
            [process],
            lambda: accepts_connections(f"127.0.0.1:{port}"),
            f"Spark Connect server on port {port}",
            timeout,
        )
        yield SparkConnectServer(process, f"sc://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}")
