"""Avro values read by ``dynamic_kafka`` (``valueFormat=avro``) beside what a Spark user writes
today: ``format("kafka")`` + ``from_avro(substring(value, 6), schema)`` (spark-avro 4.2.0).

Data: 2,000,000 records (``--records``) of a 10-field schema (long, string, int, double, boolean,
bytes, timestamp-millis, a nullable string, string, long; 68 bytes a record on the wire) in one
topic of 8 partitions on one Apache Kafka cluster (``SERVING_JVM_OPTIONS``), in Confluent's wire
format (a zero byte, the schema's 4-byte id, the Avro body): pre-encoded with fastavro, produced
as bytes with confluent-kafka. The id is issued by a :class:`LocalSchemaRegistry` that the
cluster's metadata entry names (``schema.registry.url``); ours looks the writer schema up there
once (the registry runs in this process, outside every measured tree), the peer is handed it.

Sides, each a new query in one warm ``local[2]`` session, both consuming every field:

* ``avro`` / ``from_avro``: an ``AvailableNow`` drain of ``select("value.*")`` into the noop sink,
  timed as a user times it (``start()`` to the end of ``awaitTermination()``); ``avro window`` /
  ``from_avro window``: the same queries' read window (the ``addBatch`` span of the batches that
  read rows, as :mod:`.spark_sides` measures it);
* ``avro batch`` / ``from_avro batch``: a batch read, ``load()`` to the collected aggregate
  ``count(*), bit_xor(xxhash64(every value field))``; both results must be equal (checked before
  the rounds and in every round: a side that decoded differently fails the run);
* ``bytes`` / ``kafka``: the same drains of the undecoded
  ``value`` column, so that each side's decoding (``avro`` less ``bytes``) is told apart from
  its read.

CPU is the Spark process tree's (the JVM and every Python process it started) over each span. A
warm-up round runs every side once (``--sides`` picks some), then ``--rounds`` rounds run them
interleaved, order reversed every other round; ratios ours / peer per round and their medians
are printed, with the issue's targets (rows/s >= 2x, CPU per record <= 0.8x). Run:
``python -m benchmarks.avro --rounds 3 [--records N]``.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

import pyspark
from benchmarks import report
from benchmarks.avro_records import FIELDS, SCHEMA, framed
from benchmarks.measure import CpuSampler, load_average, spark_jvm
from benchmarks.peers.maven import spark_avro_jars, spark_avro_version
from benchmarks.run import _attempt
from benchmarks.spark_sides import Cluster, Run, _window, bench_setup, write_metadata
from benchmarks.whole_query import available_now
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro

from pyspark_dynamic_kafka.testing import local_spark_session, start_clusters
from pyspark_dynamic_kafka.testing.kafka_config import SERVING_JVM_OPTIONS
from pyspark_dynamic_kafka.testing.schema_registry import LocalSchemaRegistry

TOPIC = "avro1x8"
PARTITIONS = 8
#: ``(ours, peer)`` pairs, in the order they are printed.
PAIRS: report.Pairs = [
    ("avro", "from_avro"),
    ("avro window", "from_avro window"),
    ("avro batch", "from_avro batch"),
    ("bytes", "kafka"),
    ("bytes window", "kafka window"),
]
#: The issue's acceptance: rows/s at least 2x, CPU per record at most 0.8x ``from_avro``'s.
#: The runs, in their order in odd rounds (reversed in even ones); ``OURS``: ``dynamic_kafka``'s.
SIDES = ["avro", "from_avro", "avro batch", "from_avro batch", "bytes", "kafka"]
OURS = ["avro", "avro batch", "bytes"]
#: (label, the side that decodes, the same side's undecoded drain).
DECODING = [("dynamic_kafka", "avro", "bytes"), ("from_avro", "from_avro", "kafka")]
TARGETS: dict[str, report.Target] = {
    f"{ours}/{peer}": (2.0, 0.8) for ours, peer in PAIRS if ours.startswith("avro")
}


def load(cluster: Any, registry: LocalSchemaRegistry, records: int) -> int:
    """Register the schema, create the topic and produce the records; how many there are."""
    schema_id = registry.register(f"{TOPIC}-value", json.dumps(SCHEMA))
    t0 = time.perf_counter()
    cluster.create_topic(TOPIC, partitions=PARTITIONS)
    counts = cluster.produce_bulk(TOPIC, framed(records, schema_id))
    total = sum(counts.values())
    print(
        f"loaded {total:,} Avro records (schema id {schema_id}) into {PARTITIONS} partitions in "
        f"{time.perf_counter() - t0:.1f} s",
        flush=True,
    )
    return total


class Frames:
    """The frames each side reads: ours through the metadata file, the peer through
    ``format("kafka")``; ``avro``: decoded to the schema's columns, else the raw ``value``."""

    def __init__(self, spark: Any, metadata: Path, cluster: Cluster, reader: str | None) -> None:
        self.spark, self.cluster = spark, cluster
        self.options = {
            "metadataService": "file",
            "metadataService.path": str(metadata),
            "streamIds": "bench",
            "startingOffsets": "earliest",
        }
        if reader is not None:
            self.options["reader"] = reader

    def ours(self, stream: bool, avro: bool) -> Any:
        options = dict(self.options)
        if avro:
            options |= {"valueFormat": "avro", "valueSchema": json.dumps(SCHEMA)}
        source = self.spark.readStream if stream else self.spark.read
        frame = source.format("dynamic_kafka").options(**options).load()
        return frame.select("value.*") if avro else frame.select("value")

    def peer(self, stream: bool, avro: bool) -> Any:
        source = self.spark.readStream if stream else self.spark.read
        frame = (
            source.format("kafka")
            .option("kafka.bootstrap.servers", self.cluster.bootstrap)
            .option("subscribe", TOPIC)
            .option("startingOffsets", "earliest")
            .load()
        )
        if not avro:
            return frame.select("value")
        value = from_avro(F.expr("substring(value, 6)"), json.dumps(SCHEMA))
        return frame.select(value.alias("value")).select("value.*")


