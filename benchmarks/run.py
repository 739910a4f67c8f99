"""Throughput and CPU of ``dynamic_kafka`` against raw confluent-kafka consumers, in one run.

Same embedded broker, same data (default 1M records of 100 bytes in 4 partitions):

* raw rows/s: two consumer processes (2 partitions each) with tuned fetch settings, released
  together once their consumers exist; rows/s = records / wall time until both are done.
* raw CPU: one consumer loop touching key, value, offset and timestamp; CPU µs per record.
* dynamic_kafka: a running streaming query (noop sink) on a local[2] SparkSession, as in
  production: it first drains a small warm-up topic, then the metadata file adds the benchmark
  topic to its stream; rows/s from that change until every record is read, and CPU µs per record
  of the whole Spark process tree (JVM, Python workers, driver) over the same span. A cold query
  (start-up included) is shown too, not compared.
* the broker's CPU is excluded from both sides (it serves both); its share is printed.
* peak memory of the Python workers (VmHWM) while the query reads.

Prints the ratios against the targets (>= 0.9x raw rows/s, <= 2x raw CPU per record).
Run with ``make bench``; options: ``--records N --size B``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import resource
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from confluent_kafka import Consumer, TopicPartition

from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.kafka.pool import CONSUMER_DEFAULTS
from pyspark_dynamic_kafka.source.planning import plan_tasks
from pyspark_dynamic_kafka.source.task import OffsetRange, ReadSettings
from pyspark_dynamic_kafka.testing import local_spark_session, start_clusters

PARTITIONS = 4
TOPIC = "bench"
WARMUP = "warmup"
WARMUP_RECORDS = 20_000


def _tuned(bootstrap: str) -> dict[str, Any]:
    config: dict[str, Any] = dict(CONSUMER_DEFAULTS)
    config.update(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-raw",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    return config


def _raw_consume(
    bootstrap: str, partitions: list[int], ends: dict[int, int], start: Any, out: Any
) -> None:
    """Read [0, end) of each partition; touch key, value, offset, timestamp.

    The consumer is created before ``start`` (a barrier shared with the other readers and the
    parent) is passed, so interpreter start-up is not timed. Reports (records, CPU seconds from
    the barrier on, monotonic time when done).
    """
    consumer = Consumer(_tuned(bootstrap))
    start.wait()
    start_cpu = resource.getrusage(resource.RUSAGE_SELF)
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in partitions])
    remaining = {p for p in partitions if ends[p] > 0}
    count = 0
    touched = 0
    while remaining:
        for m in consumer.consume(num_messages=10000, timeout=0.5):
            if m.error() is not None:
                continue
            key, value, offset, (_, ts) = m.key(), m.value(), m.offset(), m.timestamp()
            touched += len(value) + (len(key) if key else 0) + (ts & 1)
            count += 1
            if offset + 1 >= ends[m.partition()]:
                remaining.discard(m.partition())
    done = time.monotonic()
    end_cpu = resource.getrusage(resource.RUSAGE_SELF)
    consumer.close()
    cpu = (end_cpu.ru_utime - start_cpu.ru_utime) + (end_cpu.ru_stime - start_cpu.ru_stime)
    out.put((count, cpu, done))


def _raw_readers(bootstrap: str, ends: dict[int, int], groups: list[list[int]]) -> list[Any]:
    """Run one reader process per partition group, released together; (count, cpu, seconds)."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    start = ctx.Barrier(len(groups) + 1)
    procs = [
        ctx.Process(target=_raw_consume, args=(bootstrap, group, ends, start, out))
        for group in groups
    ]
    for p in procs:
        p.start()
    start.wait()
    started = time.monotonic()
    results = [out.get() for _ in procs]
    for p in procs:
        p.join()
    return [(count, cpu, done - started) for count, cpu, done in results]


def _records(count: int, size: int) -> Iterator[tuple[None, bytes]]:
    """``count`` records with no key and a ``size``-byte value, spread round-robin."""
    payload = bytes(range(256)) * (size // 256 + 1)
    for i in range(count):
        value = i.to_bytes(8, "big") + payload
        yield None, value[:size]


def _watermarks(bootstrap: str) -> dict[int, int]:
    consumer = Consumer(_tuned(bootstrap))
    ends = {
        p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p), 10)[1]
        for p in range(PARTITIONS)
    }
    consumer.close()
    return ends


def raw_throughput(bootstrap: str, ends: dict[int, int]) -> float:
    """rows/s of two consumer processes reading two partitions each."""
    halves = [list(range(PARTITIONS))[0::2], list(range(PARTITIONS))[1::2]]
    results = _raw_readers(bootstrap, ends, halves)
    return sum(r[0] for r in results) / max(r[2] for r in results)


