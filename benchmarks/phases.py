"""Where a whole query's time goes: the Python side's calls on a timeline, per process.

:mod:`.whole_query` with ``--phases`` reads through traced twins of the sides' sources:
``bench_traced_dk`` (``dynamic_kafka``'s own classes, each Spark-called method timed) and
``bench_traced_floor`` (the floor's). Every Python process that Spark starts for them appends
one JSON line per call to :data:`TRACE` (wall-clock start and end, pid, the process's own start
time and the Spark worker module it runs); :func:`split` then lays the calls on the query's
timeline (``start()``, the triggers from the progress, termination) as phases:

* ``runner spawn -> its first call``: the source's planner process (pyspark's
  ``python_streaming_source_runner``, a new interpreter for each query) from its start to the
  first call into the source: interpreter, pyspark and source imports, unpickling the source;
  ``planner N spawned at`` / ``first call at``: each Python process that called the source, from
  ``start()`` (``load()``'s ``schema``, the runner, pyspark's read planner);
* ``reader``: building the stream reader; ``availableNow``, ``initialOffset``, ``latestOffset``,
  ``partitions``: the reader's own calls (the listings and planning);
* ``worker start -> read()``: the first task's ``read()`` call from the later of its Python
  worker's start and ``start()`` (pyspark reuses workers across queries); ``read() -> first
  batch``: to its first batch (the core's first connections);
* ``triggers``, ``between triggers`` (from the progress) and ``last trigger -> terminated``: the
  last trigger's end to ``awaitTermination()`` returning (the source's ``stop`` included).

The module travels to Spark's Python processes by value (``cloudpickle.register_pickle_by_value``),
like :mod:`.floor`.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from benchmarks.floor import FloorSource, FloorStreamReader
from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.streaming.datasource import ReadLimit

from pyspark_dynamic_kafka.datasource import DynamicKafkaDataSource
from pyspark_dynamic_kafka.source.stream import DynamicKafkaStreamReader

#: Where Spark's Python processes append their calls (one JSON object a line).
TRACE = os.environ.get("BENCH_TRACE", "/tmp/dynamic-kafka-bench/trace.jsonl")


def _process_start() -> float:
    """This process's start, wall clock, from ``/proc`` (0.0 where there is none): its age is
    the system's uptime less its start in clock ticks after boot (``btime`` is whole seconds)."""
    try:
        with open("/proc/self/stat") as stat:
            ticks = int(stat.read().rpartition(")")[2].split()[19])
        with open("/proc/uptime") as uptime:
            up = float(uptime.read().split()[0])
    except (OSError, ValueError):
        return 0.0
    return time.time() - (up - ticks / os.sysconf("SC_CLK_TCK"))


def emit(side: str, call: str, start: float, end: float) -> None:
    """Append one call of ``side``'s source in this process to :data:`TRACE`."""
    line = {
        "side": side,
        "call": call,
        "start": start,
        "end": end,
        "pid": os.getpid(),
        "process": _process_start(),
        "worker": os.path.basename(sys.argv[0]) if sys.argv else "",
    }
    with open(TRACE, "a") as out:
        out.write(json.dumps(line) + "\n")


def _timed_batches(side: str, batches: Iterator[Any], called: float) -> Iterator[Any]:
    first = None
    for batch in batches:
        if first is None:
            first = time.time()
            emit(side, "read first batch", called, first)
        yield batch
    emit(side, "read", called, time.time())


def _timed(side: str, call: str, method: Callable[..., Any], *args: Any) -> Any:
    """``method(*args)``, its span emitted as ``side``'s ``call``."""
    t = time.time()
    out = method(*args)
    emit(side, call, t, time.time())
    return out


class TracedStreamReader(DynamicKafkaStreamReader):
    """``dynamic_kafka``'s stream reader with every call Spark makes timed."""

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        emit("native", "unpickled", time.time(), time.time())

    def initialOffset(self) -> dict[str, Any]:
        return _timed("native", "initialOffset", super().initialOffset)  # type: ignore[no-any-return]

    def prepareForTriggerAvailableNow(self) -> None:
        _timed("native", "availableNow", super().prepareForTriggerAvailableNow)

    def getDefaultReadLimit(self) -> ReadLimit:
        return _timed("native", "getDefaultReadLimit", super().getDefaultReadLimit)

    def latestOffset(self, start: dict[str, Any], limit: Any = None) -> dict[str, Any]:
        return _timed("native", "latestOffset", super().latestOffset, start, limit)  # type: ignore[no-any-return]

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return _timed("native", "reportLatestOffset", super().reportLatestOffset)  # type: ignore[no-any-return]

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Any:
        return _timed("native", "partitions", super().partitions, start, end)

    def commit(self, end: dict[str, Any]) -> None:
        _timed("native", "commit", super().commit, end)

    def stop(self) -> None:
        _timed("native", "stop", super().stop)

    def read(self, partition: Any) -> Iterator[Any]:
        t = time.time()
        return _timed_batches("native", super().read(partition), t)