def drain(
    jvm: int, frame: Callable[[], Any], total: int, timeout: float = 900.0
) -> tuple[Run, Run]:
    """An ``AvailableNow`` query of ``frame()`` into the noop sink: the whole query and its read
    window, each with the Spark tree's CPU over it."""
    sampler, started, done, progress = available_now(jvm, frame, timeout)
    rows, start, end = _window(progress)
    if rows != total:
        raise SystemExit(f"query read {rows} rows, expected {total}")
    whole = Run(rows, done - started, sampler.between("spark", started, done))
    return whole, Run(rows, end - start, sampler.between("spark", start, end))


def aggregate(frame: Any) -> tuple[int, int]:
    """``count(*)`` and ``bit_xor`` of ``xxhash64`` of every value field, over every row."""
    row = frame.select(F.count("*"), F.bit_xor(F.xxhash64(*FIELDS))).collect()[0]
    return int(row[0]), int(row[1])


def batch(jvm: int, frame: Callable[[], Any], expected: tuple[int, int]) -> Run:
    """A batch read, ``load()`` to the collected :func:`aggregate`, which must be ``expected``."""
    with CpuSampler({"spark": jvm}) as sampler:
        started = time.time()
        got = aggregate(frame())
        done = time.time()
    if got != expected:
        raise SystemExit(f"the batch read gave count, bit_xor(xxhash64) {got}, not {expected}")
    return Run(got[0], done - started, sampler.between("spark", started, done))


def sides(
    jvm: int, frames: Frames, total: int, expected: tuple[int, int]
) -> dict[str, Callable[[], dict[str, Run]]]:
    """``{name: run}``: each run gives one or two measured sides (a drain: query and window)."""

    def drained(name: str, frame: Callable[[], Any]) -> Callable[[], dict[str, Run]]:
        def run() -> dict[str, Run]:
            whole, window = _attempt(name, lambda: drain(jvm, frame, total))
            return {name: whole, f"{name} window": window}

        return run

    def batched(name: str, frame: Callable[[], Any]) -> Callable[[], dict[str, Run]]:
        return lambda: {name: _attempt(name, lambda: batch(jvm, frame, expected))}

    return {
        "avro": drained("avro", lambda: frames.ours(True, True)),
        "from_avro": drained("from_avro", lambda: frames.peer(True, True)),
        "avro batch": batched("avro batch", lambda: frames.ours(False, True)),
        "from_avro batch": batched("from_avro batch", lambda: frames.peer(False, True)),
        "bytes": drained("bytes", lambda: frames.ours(True, False)),
        "kafka": drained("kafka", lambda: frames.peer(True, False)),
    }


