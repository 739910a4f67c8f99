"""Flink's Dynamic Kafka Source as a peer: one long-lived JVM running ``bench.DynamicKafkaBench``.

The JVM stays up for the whole benchmark (its JIT warms like Spark's); each :meth:`FlinkPeer.run`
sends one request line and runs one bounded job on a fresh local mini-cluster (parallelism 2,
discarding sink). The program reports its own window: first sink writer opened (tasks deployed)
to last expected record received. :meth:`FlinkPeer.latency` runs an unbounded job from the latest
offsets for a while instead and reports the end-to-end latency its sink saw.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import IO

from benchmarks.peers.maven import flink_classpath

_OPENS = [
    f"--add-opens=java.base/{pkg}=ALL-UNNAMED"
    for pkg in (
        "java.lang",
        "java.lang.reflect",
        "java.io",
        "java.net",
        "java.nio",
        "java.text",
        "java.time",
        "java.util",
        "java.util.concurrent",
        "java.util.concurrent.atomic",
        "sun.nio.ch",
    )
]


class FlinkPeer:
    """The Flink peer process; a context manager.

    Parameters
    ----------
    java:
        The ``java`` command.
    log:
        Where the JVM's stderr (Flink's log, WARN and above) goes.
    """

    def __init__(self, java: str, log: Path) -> None:
        self.java = java
        self.log = log
        self.process: subprocess.Popen[str] | None = None
        self._log: IO[str] | None = None

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError("the Flink peer is not running")
        return self.process.pid

    def __enter__(self) -> FlinkPeer:
        classpath = flink_classpath()
        self._log = self.log.open("w")
        self.process = subprocess.Popen(
            [self.java, "-Xmx1g", *_OPENS, "-cp", classpath, "bench.DynamicKafkaBench"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )
        if self._line() != "READY":
            raise SystemExit(f"the Flink peer did not start; see {self.log}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            if self.process.stdin is not None:
                self.process.stdin.close()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._log is not None:
            self._log.close()

    def _line(self) -> str:
        if self.process is None or self.process.stdout is None:
            raise RuntimeError("the Flink peer is not running")
        while line := self.process.stdout.readline():
            if line.startswith(("READY", "RESULT")):
                return line.strip()
        raise SystemExit(f"the Flink peer exited ({self.process.poll()}); see {self.log}")

    def run(
        self, expected: int, topic: str, bootstraps: dict[str, str]
    ) -> tuple[int, float, float]:
        """Read ``topic`` on every cluster of ``bootstraps`` from earliest to latest once.

        Returns
        -------
        tuple
            (records read, window start, window end), times in seconds since the epoch.
        """
        if self.process is None or self.process.stdin is None:
            raise RuntimeError("the Flink peer is not running")
        clusters = " ".join(f"{name}={servers}" for name, servers in bootstraps.items())
        self.process.stdin.write(f"{expected} {topic} {clusters}\n")
        self.process.stdin.flush()
        _, count, start_ms, end_ms = self._line().split()
        return int(count), int(start_ms) / 1000, int(end_ms) / 1000

    def latency(
        self, warmup: float, seconds: float, topic: str, bootstraps: dict[str, str]
    ) -> tuple[int, float, float]:
        """Read ``topic`` from the latest offsets for ``warmup + seconds``; the latency (now minus
        the record's Kafka timestamp) of each record the sink saw in the last ``seconds``.

        Returns
        -------
        tuple
            (records seen in the window, p50 ms, p99 ms).
        """
        if self.process is None or self.process.stdin is None:
            raise RuntimeError("the Flink peer is not running")
        clusters = " ".join(f"{name}={servers}" for name, servers in bootstraps.items())
        request = f"LATENCY {int(warmup * 1000)} {int(seconds * 1000)} {topic} {clusters}\n"
        self.process.stdin.write(request)
        self.process.stdin.flush()
        _, count, p50, p99 = self._line().split()
        return int(count), float(p50), float(p99)
