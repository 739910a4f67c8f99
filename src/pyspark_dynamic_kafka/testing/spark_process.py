"""Spark's own processes (a standalone master or worker, a Spark Connect server) started from the
pyspark wheel: where Spark lives, their environment, starting, watching and stopping them."""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark_dynamic_kafka.testing.errors import SparkStartError, log_tail, seconds_left
from pyspark_dynamic_kafka.testing.kafka_process import await_exit, signal_group, spawn
from pyspark_dynamic_kafka.testing.procfs import ancestors

__all__ = ["SparkProcess", "ancestors", "get_json", "spark_env", "spark_home", "wait_ready"]

_LEAKY_ENV = ("PYTHONPATH", "SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE")
"""Variables of the test process that must not reach Spark's processes: a test's
``PYTHONPATH`` would hide whether the workers' own Python has the package, and the Connect
client's markers would turn a server into a client."""


def spark_home() -> Path:
    """``$SPARK_HOME`` when set, else the pyspark package's directory: the wheel ships Spark's
    ``bin/``, ``sbin/`` and ``jars/`` there (spark-connect included)."""
    home = os.environ.get("SPARK_HOME")
    if home:
        return Path(home)
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def spark_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a Spark process: this process's, bound to loopback, without
    ``PYTHONPATH`` and the Connect client's markers, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY_ENV}
    env["SPARK_HOME"] = str(spark_home())
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env.update(extra or {})
    return env


@dataclass
class SparkProcess:
    """One JVM of Spark's, its output appended to ``log_path``.

    Parameters
    ----------
    name:
        What it is, for messages (``master``, ``worker 1``, ``connect server``).
    command:
        Its command line.
    log_path:
        The file its standard output and error go to.
    env:
        Its environment.
    """

    name: str
    command: list[str]
    log_path: Path
    env: dict[str, str]
    process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        """The JVM's process id (the launch scripts ``exec`` java)."""
        if self.process is None:
            raise SparkStartError(f"{self.name} was not started")
        return self.process.pid

    def start(self) -> SparkProcess:
        """Launch the process in a session of its own (see :func:`.kafka_process.spawn`)."""
        self.process = spawn(self.command, self.log_path, self.env)
        return self

    def problem(self) -> str | None:
        """Why the process cannot become ready (it exited), with its log's tail, or ``None``."""
        code = None if self.process is None else self.process.poll()
        if self.process is not None and code is None:
            return None
        return f"{self.name} exited with code {code}; log {self.log_path}:\n{self.log_tail()}"

    def log_tail(self) -> str:
        """The end of the process's output."""
        return log_tail(self.log_path)

    def stop(self, timeout: float = 60.0) -> None:
        """SIGTERM to the process group (the JVM and what it started: executors, Python
        workers), SIGKILL after ``timeout`` s; idempotent."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        signal_group(process, signal.SIGTERM)
        await_exit(process, time.monotonic() + timeout)


def wait_ready(
    processes: list[SparkProcess], ready: Callable[[], bool], what: str, timeout: float
) -> None:
    """Poll ``ready`` (an error counts as "not yet") until it holds.

    Raises
    ------
    SparkStartError
        At once when a process exited; after ``timeout`` s otherwise, with every log's tail.
    """
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        for process in processes:
            problem = process.problem()
            if problem is not None:
                raise SparkStartError(f"{what} failed: {problem}")
        try:
            if ready():
                return
        except (OSError, ValueError) as exc:
            last_error = exc
        if seconds_left(deadline) <= 0.1:
            tails = "\n".join(f"log of {p.name} ({p.log_path}):\n{p.log_tail()}" for p in processes)
            detail = f" (last error: {last_error})" if last_error else ""
            raise SparkStartError(f"{what}: not ready after {timeout:g}s{detail}\n{tails}")
        time.sleep(0.25)


def _loopback(host: str | None) -> bool:
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def get_json(url: str, timeout: float = 10.0) -> Any:
    """GET ``url`` (a Spark web UI or REST endpoint on loopback) and decode its JSON body."""
    if not url.startswith("http://127.") or not _loopback(urllib.parse.urlsplit(url).hostname):
        raise ValueError(f"only loopback Spark endpoints are read, not {url!r}")
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return json.loads(answer.read())