class _TracedSource:
    """What both traced sources add to their data source: a format name of their own, and
    ``schema`` and ``streamReader`` timed as ``side``'s (the reader as ``reader_class``)."""

    side: str
    format_name: str
    reader_class: type | None = None

    @classmethod
    def name(cls) -> str:
        return cls.format_name

    def schema(self) -> Any:
        return _timed(self.side, "schema", super().schema)  # type: ignore[misc]

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        emit(self.side, "source", time.time(), time.time())
        reader = _timed(self.side, "reader", super().streamReader, schema)  # type: ignore[misc]
        if self.reader_class is not None:
            reader.__class__ = self.reader_class
        return reader  # type: ignore[no-any-return]


class TracedDynamicKafka(_TracedSource, DynamicKafkaDataSource):
    """``dynamic_kafka`` under another name, its stream reader traced."""

    side, format_name, reader_class = "native", "bench_traced_dk", TracedStreamReader


class TracedFloorReader(FloorStreamReader):
    """The floor's stream reader with every call Spark makes timed."""

    def initialOffset(self) -> dict[str, int]:
        return _timed("floor", "initialOffset", super().initialOffset)  # type: ignore[no-any-return]

    def latestOffset(self) -> dict[str, int]:
        return _timed("floor", "latestOffset", super().latestOffset)  # type: ignore[no-any-return]

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Any:
        return _timed("floor", "partitions", super().partitions, start, end)

    def read(self, partition: Any) -> Iterator[Any]:
        t = time.time()
        return _timed_batches("floor", super().read(partition), t)


class TracedFloor(_TracedSource, FloorSource):
    """The floor under another name, its stream reader traced."""

    side, format_name, reader = "floor", "bench_traced_floor", TracedFloorReader


#: The source's calls summed per query, in the order Spark makes them.
_CALLS = ("schema", "reader", "availableNow", "initialOffset", "latestOffset", "partitions", "stop")


def _seconds(stamp: str) -> float:
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def read_trace() -> list[dict[str, Any]]:
    """Every call traced since the file was last emptied."""
    try:
        with open(TRACE) as lines:
            return [json.loads(line) for line in lines if line.strip()]
    except FileNotFoundError:
        return []


def reset() -> None:
    """Empty :data:`TRACE` (before a query)."""
    os.makedirs(os.path.dirname(TRACE), exist_ok=True)
    open(TRACE, "w").close()


def split(
    side: str, started: float, ended: float, progress: list[dict[str, Any]]
) -> dict[str, float]:
    """One query's phases in seconds (see the module's docstring), from its trace and progress.

    ``started``/``ended``: around ``start()`` and ``awaitTermination()``.
    """
    calls = [c for c in read_trace() if c["side"] == side]
    triggers = [
        (
            _seconds(p["timestamp"]),
            _seconds(p["timestamp"]) + p["durationMs"]["triggerExecution"] / 1e3,
        )
        for p in progress
    ]
    out: dict[str, float] = {}
    first_trigger = min(t for t, _ in triggers) if triggers else ended
    last_end = max(e for _, e in triggers) if triggers else ended
    out["start() -> first trigger"] = first_trigger - started
    runner = [c for c in calls if "streaming_source_runner" in c["worker"]]
    if runner:
        first = min(runner, key=lambda c: c["start"])
        out["  runner spawn -> its first call"] = first["start"] - first["process"]
    for name in (
        "schema",
        "reader",
        "availableNow",
        "initialOffset",
        "latestOffset",
        "partitions",
        "stop",
    ):
        spans = [c["end"] - c["start"] for c in calls if c["call"] == name]
        if spans:
            out[f"  {name} (x{len(spans)})"] = sum(spans)
    planners = {c["pid"]: c for c in calls if c["call"] in ("schema", "source")}
    for i, (pid, call) in enumerate(sorted(planners.items(), key=lambda p: p[1]["process"])):
        worker = f"planner {i + 1} ({call['worker'].removesuffix('.py')})"
        first = min(c["start"] for c in calls if c["pid"] == pid)
        out[f"  {worker} spawned at"] = call["process"] - started
        out[f"  {worker} first call at"] = first - started
    reads = [c for c in calls if c["call"] == "read first batch"]
    if reads:
        first = min(reads, key=lambda c: c["start"])
        out["  worker start -> read()"] = first["start"] - max(first["process"], started)
        out["  read() -> first batch"] = first["end"] - first["start"]
    out["triggers"] = sum(e - s for s, e in triggers)
    out["between triggers"] = (last_end - first_trigger) - out["triggers"]
    out["last trigger -> terminated"] = ended - last_end
    return out
