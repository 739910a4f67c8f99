"""CPU of process trees over a time window, read from ``/proc``.

A :class:`CpuSampler` thread reads the CPU seconds of some process trees (the Spark JVM and its
Python workers, the Flink JVM) every few tens of milliseconds with wall-clock times; a window
reported afterwards by the side itself (a Spark micro-batch's ``addBatch``, the Flink job's first
sink open to last record) is then priced by interpolating between samples. Brokers are processes
of their own and never inside a measured tree.
"""

from __future__ import annotations

import bisect
import os
import threading
import time

from pyspark_dynamic_kafka.testing.procfs import (
    children_map,
    cmdline,
    descendants,
    find_child,
    parent,
    stat_fields,
)

__all__ = [
    "CpuSampler",
    "ThreadSampler",
    "children_map",
    "cmdline",
    "descendants",
    "is_planner",
    "load_average",
    "parent",
    "process_cpu",
    "spark_jvm",
    "thread_group",
]

_TICKS = os.sysconf("SC_CLK_TCK")


def spark_jvm(timeout: float = 60.0) -> int:
    """The pid of the driver JVM started by this process's SparkSession."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = find_child(os.getpid(), b"org.apache.spark.deploy.SparkSubmit")
        if pid is not None and cmdline(pid).split(b"\0")[0].endswith(b"java"):
            return pid
        time.sleep(0.2)
    raise RuntimeError("cannot find the Spark driver JVM among this process's children")


def process_cpu(pid: int) -> tuple[str, float] | None:
    """(``JVM`` or ``Python``, user + system CPU seconds) of one process, or None if it is gone.

    Children's CPU (``cutime``) is left out: every process of a tree is counted itself.
    """
    fields = stat_fields(pid)
    if fields is None:
        return None
    kind = "JVM" if cmdline(pid).split(b"\0")[0].endswith(b"java") else "Python"
    return kind, (int(fields[11]) + int(fields[12])) / _TICKS


class CpuSampler:
    """Samples the CPU of the trees under some root processes, in a thread, until stopped.

    Parameters
    ----------
    roots:
        ``{label: pid}``; a root that exits reads as its last sample.
    interval:
        Seconds between samples.
    """

    def __init__(self, roots: dict[str, int], interval: float = 0.05) -> None:
        self.roots = roots
        self.interval = interval
        self.times: list[float] = []
        self.samples: list[dict[str, dict[str, float]]] = []
        self._seen: dict[str, dict[int, tuple[str, float]]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> CpuSampler:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def _sample(self) -> None:
        """Add up every process of every tree; a process that exited keeps its last reading (its
        CPU stays spent), so a Python worker ending inside a window never makes it negative."""
        children = children_map()
        now = time.time()
        for label, root in self.roots.items():
            seen = self._seen.setdefault(label, {})
            for pid in [root, *descendants(root, children)]:
                if (found := process_cpu(pid)) is not None:
                    seen[pid] = found
        totals = {}
        for label, seen in self._seen.items():
            total = {"JVM": 0.0, "Python": 0.0}
            for kind, cpu in seen.values():
                total[kind] += cpu
            totals[label] = total
        self.samples.append(totals)
        self.times.append(now)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def at(self, label: str, when: float) -> dict[str, float]:
        """CPU seconds of tree ``label`` by kind at wall-clock ``when`` (interpolated)."""
        i = bisect.bisect_left(self.times, when)
        if i == 0:
            return dict(self.samples[0][label])
        if i >= len(self.times):
            return dict(self.samples[-1][label])
        t0, t1 = self.times[i - 1], self.times[i]
        share = (when - t0) / (t1 - t0) if t1 > t0 else 1.0
        before, after = self.samples[i - 1][label], self.samples[i][label]
        return {k: before[k] + (after[k] - before[k]) * share for k in before}

    def between(self, label: str, start: float, end: float) -> dict[str, float]:
        """CPU seconds of tree ``label`` by kind spent from ``start`` to ``end``."""
        first, last = self.at(label, start), self.at(label, end)
        return {k: last[k] - first[k] for k in first}


def load_average() -> float:
    return os.getloadavg()[0]


def thread_group(kind: str, name: str, main: bool, planner: bool = False) -> str:
    """The CPU group of one thread of a Spark process tree: ``kind`` is the process's (``JVM`` or
    ``Python``), ``name`` the thread's (``/proc/.../comm``: 15 characters at most), ``main``
    whether it is the process's first thread, ``planner`` whether the process is one of the
    driver's Python planners (:func:`is_planner`). JVM: its task threads (``Executor task launch
    worker``: operators, rows to Arrow, Spark's Kafka sink's ``send``), the Kafka producer's
    network threads, the garbage collector (and safepoints), the JIT compilers, the rest. Python:
    the planners (creating the data source and the writer, committing), then a worker's main thread
    (the writer's Python and whatever it calls on that thread) and librdkafka's threads (``rdk:*``);
    any other thread counts as ``Python other``."""
    if kind == "Python":
        if planner:
            return "Python planner"
        if main:
            return "Python main"
        return "Python rdk" if name.startswith("rdk:") else "Python other"
    if name.startswith("Executor task"):
        return "JVM task"
    if name.startswith("kafka-producer"):
        return "JVM kafka"
    if name.startswith(("GC Thread", "G1 ", "VM Thread", "VM Periodic")):
        return "JVM GC"
    if "CompilerThre" in name:
        return "JVM JIT"
    return "JVM other"


def is_planner(command: bytes) -> bool:
    """Whether a Python process's command line is one of the driver's planners (``pyspark.daemon
    pyspark.sql.worker.<module>`` and the processes it forks), not an executor's worker."""
    return b"pyspark.sql.worker." in command


def _threads(pid: int) -> list[tuple[int, str, float]]:
    """(tid, name, CPU seconds) of every live thread of ``pid``."""
    found = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as stat:
                text = stat.read()
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        found.append((int(tid), name, (int(fields[11]) + int(fields[12])) / _TICKS))
    return found


class ThreadSampler(CpuSampler):
    """A :class:`CpuSampler` whose kinds are :func:`thread_group`'s groups: each process's CPU
    split by its threads. A thread that ended keeps its last reading in its group; what a process
    spent that no thread reading holds (a thread's last moments) goes to its kind's ``other``
    group, so the groups always sum to the process's CPU."""

    def __init__(self, roots: dict[str, int], interval: float = 0.05) -> None:
        super().__init__(roots, interval)
        #: {label: {pid: (kind, process CPU, {tid: (group, CPU)})}}
        self._threads: dict[str, dict[int, tuple[str, float, dict[int, tuple[str, float]]]]] = {}
        self._planners: dict[int, bool] = {}

    def _sample(self) -> None:
        children = children_map()
        now = time.time()
        totals = {}
        for label, root in self.roots.items():
            seen = self._threads.setdefault(label, {})
            for pid in [root, *descendants(root, children)]:
                if (found := process_cpu(pid)) is None:
                    continue
                kind, cpu = found
                threads = seen[pid][2] if pid in seen else {}
                if pid not in self._planners:
                    self._planners[pid] = kind == "Python" and is_planner(cmdline(pid))
                for tid, name, spent in _threads(pid):
                    group = thread_group(kind, name, tid == pid, self._planners[pid])
                    threads[tid] = (group, spent)
                seen[pid] = (kind, cpu, threads)
            total: dict[str, float] = {}
            for kind, cpu, threads in seen.values():
                for group, spent in threads.values():
                    total[group] = total.get(group, 0.0) + spent
                residual = cpu - sum(spent for _, spent in threads.values())
                total[f"{kind} other"] = total.get(f"{kind} other", 0.0) + residual
            totals[label] = total
        self.samples.append(totals)
        self.times.append(now)

    def at(self, label: str, when: float) -> dict[str, float]:
        """As :meth:`CpuSampler.at`; a group missing from a sample reads 0 there."""
        i = bisect.bisect_left(self.times, when)
        if i == 0 or i >= len(self.times):
            return dict(self.samples[0 if i == 0 else -1][label])
        t0, t1 = self.times[i - 1], self.times[i]
        share = (when - t0) / (t1 - t0) if t1 > t0 else 1.0
        before, after = self.samples[i - 1][label], self.samples[i][label]
        return {
            g: before.get(g, 0.0) + (after.get(g, 0.0) - before.get(g, 0.0)) * share
            for g in sorted(set(before) | set(after))
        }

    def between(self, label: str, start: float, end: float) -> dict[str, float]:
        first, last = self.at(label, start), self.at(label, end)
        return {g: last.get(g, 0.0) - first.get(g, 0.0) for g in sorted(set(first) | set(last))}
