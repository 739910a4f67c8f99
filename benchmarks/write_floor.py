"""The write floor: what handing rows to any Python sink costs, beside ours and Spark's sink.

One Apache Kafka cluster (its broker on the JVM's defaults, ``SERVING_JVM_OPTIONS``), the rows
of :mod:`benchmarks.sink` (default 1,000,000: ``key`` the id as a string, ``value`` ``--size``
bytes, as Parquet in 2 files: 2 tasks on ``local[2]``), one warm SparkSession; every side is a
new ``writeStream`` on the Parquet directory with ``trigger(availableNow=True)``:

* ``noop``: Spark's ``noop`` sink: reading the Parquet into rows, nothing written;
* ``floor``: ``bench_write_floor`` (:mod:`benchmarks.floor`), a ``DataSourceStreamArrowWriter``
  that takes Spark's Arrow batches and only counts their rows: rows -> Arrow -> a Python worker,
  the least any Python sink pays;
* ``kafka``: Spark's ``format("kafka")`` sink (at-least-once);
* ``native``, ``dynamic_kafka``: ours, atLeastOnce, ``writer=native`` (the core's direct produce
  path) / ``writer=python``; ``native_librdkafka``: ``writer=native`` on the core's librdkafka
  producer (``kafka.partitioner=murmur2``, which the direct path does not take);
* ``exactly_once_native``, ``exactly_once_librdkafka``, ``exactly_once``: the same with
  ``deliveryGuarantee=exactlyOnce``;
* ``native_gc_frozen`` (only when ``--sides`` names it): ``native`` with the cyclic garbage
  collector frozen after each task (:mod:`benchmarks.gc_variants`).

Each side is priced twice: the whole query as a user times it (``start()`` to the end of
``awaitTermination()``) and its ``addBatch`` window (the Spark job that reads and writes the rows),
with the CPU of the Spark process tree (JVM and Python workers) over each, split by thread
(:class:`~benchmarks.measure.ThreadSampler`: the JVM's task, Kafka producer, GC and JIT threads;
the driver's Python planners; a Python worker's main thread and librdkafka's ``rdk:`` threads).
Every write is checked (the topic's end offsets, as :mod:`benchmarks.sink`; the floor's own count).
Each Python side is primed first (:class:`FloorWrites`). Warm-up rounds until the JVM's compiled
code has settled for every side (:func:`warm`), then ``--rounds`` rounds interleaved, order
reversed every other round; ratios per round and medians, then the window's split per record
(medians per thread group) and each of ours above the floor.
``python -m benchmarks.write_floor``; ``--records N --size B --rounds R --sides ... --secure``
(every side through the SASL_SSL listener with SCRAM-SHA-512, the production estate's).
"""

from __future__ import annotations

import contextlib
import statistics
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks import floor as floor_module
from benchmarks import gc_variants, report
from benchmarks.floor import WriteFloorSink, floor_rows
from benchmarks.measure import ThreadSampler, load_average, process_cpu
from benchmarks.run import SCRAM_PASSWORD, SCRAM_USER, listener
from benchmarks.sink import WRITERS, Writes, prepare
from benchmarks.spark_sides import Cluster, Run, _window, bench_setup

from pyspark_dynamic_kafka.testing import local_spark_session, set_scram_password, start_clusters
from pyspark_dynamic_kafka.testing.kafka_config import SERVING_JVM_OPTIONS

