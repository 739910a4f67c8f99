"""A standalone Spark cluster on this machine: a master and workers, each a JVM of its own,
started from the pyspark wheel and bound to loopback.

Applications submitted to :attr:`SparkStandalone.master_url` run their executors in the
workers' JVMs (and their Python workers under those), not in the driver's process: what a
deployment on a real cluster does, on one machine.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark_dynamic_kafka.testing.errors import free_ports
from pyspark_dynamic_kafka.testing.spark_process import (
    SparkProcess,
    ancestors,
    get_json,
    spark_env,
    spark_home,
    wait_ready,
)

__all__ = ["SparkStandalone", "StandaloneWorker", "start_spark_standalone"]

_MASTER = "org.apache.spark.deploy.master.Master"
_WORKER = "org.apache.spark.deploy.worker.Worker"


@dataclass(frozen=True)
class StandaloneWorker:
    """A worker of a :class:`SparkStandalone` cluster."""

    process: SparkProcess
    web_url: str
    """Its web UI; ``web_url + "/json/"`` lists its executors by application id."""

    def state(self) -> dict[str, Any]:
        """The worker's state as its web UI reports it (``executors``, ``finishedexecutors``,
        each with its ``appid``)."""
        state: dict[str, Any] = get_json(f"{self.web_url}/json/")
        return state

    def executors_of(self, app_id: str) -> list[dict[str, Any]]:
        """The executors of application ``app_id`` this worker runs or ran."""
        state = self.state()
        executors = state.get("executors", []) + state.get("finishedexecutors", [])
        return [e for e in executors if e.get("appid") == app_id]


@dataclass(frozen=True)
class SparkStandalone:
    """A running standalone cluster (see :func:`start_spark_standalone`)."""

    master: SparkProcess
    workers: tuple[StandaloneWorker, ...]
    master_url: str
    """``spark://127.0.0.1:PORT``: the ``--master`` of applications."""
    web_url: str
    """The master's web UI (``web_url + "/json/"``: workers, applications)."""

    def state(self) -> dict[str, Any]:
        """The master's state as its web UI reports it (``aliveworkers``, ``activeapps``, ...)."""
        state: dict[str, Any] = get_json(f"{self.web_url}/json/")
        return state

    def worker_running(self, pid: int) -> StandaloneWorker | None:
        """The worker whose JVM is an ancestor of process ``pid`` (an executor or a Python
        worker under one), ``None`` when none is (Linux ``/proc``)."""
        chain = set(ancestors(pid))
        return next((w for w in self.workers if w.process.pid in chain), None)


@contextlib.contextmanager
def start_spark_standalone(
    workers: int = 2,
    *,
    cores: int = 2,
    memory: str = "2g",
    env: Mapping[str, str] | None = None,
    log_dir: Path | None = None,
    timeout: float = 300.0,
    hosts: Sequence[str] = (),
) -> Iterator[SparkStandalone]:
    """Start a standalone Spark cluster: a master and ``workers`` workers on free loopback ports.

    Every process is a JVM started with ``bin/spark-class`` of :func:`.spark_home` (the
    pyspark wheel needs nothing else; ``java`` 17+ must be on the ``PATH``). The context waits
    until the master lists every worker as alive; on exit the workers (with their executors) and
    the master get SIGTERM, then SIGKILL after a minute.

    Parameters
    ----------
    workers:
        How many workers.
    cores:
        Cores each worker offers (they need not exist: the scheduler only counts them).
    memory:
        Memory each worker offers to executors, e.g. ``"2g"``.
    env:
        More environment variables of the workers, which their executors inherit (e.g.
        ``PYSPARK_PYTHON``; an application's ``spark.pyspark.python`` wins over it).
    log_dir:
        Where the processes' logs and the workers' directories go (a temporary directory,
        removed on exit, when ``None``).
    timeout:
        Seconds to wait for the cluster to be ready.
    hosts:
        The loopback address each worker binds to and names itself by (``127.0.0.1`` for all
        when empty). Workers on different addresses are different hosts to Spark's scheduler:
        a speculative copy of a task only runs on a host where the task has no attempt yet.

    Yields
    ------
    SparkStandalone
        The running cluster.

    Raises
    ------
    SparkStartError
        If a process exits during start-up or the workers do not register in time (with the
        logs' tails).

    Examples
    --------
    >>> with start_spark_standalone(workers=2) as cluster:  # doctest: +SKIP
    ...     spark = SparkSession.builder.master(cluster.master_url).getOrCreate()
    """
    with contextlib.ExitStack() as stack:
        if log_dir is None:
            log_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="spark-")))
        ports = free_ports(2 + 2 * workers)
        master_url, web_url = f"spark://127.0.0.1:{ports[0]}", f"http://127.0.0.1:{ports[1]}"
        spark_class = str(spark_home() / "bin" / "spark-class")
        command = [spark_class, _MASTER, "--host", "127.0.0.1", "--port", str(ports[0])]
        command += ["--webui-port", str(ports[1])]
        master = SparkProcess("master", command, log_dir / "master.log", spark_env())
        started: list[StandaloneWorker] = []
        addresses = list(hosts) or ["127.0.0.1"] * workers
        if len(addresses) != workers or not all(a.startswith("127.") for a in addresses):
            raise ValueError(f"hosts must be {workers} loopback addresses, got {list(hosts)}")
        for i, host in enumerate(addresses):
            port, web_port = ports[2 + 2 * i], ports[3 + 2 * i]
            work_dir = log_dir / f"worker{i}"
            work_dir.mkdir(parents=True, exist_ok=True)
            command = [spark_class, _WORKER, "--host", host, "--port", str(port)]
            command += ["--webui-port", str(web_port), "--cores", str(cores)]
            command += ["--memory", memory, "--work-dir", str(work_dir), master_url]
            worker_env = spark_env({**(env or {}), "SPARK_LOCAL_IP": host})
            process = SparkProcess(f"worker {i}", command, log_dir / f"worker{i}.log", worker_env)
            started.append(StandaloneWorker(process, f"http://{host}:{web_port}"))
        cluster = SparkStandalone(master, tuple(started), master_url, web_url)
        processes = [master] + [w.process for w in started]
        stack.callback(master.stop)
        master.start()
        for worker in reversed(started):
            stack.callback(worker.process.stop)
            worker.process.start()

        def ready() -> bool:
            state = cluster.state()
            return state.get("status") == "ALIVE" and state.get("aliveworkers") == workers

        wait_ready(processes, ready, f"standalone cluster at {master_url}", timeout)
        yield cluster