def raw_cpu_per_record(bootstrap: str, ends: dict[int, int]) -> float:
    """CPU µs per record of one consumer loop reading every partition."""
    [(count, cpu, _)] = _raw_readers(bootstrap, ends, [list(range(PARTITIONS))])
    return cpu / count * 1e6


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        for child in children.get(current, []):
            found.append(child)
            todo.append(child)
    return found


def _tree_cpu_seconds(pid: int, exclude: int) -> dict[str, float]:
    """CPU seconds of ``pid`` and its descendants by kind (driver, JVM, Python workers).

    ``exclude`` (the broker, which serves both sides) and its descendants are left out.
    """
    ticks = os.sysconf("SC_CLK_TCK")
    skipped = {exclude, *_descendants(exclude)}
    total = {"driver": 0.0, "JVM": 0.0, "Python workers": 0.0}
    for p in [pid, *_descendants(pid)]:
        if p in skipped:
            continue
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            program = Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
        kind = "driver" if p == pid else "JVM" if program.endswith(b"java") else "Python workers"
        total[kind] += sum(int(x) for x in fields[11:15]) / ticks  # utime stime cutime cstime
    return total


def _python_workers(pid: int) -> list[int]:
    workers = []
    for p in _descendants(pid):
        try:
            cmdline = Path(f"/proc/{p}/cmdline").read_bytes()
        except OSError:
            continue
        if b"pyspark.daemon" in cmdline or b"python" in cmdline.split(b"\0")[0]:
            workers.append(p)
    return workers


def _peak_rss_mb(pids: list[int]) -> float:
    peak = 0
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
        except OSError:
            continue
    return peak / 1024


def _reset_peaks(pids: list[int]) -> None:
    for p in pids:
        try:
            Path(f"/proc/{p}/clear_refs").write_text("5")
        except OSError:
            continue