OURS = [
    "native",
    "native_librdkafka",
    "exactly_once_native",
    "exactly_once_librdkafka",
    "dynamic_kafka",
    "exactly_once",
]
SIDES = ["noop", "floor", "kafka", *OURS]
PAIRS: report.Pairs = [
    ("floor", "kafka"),
    *[(ours, peer) for ours in OURS for peer in ("kafka", "floor")],
    ("native_gc_frozen", "native"),
    ("native", "native_librdkafka"),
    ("exactly_once_native", "exactly_once_librdkafka"),
]
#: The format of each ``dynamic_kafka`` side that is not ``dynamic_kafka`` itself, and the side
#: whose options it takes.
VARIANTS = {
    "native_gc_frozen": ("bench_dynamic_kafka_gc_frozen", "native"),
}
#: Issue 44's targets against Spark's sink (rows/s at least, CPU at most).
TARGETS: dict[str, report.Target] = {
    "native/kafka": (2.0, 0.6),
    "exactly_once_native/kafka": (1.5, 0.7),
}
#: The thread groups in the split's columns (:func:`benchmarks.measure.thread_group`).
GROUPS = [
    "JVM task",
    "JVM kafka",
    "JVM GC",
    "JVM JIT",
    "JVM other",
    "Python planner",
    "Python main",
    "Python rdk",
    "Python other",
]
#: The whole query (``start()`` to termination) and the ``addBatch`` window of one side.
Drained = tuple[Run, Run]


def drain(jvm: int, start: Callable[[], Any], total: int, timeout: float = 900.0) -> Drained:
    """Run ``start()`` (a started ``availableNow`` query) to its end; price it whole and its
    ``addBatch`` window (:func:`benchmarks.spark_sides._window`)."""
    with ThreadSampler({"spark": jvm}) as sampler:
        began = time.time()
        query = start()
        ended = query.awaitTermination(timeout)
        done = time.time()
    if not ended:
        query.stop()
        raise SystemExit(f"the query did not end within {timeout:.0f} s")
    if query.exception() is not None:
        raise SystemExit(f"the query failed: {query.exception()}")
    rows, first, last = _window(list(query.recentProgress))
    if rows != total:
        raise SystemExit(f"the query read {rows} rows, expected {total}")
    whole = Run(rows, done - began, sampler.between("spark", began, done))
    return whole, Run(rows, last - first, sampler.between("spark", first, last))