def check_equal(frames: Frames, ours: bool) -> tuple[int, int]:
    """Both sides' aggregate over every field, once before the rounds; they must be equal
    (``ours`` False: the peer's alone, when only the peer's sides run)."""
    peer = aggregate(frames.peer(False, True))
    if ours and (got := aggregate(frames.ours(False, True))) != peer:
        raise SystemExit(f"count, bit_xor(xxhash64): dynamic_kafka {got}, from_avro {peer}")
    who = "both sides" if ours else "from_avro"
    print(f"{who}: {peer[0]:,} rows, bit_xor(xxhash64(every field)) {peer[1]}", flush=True)
    return peer


def decode_lines(rounds: list[dict[str, Run]]) -> list[str]:
    """Each side's decoding, from the medians: the avro drain's read window less the bytes one's."""
    lines = []
    for label, avro, raw in DECODING:
        if avro not in rounds[0] or raw not in rounds[0]:
            continue
        cost = {}
        for kind in ("seconds", "us"):
            values = []
            for suffix in (" window", ""):
                a = [_value(r[avro + suffix], kind) for r in rounds]
                b = [_value(r[raw + suffix], kind) for r in rounds]
                values.append(statistics.median(a) - statistics.median(b))
            cost[kind] = values
        lines.append(
            f"  {label:14} decoding: read window {cost['seconds'][0]:+.2f} s "
            f"{cost['us'][0]:+.2f} us/record; whole query {cost['seconds'][1]:+.2f} s "
            f"{cost['us'][1]:+.2f} us/record (median avro less median bytes)"
        )
    return lines


def _value(run: Run, kind: str) -> float:
    return run.seconds if kind == "seconds" else run.us_per_record


def main() -> None:
    parser = report.parser(__doc__, 2_000_000)
    parser.add_argument("--reader", choices=["python", "native"], help="dynamic_kafka's reader")
    parser.add_argument(
        "--sides", nargs="+", default=SIDES, choices=SIDES, help="the sides to run (default: all)"
    )
    args = parser.parse_args()
    workdir, jars = bench_setup()
    jars += spark_avro_jars()
    with (
        start_clusters(["kafka0"], broker="kafka", jvm_options=SERVING_JVM_OPTIONS) as started,
        LocalSchemaRegistry(first_id=100) as registry,
    ):
        cluster = started["kafka0"]
        total = load(cluster, registry, args.records)
        plain = Cluster("kafka0", cluster.bootstrap_servers)
        metadata = workdir / "avro.yaml"
        entry = Cluster(plain.name, plain.bootstrap, (("schema.registry.url", registry.url),))
        write_metadata(metadata, [entry], TOPIC)
        spark = local_spark_session(
            "dynamic-kafka-avro-bench",
            **{"spark.ui.showConsoleProgress": "false", "spark.jars": ",".join(map(str, jars))},
        )
        spark.sparkContext.setLogLevel("ERROR")
        frames = Frames(spark, metadata, plain, args.reader)
        expected = check_equal(frames, any(s in OURS for s in args.sides))
        made = sides(spark_jvm(), frames, total, expected)
        runs = {name: made[name] for name in SIDES if name in args.sides}
        results: list[dict[str, Run]] = []
        for rnd in range(args.rounds + 1):
            load_now = load_average()
            measured: dict[str, Run] = {}
            for name in list(runs) if rnd % 2 else list(reversed(runs)):
                measured |= runs[name]()
            ordered = {n: measured[n] for pair in PAIRS for n in pair if n in measured}
            if rnd:
                results.append(ordered)
            report.print_round("avro-1x8", rnd, load_now, ordered, PAIRS)
        spark.stop()
    print(
        f"\nmachine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, PySpark {pyspark.__version__}, spark-avro "
        f"{spark_avro_version()}, load average now {load_average():.1f}"
    )
    print(f"avro-1x8, {len(results)} rounds, {total:,} records:")
    ran = [pair for pair in PAIRS if all(n in results[0] for n in pair)] if results else []
    print("\n".join(report.pair_summary(results, ran, TARGETS) if results else []))
    print("\n".join(decode_lines(results)))
    out = workdir / "avro-results.json"
    out.write_text(json.dumps(report.as_json({"avro-1x8": results}), indent=1))
    print(f"results: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