def _write_metadata(path: Path, bootstrap: str, topics: list[str]) -> None:
    """Map stream ``bench`` to ``topics``; rewrite the file atomically."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(
        f"clusters:\n  bench:\n    bootstrap.servers: '{bootstrap}'\n"
        f"streams:\n  {TOPIC}:\n    - cluster: bench\n      topics: [{', '.join(topics)}]\n"
    )
    os.replace(tmp, path)


def _start_query(spark: Any, metadata: Path) -> Any:
    return (
        spark.readStream.format("dynamic_kafka")
        .option("metadataService", "file")
        .option("metadataService.path", str(metadata))
        .option("streamIds", TOPIC)
        .option("startingOffsets", "earliest")
        .option("metadataDiscoveryIntervalMs", "0")
        .load()
        .writeStream.format("noop")
        .start()
    )


def _rows(query: Any) -> int:
    return sum(int(p["numInputRows"]) for p in query.recentProgress)


def _drain(query: Any, rows: int, timeout_s: float = 600.0) -> None:
    """Wait until the query has read ``rows`` rows in all (processAllAvailable may return early
    when a trigger that began before the data appeared ends with no data)."""
    deadline = time.monotonic() + timeout_s
    while _rows(query) < rows:
        if time.monotonic() > deadline:
            raise SystemExit(f"dynamic_kafka read {_rows(query)} rows, expected {rows}")
        query.processAllAvailable()


def _measured(run: Any, broker: int) -> dict[str, Any]:
    """Run ``run()`` (which returns the rows it read); rows/s, CPU µs/record by process kind and
    the peak RSS of the Python workers during it."""
    me = os.getpid()
    _reset_peaks(_python_workers(me))
    before = _tree_cpu_seconds(me, exclude=broker)
    broker_before = _broker_cpu_seconds(broker)
    started = time.perf_counter()
    rows = run()
    seconds = time.perf_counter() - started
    after = _tree_cpu_seconds(me, exclude=broker)
    broker_cpu = _broker_cpu_seconds(broker) - broker_before
    by_kind = {k: (after[k] - before[k]) / max(rows, 1) * 1e6 for k in after}
    return {
        "rows": rows,
        "rps": rows / seconds,
        "cpu": sum(by_kind.values()),
        "by_kind": by_kind,
        "broker": broker_cpu / max(rows, 1) * 1e6,
        "peak": _peak_rss_mb(_python_workers(me)),
    }


def _largest_task(ends: dict[int, int]) -> int:
    """Records of the largest task the source plans for the whole topic."""
    ranges = [OffsetRange("bench", TOPIC, p, 0, end) for p, end in ends.items()]
    settings = ReadSettings(0, 0, frozenset())
    tasks = plan_tasks(ranges, {"bench": FrozenProperties({})}, settings)
    return max(sum(r.size for r in task.ranges) for task in tasks)


def _broker_cpu_seconds(broker: int) -> float:
    return sum(_tree_cpu_seconds(broker, exclude=-1).values()) if broker > 0 else 0.0


def spark_cold(spark: Any, metadata: Path, bootstrap: str, total: int, broker: int) -> Any:
    """A new query over the whole topic: query start-up (a Python reader process, clients,
    planning) included."""
    _write_metadata(metadata, bootstrap, [TOPIC])

    def run() -> int:
        query = _start_query(spark, metadata)
        try:
            _drain(query, total)
            return _rows(query)
        finally:
            query.stop()

    return _measured(run, broker)


def spark_warm(spark: Any, metadata: Path, bootstrap: str, total: int, broker: int) -> Any:
    """A running query, as in production: it first drains a small warm-up topic; the measurement
    starts when the metadata file adds the benchmark topic to the stream and ends when the query
    has read all of it (``discoveryStartingOffsets=earliest``)."""
    _write_metadata(metadata, bootstrap, [WARMUP])
    query = _start_query(spark, metadata)
    try:
        _drain(query, WARMUP_RECORDS)
        warm = _rows(query)

        def run() -> int:
            _write_metadata(metadata, bootstrap, [WARMUP, TOPIC])
            _drain(query, warm + total)
            return _rows(query) - warm

        return _measured(run, broker)
    finally:
        query.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3, help="side-by-side rounds (median)")
    args = parser.parse_args()

    with start_clusters(["bench"]) as clusters:
        cluster = clusters["bench"]
        bootstrap = cluster.bootstrap_servers
        broker = cluster.pid or -1  # the broker serves both sides; its CPU is nobody's reader's
        cluster.create_topic(TOPIC, partitions=PARTITIONS)
        cluster.create_topic(WARMUP, partitions=PARTITIONS)
        t0 = time.perf_counter()
        cluster.produce_bulk(TOPIC, _records(args.records, args.size))
        load_s = time.perf_counter() - t0
        cluster.produce_bulk(WARMUP, _records(WARMUP_RECORDS, args.size))
        ends = _watermarks(bootstrap)
        total = sum(ends.values())
        print(
            f"loaded {total} records of {args.size} B in {PARTITIONS} partitions in {load_s:.1f} s"
        )
        workdir = Path(os.environ.get("BENCH_DIR", "/tmp/dynamic-kafka-bench"))
        workdir.mkdir(parents=True, exist_ok=True)
        metadata = workdir / "streams.yaml"
        spark = local_spark_session(
            "dynamic-kafka-bench", **{"spark.ui.showConsoleProgress": "false"}
        )
        spark.sparkContext.setLogLevel("ERROR")
        # The JVM compiles its hot paths during the first runs (seconds of JIT CPU): the
        # comparison is of steady states, as in a long-running query. The cold run is shown.
        cold = spark_cold(spark, metadata, bootstrap, total, broker)
        spark_warm(spark, metadata, bootstrap, total, broker)
        rounds = []
        for _ in range(args.rounds):
            raw = (raw_throughput(bootstrap, ends), raw_cpu_per_record(bootstrap, ends))
            rounds.append((raw, spark_warm(spark, metadata, bootstrap, total, broker)))
        spark.stop()

    for _, run in [(None, cold), *rounds]:
        if run["rows"] != total:
            raise SystemExit(f"dynamic_kafka read {run['rows']} rows, expected {total}")
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(
        f"cold first query: {cold['rps']:,.0f} rows/s, {cold['cpu']:.2f} CPU us/record "
        f"(query start-up and JVM JIT compilation included; not compared)"
    )
    throughput, cpu = [], []
    for i, ((raw_rps, raw_cpu), run) in enumerate(rounds, 1):
        throughput.append(run["rps"] / raw_rps)
        cpu.append(run["cpu"] / raw_cpu)
        kinds = ", ".join(f"{k} {v:.2f}" for k, v in run["by_kind"].items())
        kinds += f"; broker {run['broker']:.2f}, not counted"
        print(
            f"round {i}: raw 2 processes {raw_rps:,.0f} rows/s, raw loop {raw_cpu:.2f} us/rec | "
            f"dynamic_kafka {run['rps']:,.0f} rows/s, {run['cpu']:.2f} us/rec ({kinds}) | "
            f"ratios {throughput[-1]:.2f}x rows/s, {cpu[-1]:.2f}x CPU | "
            f"worker peak {run['peak']:.0f} MiB"
        )
    peak = max(run["peak"] for _, run in rounds)
    largest = _largest_task(ends)
    print(f"peak RSS of a Python worker: {peak:.0f} MiB (largest task: {largest:,} records)")
    print(f"throughput ratio (median): {statistics.median(throughput):.2f}x raw (target >= 0.9x)")
    print(f"CPU ratio (median):        {statistics.median(cpu):.2f}x raw (target <= 2x)")


if __name__ == "__main__":
    main()
