"""Support of the fault tests: a streaming job in a Spark session of its own (a subprocess that
runs ``fault_app.py``), the Python worker processes of its executors, a verbose logging setup,
and secrets searched for in what a job left behind.

A job that must retry tasks runs as a subprocess because a Python process holds one SparkContext:
the suite's session is ``local[2]``, whose tasks are never retried (local masters ignore
``spark.task.maxFailures``), and it is shared by every test module.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.integration.helpers import DEADLINE, READER_ENV_VAR, wait_until

from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.testing.procfs import cmdline, descendants, parent

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "tests" / "integration" / "fault_app.py"

_SITECUSTOMIZE = """\
import logging, os, sys
logging.basicConfig(
    level=logging.DEBUG,
    stream=sys.stderr,
    format="%(process)d %(name)s %(levelname)s %(message)s",
)
logging.getLogger("sitecustomize").info("debug logging in pid %d: %s", os.getpid(), sys.argv)
"""

_LOG4J2 = """\
rootLogger.level = info
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
logger.spark.name = org.apache.spark
logger.spark.level = info
"""


def verbose_environment(directory: Path) -> dict[str, str]:
    """The environment of a child Spark job that logs all it can: Python logging of every Python
    process at DEBUG (a ``sitecustomize`` on ``PYTHONPATH``, in ``directory``) and Spark at INFO
    (a log4j2 configuration any JVM picks up through ``JAVA_TOOL_OPTIONS``), all to stderr."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    (directory / "log4j2.properties").write_text(_LOG4J2)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(directory), str(ROOT), env.get("PYTHONPATH", "")])
    env["JAVA_TOOL_OPTIONS"] = f"-Dlog4j2.configurationFile={directory / 'log4j2.properties'}"
    return env


def leaks(secret: str, text: str, files: Iterator[Path] | list[Path] = ()) -> list[str]:
    """Lines of ``text`` and files whose bytes hold ``secret`` (the secret itself masked)."""
    found = [line.replace(secret, "<secret>")[:200] for line in text.splitlines() if secret in line]
    return found + [str(path) for path in files if secret.encode() in path.read_bytes()]


# -- the job ----------------------------------------------------------------------------------


@dataclass
class AppResult:
    """What a :class:`FaultApp` reported when it stopped.

    Attributes
    ----------
    values:
        The ``value`` of every row of its table, sorted (duplicates kept).
    error:
        The query's error, ``None`` when it ran on without one.
    failed_tasks:
        Task attempts of the query's jobs that failed (and were retried, if it still ran).
    progress:
        Each progress report, as JSON.
    logs:
        Its standard output and error.
    """

    values: list[str]
    error: str | None
    failed_tasks: int
    progress: list[str]
    logs: str