class FloorWrites(Writes):
    """:class:`benchmarks.sink.Writes`'s streaming sides, each drained whole, plus the floors.

    Each Python side is first primed (unmeasured) by the same sink writing ``tiny``'s 2 rows in 2
    tasks: Spark stops a Python worker idle for 60 s (not configurable) and a new one spends about
    0.5 s of CPU importing, which would land on whichever side found its pool cold. Priming prices
    every side warm, as a query that runs often finds it; a first query pays the start-ups too.
    """

    def __init__(self, *args: Any, tiny: Path, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tiny = tiny
        #: A scratch topic for the primers of ``dynamic_kafka``'s sides (never checked).
        self.scratch: tuple[str, Path] | None = None
        #: Each side's broker CPU over its whole queries (µs per record), round by round.
        self.broker: dict[str, list[float]] = {}

    def _broker_cpu(self) -> float:
        """CPU seconds the cluster's broker processes have spent (outside the Spark tree)."""
        found = (process_cpu(pid) for pid in self.cluster.broker_pids if pid is not None)
        return sum(cpu for _, cpu in filter(None, found))

    def _frame(self, rows: Path, fmt: str, options: dict[str, str]) -> Any:
        """The streaming frame a side writes: the Parquet rows as they are."""
        return self.spark.readStream.schema(self.schema).parquet(str(rows))

    def _start(self, rows: Path, fmt: str, options: dict[str, str], checkpoint: str) -> Any:
        frame = self._frame(rows, fmt, options)
        writer = frame.writeStream.format(fmt).options(**options)
        writer = writer.option("checkpointLocation", checkpoint)
        return writer.trigger(availableNow=True).start()

    def _prime(self, name: str) -> None:
        """Run ``name``'s sink on the 2 tiny rows (nothing for the JVM's own sinks)."""
        run = uuid.uuid4().hex[:12]
        checkpoint = str(self.workdir / f"p{run}.checkpoint")
        if name == "floor":
            options = {"counts": str(self.workdir / f"p{run}.counts")}
            query = self._start(self.tiny, "bench_write_floor", options, checkpoint)
        elif name in WRITERS or name in VARIANTS:
            self.scratch = self.scratch or self._topic()
            fmt, like = VARIANTS.get(name, ("dynamic_kafka", name))
            options = self._options(like, *self.scratch)
            if "sinkId" in options:
                options["sinkId"] = f"p{run}"
            query = self._start(self.tiny, fmt, options, checkpoint)
        else:
            return
        if not query.awaitTermination(300) or query.exception() is not None:
            raise SystemExit(f"priming {name} failed: {query.exception()}")

    def _drain(self, name: str, fmt: str, options: dict[str, str], checkpoint: str) -> Drained:
        """:func:`drain` of side ``name``, the broker's CPU over it kept (``_check``'s read-back
        and topic deletion come after)."""
        before = self._broker_cpu()
        drained = drain(
            self.jvm, lambda: self._start(self.rows, fmt, options, checkpoint), self.total
        )
        spent = (self._broker_cpu() - before) / self.total * 1e6
        self.broker.setdefault(name, []).append(spent)
        return drained

    def side(self, name: str) -> Drained:
        self._prime(name)
        run = uuid.uuid4().hex[:12]
        if name in ("noop", "floor"):
            counts = self.workdir / f"f{run}.counts"
            options = {"counts": str(counts)} if name == "floor" else {}
            fmt = "bench_write_floor" if name == "floor" else "noop"
            drained = self._drain(name, fmt, options, str(self.workdir / f"f{run}.checkpoint"))
            if name == "floor" and (got := floor_rows(counts)) != self.total:
                raise SystemExit(f"the write floor received {got} rows, expected {self.total}")
            return drained
        topic, metadata = self._topic()
        fmt, like = VARIANTS.get(name, ("kafka" if name == "kafka" else "dynamic_kafka", name))
        options = self._options(like, topic, metadata)
        drained = self._drain(name, fmt, options, str(self.workdir / f"{topic}.checkpoint"))
        self._check(name, topic)
        return drained


def per_record(runs: list[Run], group: str) -> float:
    """The median over ``runs`` of one thread group's CPU, µs per record."""
    return statistics.median(r.cpu.get(group, 0.0) / r.rows * 1e6 for r in runs)


def split(rounds: Sequence[Mapping[str, Run]]) -> dict[str, dict[str, float]]:
    """``{side: {group: µs/record}}``: each group's median over the rounds, and ``total``."""
    table = {}
    for name in rounds[0]:
        runs = [r[name] for r in rounds]
        row = {group: per_record(runs, group) for group in GROUPS}
        row["total"] = statistics.median(r.us_per_record for r in runs)
        table[name] = row
    return table


def above(table: Mapping[str, Mapping[str, float]], side: str, base: str) -> dict[str, float]:
    """``side`` less ``base``, group by group (µs/record; JVM and Python summed too)."""
    diff = {g: table[side].get(g, 0.0) - table[base].get(g, 0.0) for g in [*GROUPS, "total"]}
    for kind in ("JVM", "Python"):
        diff[kind] = sum(v for g, v in diff.items() if g.startswith(f"{kind} "))
    return diff


def split_lines(table: Mapping[str, Mapping[str, float]]) -> list[str]:
    """The split as Markdown: each side by thread group, then each side above the floor and the
    floor above ``noop`` (reading the Parquet alone)."""
    head = ["side", *GROUPS, "total"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for name, row in table.items():
        lines.append(f"| {name} | " + " | ".join(f"{row.get(g, 0.0):.2f}" for g in head[1:]) + " |")
    kinds = ["JVM", "Python planner", "Python main", "Python rdk", "Python other", "total"]
    lines += ["", "| above | " + " | ".join(kinds) + " |", "|" + " --- |" * 7]
    bases = [("floor", "noop"), *[(s, "floor") for s in table if s not in ("noop", "floor")]]
    for side, base in bases:
        if side in table and base in table:
            d = above(table, side, base)
            cells = [d[k] for k in kinds]
            lines.append(f"| {side} / {base} | " + " | ".join(f"{v:+.2f}" for v in cells) + " |")
    return lines


def secure_listener(cluster: Any) -> Cluster:
    """The cluster's SASL_SSL listener with SCRAM-SHA-512 (:func:`benchmarks.run.listener`), the
    production estate's, its SCRAM user set first."""
    set_scram_password(cluster, SCRAM_USER, SCRAM_PASSWORD)
    return listener("w", cluster, "SCRAM-SHA-512")


@contextlib.contextmanager
def floor_writes(name: str, records: int, size: int, secure: bool = False) -> Iterator[FloorWrites]:
    """:class:`FloorWrites` in a warm session (stopped at the end) on one Apache Kafka cluster
    with the brokers' serving JVM options, the floor and the GC variants registered, over
    ``records`` rows of ``size``-byte values as Parquet (and 2 rows to prime each side with),
    in the bench directory's ``name``; ``secure``: every side writes through the SASL_SSL
    listener with SCRAM-SHA-512."""
    bench, jars = bench_setup(floor_module, gc_variants)
    workdir = bench / name
    workdir.mkdir(exist_ok=True)
    kafka = start_clusters(
        ["w"], broker="kafka", tls=secure, scram=secure, jvm_options=SERVING_JVM_OPTIONS
    )
    with kafka as started:
        listener = secure_listener(started["w"]) if secure else None
        conf = {"spark.ui.showConsoleProgress": "false", "spark.jars": ",".join(map(str, jars))}
        spark = local_spark_session(f"dynamic-kafka-{name.replace('_', '-')}", 2, 1, **conf)
        spark.sparkContext.setLogLevel("ERROR")
        for source in (WriteFloorSink, *gc_variants.FORMATS):
            spark.dataSource.register(source)
        rows, tiny = workdir / "rows.parquet", workdir / "tiny.parquet"
        prepare(spark, rows, records, size)
        prepare(spark, tiny, 2, size)
        try:
            yield FloorWrites(spark, started["w"], rows, records, workdir, listener, tiny=tiny)
        finally:
            spark.stop()


#: Warm-up rounds at most. Spark compiles a query's code as it runs it, and a side's compiled
#: code may keep getting faster over several queries, in steps (``to_avro`` into Spark's sink:
#: JIT CPU per record 2.3, 1.3, 0.9, 1.0, 0.6, 0.2, 0.1): rounds are warm-ups until, twice in a
#: row, every side's JIT CPU per record is under :data:`JIT_SETTLED` µs or fell by at most
#: :data:`JIT_FALL` from the round before (:func:`warm`, :func:`warm_up`).
MAX_WARM_UPS = 8
JIT_FALL = 0.2
JIT_SETTLED = 0.2


def jit_per_record(run: Run) -> float:
    """The JVM's JIT compiler threads' CPU over ``run``, µs per record."""
    return run.cpu.get("JVM JIT", 0.0) / max(run.rows, 1) * 1e6


def warm(before: Mapping[str, Run], now: Mapping[str, Run]) -> bool:
    """Whether every side's compiled code has settled: its JIT CPU per record in ``now`` (a
    warm-up round) is under :data:`JIT_SETTLED`, or fell by at most :data:`JIT_FALL` from
    ``before`` (the warm-up round before it)."""
    for name, run in now.items():
        jit = jit_per_record(run)
        if jit >= JIT_SETTLED and jit < (1 - JIT_FALL) * jit_per_record(before[name]):
            return False
    return True


def warm_up(warming: Callable[[int], Mapping[str, Run]], least: int = 3) -> int:
    """Run ``warming(i)`` (warm-up round ``i``, from 0; its sides' whole queries) until the JVM
    is :func:`warm` twice in a row, ``least`` times at least (a plateau of JIT may come before a
    step down: to_avro's), at most :data:`MAX_WARM_UPS`; how many ran."""
    before: Mapping[str, Run] | None = None
    settled = 0
    for index in range(MAX_WARM_UPS):
        now = warming(index)
        settled = settled + 1 if before is not None and warm(before, now) else 0
        if settled >= 2 and index + 1 >= least:
            return index + 1
        before = now
    return MAX_WARM_UPS


def run_rounds(
    writes: FloorWrites,
    sides: Sequence[str],
    pairs: report.Pairs,
    rounds: int,
    targets: dict[str, report.Target],
    after_warm_up: Callable[[], None] = lambda: None,
    least_warm_ups: int = 3,
) -> None:
    """Warm-up rounds of every side until the JVM is :func:`warm` twice in a row (at least
    ``least_warm_ups``, at most :data:`MAX_WARM_UPS`; ``after_warm_up()`` after the first), then
    ``rounds`` more, order reversed every other round, each printed; then the medians (whole
    query and ``addBatch``): the pairs' ratios against ``targets`` and the split by thread
    group."""

    def one(rnd: int, reverse: bool) -> tuple[dict[str, Run], dict[str, Run]]:
        load = load_average()
        drained = {name: writes.side(name) for name in (sides[::-1] if reverse else sides)}
        whole = {name: drained[name][0] for name in sides}
        window = {name: drained[name][1] for name in sides}
        report.print_round("whole query", rnd, load, whole, pairs)
        report.print_round("addBatch window", rnd, load, window, pairs)
        return whole, window

    def warming(index: int) -> Mapping[str, Run]:
        whole, _ = one(0, reverse=index % 2 == 0)
        if not index:
            after_warm_up()
        jit = ", ".join(f"{name} {jit_per_record(run):.2f}" for name, run in whole.items())
        print(f"warm-up {index + 1}: JIT µs per record {jit}", flush=True)
        return whole

    warm_ups = warm_up(warming, least_warm_ups)
    writes.broker.clear()
    wholes: list[dict[str, Run]] = []
    windows: list[dict[str, Run]] = []
    for rnd in range(1, rounds + 1):
        whole, window = one(rnd, reverse=rnd % 2 == 0)
        wholes.append(whole)
        windows.append(window)
    print(
        f"\n{len(windows)} rounds after {warm_ups} warm-ups, load average now {load_average():.1f}"
    )
    for what, results in (("whole query", wholes), ("addBatch window", windows)):
        print(f"\n{what}:")
        print("\n".join(report.pair_summary(results, pairs, targets)))
        print(f"\n{what}, µs per record by thread group (medians):")
        print("\n".join(split_lines(split(results))))
    print(broker_line(writes.broker))


def broker_line(broker: Mapping[str, list[float]]) -> str:
    """The broker's CPU per record of each side's whole queries (medians): on the same cores as
    Spark here, so it slows every Kafka side's rows/s, though no ratio above counts it."""
    cells = ", ".join(f"{name} {statistics.median(v):.2f}" for name, v in broker.items() if v)
    return f"\nbroker CPU, whole query, µs per record (medians; not in the CPU above): {cells}"


def main() -> None:
    parser = report.parser(__doc__, 1_000_000)
    parser.add_argument("--sides", nargs="+", default=SIDES, choices=[*SIDES, *VARIANTS])
    parser.add_argument(
        "--secure", action="store_true", help="write through SASL_SSL with SCRAM-SHA-512"
    )
    args = parser.parse_args()
    sides, pairs = args.sides, [p for p in PAIRS if set(p) <= set(args.sides)]
    with floor_writes("write_floor", args.records, args.size, args.secure) as writes:
        run_rounds(writes, sides, pairs, args.rounds, TARGETS)


if __name__ == "__main__":
    main()
