"""Resident memory, threads and open file descriptors of Spark's processes, read from ``/proc``.

:func:`spark_processes` finds the driver JVM (below this process) and every Python process below
it, each with its role:

* ``jvm``: the driver JVM (``SparkSubmit``);
* ``planner``: the Python process that hosts a streaming Python data source on the driver
  (``python_streaming_source_runner``: ``latestOffset``, ``partitions``, the discovery);
* ``worker-daemon``: Spark's ``pyspark.daemon`` for ``pyspark.worker``, which forks the
  executor's Python workers, and ``worker``: such a forked worker (runs the tasks' ``read``);
* ``helper-daemon`` and ``helper``: the same for the planner helpers Spark starts through daemons
  of their own (``pyspark.sql.worker.lookup_data_sources``, ``create_data_source``,
  ``plan_data_source_read``);
* ``python``: any other Python process the JVM started.

:class:`Sampler` samples them, and this process (role ``driver-python``), every few seconds in a
thread.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks.measure import cmdline, descendants, parent, spark_jvm

__all__ = [
    "BOUNDED_POOLS",
    "Sample",
    "Sampler",
    "role_of",
    "sample_process",
    "spark_jvm",
    "spark_processes",
    "thread_names",
]


@dataclass(frozen=True)
class Sample:
    """One process at one time."""

    t: float
    role: str
    pid: int
    rss_mb: float
    threads: int
    fds: int
    pooled: int = 0
    """Threads of :data:`BOUNDED_POOLS` (counted in ``threads`` too)."""


def role_of(command: bytes, parent_is_daemon: bool) -> str:
    """The role of a Python process below the JVM, from its command line (a forked worker has
    its daemon's command line: ``parent_is_daemon`` tells them apart)."""
    if b"python_streaming_source_runner" in command:
        return "planner"
    if b"pyspark.daemon" not in command:
        return "python"
    kind = "worker" if command.rstrip(b"\0").endswith(b"\0pyspark.worker") else "helper"
    return kind if parent_is_daemon else f"{kind}-daemon"


def spark_processes(jvm: int) -> dict[int, str]:
    """``{pid: role}`` of the JVM and of every Python process below it."""
    pythons = {
        pid: command
        for pid in descendants(jvm)
        if b"python" in (command := cmdline(pid)).split(b"\0")[0]
    }
    daemons = {  # a forked worker has its daemon's command line: tell them by their parent
        pid
        for pid, command in pythons.items()
        if parent(pid) == jvm and role_of(command, False).endswith("-daemon")
    }
    found = {jvm: "jvm"}
    for pid, command in sorted(pythons.items()):
        found[pid] = role_of(command, parent(pid) in daemons)
    return found


def sample_process(pid: int, role: str, t: float) -> Sample | None:
    """RSS (MiB), threads and open file descriptors of one process, or None when it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    rss_kb = int(fields.get("VmRSS", "0 kB").split()[0])
    threads = int(fields.get("Threads", "0").split()[0])
    return Sample(t, role, pid, rss_kb / 1024, threads, fds)


def thread_names(pid: int) -> dict[str, int]:
    """Threads of a process by name, numbers at the end dropped (``Executor task launch worker
    for task 12`` and ``... 13`` count as one name; names are cut at 15 characters by Linux)."""
    names: Counter[str] = Counter()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return {}
    for tid in tasks:
        try:
            name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
        except OSError:
            continue
        names[re.sub(r"[-_ #:]*\d+$", "", name) or name] += 1
    return dict(sorted(names.items()))


#: Spark's cached thread pools of the driver JVM whose size Spark caps (``ThreadUtils.
#: newDaemonCachedThreadPool(name, 100)`` in ``BlockManagerMasterEndpoint`` and
#: ``BlockManagerStorageEndpoint``, Spark 4.x): they grow with concurrent block removals (the
#: cleanup of each micro-batch's broadcasts) and drop threads idle for 60 s. Names as Linux cuts
#: them (15 characters), with the cap.
BOUNDED_POOLS = {"block-manager-a": 100, "block-manager-s": 100}


class Sampler(threading.Thread):
    """Samples the Spark processes and this process every ``interval`` seconds until stopped.

    ``t`` is seconds since ``origin`` (a :func:`time.monotonic` value).
    """

    def __init__(self, jvm: int, interval: float, origin: float) -> None:
        super().__init__(daemon=True, name="resource-sampler")
        self.jvm, self.interval, self.origin = jvm, interval, origin
        self.samples: list[Sample] = []
        self._lock = threading.Lock()
        self._halt = threading.Event()

    def sample_now(self) -> list[Sample]:
        """Take one round of samples (also recorded)."""
        t = time.monotonic() - self.origin
        targets = {**spark_processes(self.jvm), os.getpid(): "driver-python"}
        taken = [s for pid, role in targets.items() if (s := sample_process(pid, role, t))]
        names = thread_names(self.jvm)
        pooled = sum(n for name, n in names.items() if name in BOUNDED_POOLS)
        taken = [replace(s, pooled=pooled) if s.pid == self.jvm else s for s in taken]
        with self._lock:
            self.samples.extend(taken)
        return taken

    def snapshot(self) -> list[Sample]:
        """Every sample so far."""
        with self._lock:
            return list(self.samples)

    def run(self) -> None:
        while not self._halt.is_set():
            self.sample_now()
            self._halt.wait(self.interval)

    def stop(self) -> None:
        """Stop sampling (waits for the thread)."""
        self._halt.set()
        self.join()

    def as_json(self) -> list[dict[str, Any]]:
        """The samples as JSON-ready dicts."""
        return [asdict(s) for s in self.snapshot()]
