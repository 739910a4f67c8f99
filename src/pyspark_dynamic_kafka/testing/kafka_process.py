"""Broker processes of the test clusters: spawning, signalling, log files, free ports."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark_dynamic_kafka.testing.errors import ClusterStartError, log_tail, seconds_left
from pyspark_dynamic_kafka.testing.kafka_config import BrokerAddress

__all__ = ["BrokerProcess", "await_exit", "run_all", "signal_group", "spawn"]

_log = logging.getLogger(__name__)


@dataclass
class BrokerProcess:
    """One node of a test cluster: its ports and files, and its JVM while it runs.

    Parameters
    ----------
    node_id:
        The node's id.
    address:
        Its client and controller ports.
    config_path:
        Its ``server.properties``.
    log_path:
        The file its output goes to; every run appends to it.
    """

    node_id: int
    address: BrokerAddress
    config_path: Path
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    log_offset: int = 0
    """Where the current run's output starts in ``log_path``."""

    @property
    def running(self) -> bool:
        """Whether the JVM is alive."""
        return self.process is not None and self.process.poll() is None

    @property
    def exit_code(self) -> int | None:
        """The exit code of the last run, ``None`` while it runs or before the first."""
        return None if self.process is None else self.process.poll()

    def launch(self, command: list[str]) -> None:
        """Start ``command``, appending its output to ``log_path``."""
        self.log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        self.process = spawn(command, self.log_path)

    def logged(self, text: str) -> bool:
        """Whether the current run's output contains ``text``."""
        return text in log_tail(self.log_path, self.log_offset, None)

    def log_tail(self) -> str:
        """The end of the current run's output."""
        return log_tail(self.log_path, self.log_offset)

    def send(self, sig: signal.Signals) -> None:
        """Send ``sig`` to the JVM's process group, if it runs."""
        if self.running and self.process is not None:
            signal_group(self.process, sig)

    def await_exit(self, deadline: float, what: str) -> None:
        """Wait for the JVM to exit until ``deadline`` (monotonic), then kill it."""
        process = self.process
        self.process = None
        if process is not None:
            await_exit(process, deadline, f"{what}: broker {self.node_id} is still up, killing it")


def spawn(
    command: list[str], log_path: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``command`` in a session of its own, its output appended to ``log_path``, in
    ``env`` (this process's environment when ``None``).

    A signal to the process group reaches the JVM and nothing else. On Linux the process also
    gets SIGKILL when the starting thread dies (``setpriv --pdeathsig``), which covers a test run
    that is itself killed; that thread must then be the main thread, which lives as long as the
    interpreter, so the prefix is only added there.
    """
    prefix: list[str] = []
    setpriv = shutil.which("setpriv") if sys.platform == "linux" else None
    if setpriv is not None and threading.current_thread() is threading.main_thread():
        prefix = [setpriv, "--pdeathsig", "KILL", "--"]
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            [*prefix, *command],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            close_fds=True,
            start_new_session=True,
            env=env,
        )


def signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """Send ``sig`` to the process group of ``process`` (started by :func:`spawn`: the group is
    the process and what it started), unless the group is gone."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)


def await_exit(
    process: subprocess.Popen[bytes], deadline: float, overdue: str | None = None
) -> None:
    """Wait for ``process`` to exit until ``deadline`` (monotonic), then SIGKILL its process
    group and reap it.

    Signal first (:func:`signal_group`); to stop several processes at once, signal them all,
    then wait for each on one deadline.

    Parameters
    ----------
    process:
        A process started by :func:`spawn`.
    deadline:
        When to stop waiting, on :func:`time.monotonic`'s clock.
    overdue:
        A warning to log when the process is still up at ``deadline``.
    """
    try:
        process.wait(max(deadline - time.monotonic(), 0.0))
    except subprocess.TimeoutExpired:
        if overdue is not None:
            _log.warning("%s", overdue)
        signal_group(process, signal.SIGKILL)
        process.wait()


def run_all(commands: list[tuple[list[str], Path]], timeout: float, what: str) -> None:
    """Run ``(command, log_path)`` pairs side by side; all must succeed within ``timeout`` s.

    Raises
    ------
    ClusterStartError
        Naming ``what``, the exit code and the failed command's log tail; the other commands
        are killed.
    """
    running = [(spawn(command, log_path), log_path) for command, log_path in commands]
    deadline = time.monotonic() + timeout
    try:
        for process, log_path in running:
            try:
                code: int | None = process.wait(seconds_left(deadline))
            except subprocess.TimeoutExpired:
                code = None
            if code != 0:
                result = (
                    f"still running after {timeout:g}s" if code is None else f"exit code {code}"
                )
                raise ClusterStartError(
                    f"{what} failed ({result}).\nlog {log_path}:\n{log_tail(log_path)}"
                )
    finally:
        for process, _ in running:
            if process.poll() is None:
                process.kill()
                process.wait()


def format_storages(
    java: list[str], cluster_id: str, brokers: list[BrokerProcess], timeout: float, what: str
) -> None:
    """Format every broker's storage under ``cluster_id`` (``kafka.tools.StorageTool``), all
    at once; each logs beside its broker log (``.format.log``)."""
    command = [*java, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c"]
    formats = [
        ([*command, str(b.config_path)], b.log_path.with_suffix(".format.log")) for b in brokers
    ]
    run_all(formats, timeout, what)


def brokers_report(brokers: list[BrokerProcess]) -> str:
    """Each broker's address, configuration, log file and the end of its log."""
    return "".join(
        f"\nbroker {b.node_id} (127.0.0.1:{b.address.port}), config {b.config_path}, "
        f"log {b.log_path}:\n{b.log_tail()}"
        for b in brokers
    )


def exited(brokers: Sequence[BrokerProcess]) -> str | None:
    """Which of ``brokers`` exited, and with what code; ``None`` when all run."""
    down = [f"broker {b.node_id} exited with code {b.exit_code}" for b in brokers if not b.running]
    return "; ".join(down) or None


def not_started(brokers: Sequence[BrokerProcess], line: str) -> Callable[[], str | None]:
    """A check of which of ``brokers`` have not logged ``line`` yet (``None``: all have); a
    broker that logged it is not read again."""
    quiet = list(brokers)

    def check() -> str | None:
        quiet[:] = [b for b in quiet if not b.logged(line)]
        ids = [b.node_id for b in quiet]
        return f"broker(s) {ids} have not logged {line!r} yet" if quiet else None

    return check