class FaultApp:
    """``fault_app.py`` running a ``dynamic_kafka`` stream into a memory table, in a subprocess.

    Parameters
    ----------
    directory:
        Where its configuration, checkpoint (``checkpoint/``) and output files go.
    options:
        The source options.
    max_failures:
        Attempts of a task before its job fails (``local[2,max_failures]``).
    env:
        Its environment (the test's by default).
    """

    def __init__(
        self,
        directory: Path,
        options: Mapping[str, str],
        max_failures: int = 1,
        env: Mapping[str, str] | None = None,
    ) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.checkpoint = directory / "checkpoint"
        config = directory / "app.json"
        config.write_text(
            json.dumps(
                {
                    "options": dict(options),
                    "checkpoint": str(self.checkpoint),
                    "max_failures": max_failures,
                }
            )
        )
        self.stdout, self.stderr = directory / "app.out", directory / "app.err"
        with open(self.stdout, "wb") as out, open(self.stderr, "wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, str(APP), str(config)],
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=err,
                env=dict(env) if env is not None else None,
            )

    def lines(self) -> list[str]:
        """The lines it wrote to standard output so far."""
        return self.stdout.read_text(errors="replace").splitlines()

    def count(self) -> int:
        """The rows its micro-batches read, as last reported; fails if it exited."""
        if self.process.poll() is not None:
            raise AssertionError(f"the app exited early:\n{self.logs()[-5000:]}")
        counts = [int(line.split()[1]) for line in self.lines() if line.startswith("COUNT ")]
        return counts[-1] if counts else 0

    def wait_rows(self, count: int) -> None:
        """Wait until its micro-batches (committed: reported) read ``count`` rows or more."""
        wait_until(lambda: self.count() >= count, what=f"{count} rows read by the app")

    def logs(self) -> str:
        """Its standard output and error so far."""
        return self.stdout.read_text(errors="replace") + self.stderr.read_text(errors="replace")

    def finish(self) -> AppResult:
        """Ask it to stop; what it reported."""
        stdin = self.process.stdin
        if stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                stdin.write(b"stop\n")
                stdin.flush()
        code = self.process.wait(DEADLINE)
        logs = self.logs()
        assert code == 0, f"the app failed with exit code {code}:\n{logs[-5000:]}"
        lines = self.lines()

        def after(prefix: str) -> list[str]:
            return [line[len(prefix) :] for line in lines if line.startswith(prefix)]

        [failed] = after("FAILED_TASKS ")
        [values] = after("VALUES ")
        text = self.stdout.read_text(errors="replace")
        error = text[text.index("\nERROR ", text.index("\nVALUES ")) + 1 :].strip()  # spans lines
        return AppResult(
            values=json.loads(values),
            error=None if error == "ERROR none" else error[len("ERROR <<") : -len(">>")],
            failed_tasks=int(failed),
            progress=after("PROGRESS "),
            logs=logs,
        )

    def kill(self) -> None:
        """Kill it if it still runs (after a failed test)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(DEADLINE)


@contextlib.contextmanager
def fault_app(
    directory: Path,
    options: Mapping[str, str],
    max_failures: int = 1,
    env: Mapping[str, str] | None = None,
) -> Iterator[FaultApp]:
    """A :class:`FaultApp` that is killed on exit if it still runs."""
    app = FaultApp(directory, options, max_failures, env)
    try:
        yield app
    finally:
        app.kill()


# -- processes, through /proc (Linux) ----------------------------------------------------------


_TASK_DAEMON = b"-m\0pyspark.daemon\0pyspark.worker"
"""The command line of the daemon that forks the Python workers of tasks (and so theirs too); the
data source's planning processes run other modules (``pyspark.sql.worker.*``, the streaming
source runner)."""


def python_workers(root: int) -> list[int]:
    """The Python workers below ``root`` that run tasks: the processes the task daemon forked."""
    return [
        pid
        for pid in descendants(root)
        if _TASK_DAEMON in cmdline(pid) and _TASK_DAEMON in cmdline(parent(pid) or 0)
    ]


def connected_to(pid: int, port: int) -> bool:
    """Whether process ``pid`` has an established TCP connection to ``port`` (any address)."""
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[len("socket:[") : -1])
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for row in Path(table).read_text().splitlines()[1:]:
                fields = row.split()
                remote_port = int(fields[2].rsplit(":", 1)[1], 16)
                if remote_port == port and fields[3] == "01" and fields[9] in inodes:
                    return True
    return False


# -- which reader read: the compiled core's extension module in a worker's memory map ---------

_CORE_LIBRARY = "/pyspark_dynamic_kafka_core/_core"


def native_expected() -> bool:
    """Whether the suite's queries read with the compiled core: it is installed, and
    ``DYNAMIC_KAFKA_TEST_READER`` does not pin the Python reader (reader=auto picks the core)."""
    return core() is not None and os.environ.get(READER_ENV_VAR, "").strip() in (
        "",
        "auto",
        "native",
    )


def loaded_core(pids: list[int]) -> list[int]:
    """The processes among ``pids`` that have the compiled core loaded: a Python worker imports
    it only to read a task's ranges natively (the Python reader never does), so a task worker
    with it mapped read with it."""
    found = []
    for pid in pids:
        with contextlib.suppress(OSError):
            if _CORE_LIBRARY in Path(f"/proc/{pid}/maps").read_text(errors="replace"):
                found.append(pid)
    return found


def reading_with_core(root: int, cluster: Any) -> bool:
    """Whether a task worker below ``root`` is connected to a broker of ``cluster`` (reading
    it now) with the compiled core loaded."""
    ports = [int(address.rsplit(":", 1)[1]) for address in cluster.bootstrap_servers.split(",")]
    workers = python_workers(root)
    return bool(loaded_core([p for p in workers if any(connected_to(p, n) for n in ports)]))
