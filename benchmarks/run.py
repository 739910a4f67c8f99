"""``dynamic_kafka`` side by side with what users would pick instead, in one run.

Same brokers, same data (default 2,000,000 records of 100 bytes) in three cases:

* ``kafka 1x8``: one Apache Kafka cluster, one topic of 8 partitions. Peers: Spark's own
  ``format("kafka")``, raw confluent-kafka, Flink's Dynamic Kafka Source, and the floor of
  Spark's Python Data Source API (``benchmarks/floor.py``).
* ``kafka 3x4``: three Apache Kafka clusters, one topic of 4 partitions on each (the records
  spread evenly). Peers: a union of one ``format("kafka")`` per cluster, raw confluent-kafka, Flink.
* ``tansu 1x8``: the single-cluster case on the embedded Tansu broker. Peers: ``format("kafka")``
  and raw confluent-kafka.
* ``kafka-plain-1x8``, ``kafka-scram512-1x8``, ``kafka-plain-3x4``, ``kafka-scram512-3x4``: the
  two Apache Kafka cases read through the clusters' SASL_SSL listener (TLS, and SASL PLAIN or
  SCRAM-SHA-512), the same listener and credentials for ``dynamic_kafka`` (metadata) and
  ``format("kafka")`` (``kafka.*`` options, a PEM trust store). Same data as the PLAINTEXT cases
  (one topic per cluster layout, read through either listener); no raw or Flink side.

Every Spark side is a new query on one warm ``local[2]`` session (see :mod:`.spark_sides` for the
window and the CPU); raw is two processes (:mod:`.raw`); Flink is one long-lived JVM with a
mini-cluster of parallelism 2 per job (:mod:`.peers.flink`). A warm-up round runs every side
once (JIT, Python workers), then ``--rounds`` rounds run the sides interleaved, order reversed
every other round; the ratios ours / peer are printed per round with their median. Brokers are
processes of their own, outside every measured tree; the Apache Kafka brokers run with the
JVM's defaults and a 1 GiB heap (``SERVING_JVM_OPTIONS``), not the test suite's C1-only JVM,
under which a broker's TLS, not the reader, sets every reader's pace. Results also go to
``$BENCH_DIR/results.json``.

Run with ``make bench``; options: ``--records N --size B --rounds R --cases ...``.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TypeVar

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

import pyspark
from benchmarks import floor as floor_module
from benchmarks import report
from benchmarks.measure import CpuSampler, load_average, spark_jvm
from benchmarks.peers.flink import FlinkPeer
from benchmarks.peers.maven import spark_kafka_version
from benchmarks.raw import Share, raw
from benchmarks.spark_sides import (
    Cluster,
    Run,
    bench_setup,
    dynamic_kafka,
    floor,
    kafka,
    measure,
    union_of_kafka,
    write_metadata,
)

from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.source.driver.task_packing import pack_tasks
from pyspark_dynamic_kafka.source.executor.task import OffsetRange, ReadSettings
from pyspark_dynamic_kafka.testing import local_spark_session, set_scram_password, start_clusters
from pyspark_dynamic_kafka.testing.kafka_config import SERVING_JVM_OPTIONS
from pyspark_dynamic_kafka.testing.kafka_jars import find_java
from pyspark_dynamic_kafka.testing.tls import (
    plain_client_properties,
    sasl_ssl_scram_client_properties,
)

#: case -> (broker kind, clusters, partitions, the SASL_SSL listener's mechanism or None)
CASES = {
    "kafka-1x8": ("kafka", 1, 8, None),
    "kafka-3x4": ("kafka", 3, 4, None),
    "tansu-1x8": ("tansu", 1, 8, None),
    "kafka-plain-1x8": ("kafka", 1, 8, "PLAIN"),
    "kafka-scram512-1x8": ("kafka", 1, 8, "SCRAM-SHA-512"),
    "kafka-plain-3x4": ("kafka", 3, 4, "PLAIN"),
    "kafka-scram512-3x4": ("kafka", 3, 4, "SCRAM-SHA-512"),
}
#: The cases ``make bench`` runs unless ``--cases`` names others.
DEFAULT_CASES = ["kafka-1x8", "kafka-3x4", "tansu-1x8", "kafka-scram512-1x8", "kafka-plain-3x4"]
#: The SCRAM user every benchmark's SASL_SSL side connects as (set on each cluster first).
SCRAM_USER, SCRAM_PASSWORD = "bench", "bench-scram-password"
_T = TypeVar("_T")


def listener(name: str, cluster: Any, mechanism: str | None) -> Cluster:
    """Cluster ``name`` as the sides connect to it: its SASL_SSL listener with ``mechanism``
    (``PLAIN``, or SCRAM as :data:`SCRAM_USER`), or PLAINTEXT (``None``)."""
    if mechanism is None:
        return Cluster(name, cluster.bootstrap_servers)
    if mechanism == "PLAIN":
        properties = plain_client_properties(cluster)
    else:
        properties = sasl_ssl_scram_client_properties(
            cluster, SCRAM_USER, SCRAM_PASSWORD, mechanism
        )
    bootstrap = properties.pop("bootstrap.servers")
    return Cluster(name, bootstrap, tuple(sorted(properties.items())))


def _records(count: int, size: int, first: int = 0) -> Iterator[tuple[None, bytes]]:
    payload = bytes(range(256)) * (size // 256 + 1)
    for i in range(first, first + count):
        yield None, (i.to_bytes(8, "big") + payload)[:size]


def _tasks(shares: list[Share]) -> int:
    """How many tasks ``dynamic_kafka`` plans for the data (the floor uses as many)."""
    ranges = [
        OffsetRange(f"c{i}", topic, p, 0, end)
        for i, (_, topic, ends) in enumerate(shares)
        for p, end in ends.items()
    ]
    props = {f"c{i}": FrozenProperties({}) for i in range(len(shares))}
    return len(pack_tasks(ranges, props, ReadSettings(0, 0, frozenset())))


def _flink_run(flink: FlinkPeer, total: int, topic: str, clusters: list[Cluster]) -> Run:
    with CpuSampler({"flink": flink.pid}) as sampler:
        rows, start, end = flink.run(total, topic, {c.name: c.bootstrap for c in clusters})
    if rows != total:
        raise SystemExit(f"Flink read {rows} rows, expected {total}")
    return Run(rows, end - start, sampler.between("flink", start, end))


def load(started: dict[str, Any], case: str, records: int, size: int) -> dict[str, Any]:
    """Create the case's topic on its clusters and load the records (once per layout: the
    SASL_SSL cases read the PLAINTEXT cases' topics); the case's data."""
    broker, count, partitions, mechanism = CASES[case]
    names = list(started[broker])[:count]
    topic = f"bench{count}x{partitions}"
    per_cluster = math.ceil(records / count)
    shares: list[Share] = []
    t0 = time.perf_counter()
    for i, name in enumerate(names):
        cluster = started[broker][name]
        if topic not in cluster.topics():
            cluster.create_topic(topic, partitions=partitions)
            cluster.produce_bulk(topic, _records(per_cluster, size, i * per_cluster))
        ends = {p: hw for p, (_, hw) in cluster.watermarks(topic).items()}
        shares.append((cluster.bootstrap_servers, topic, ends))
    total = sum(sum(ends.values()) for _, _, ends in shares)
    print(
        f"{case}: loaded {total:,} records of {size} B into {count} cluster(s) x {partitions} "
        f"partitions in {time.perf_counter() - t0:.1f} s",
        flush=True,
    )
    clusters = [listener(n, started[broker][n], mechanism) for n in names]
    secure = mechanism is not None
    return {
        "clusters": clusters,
        "topic": topic,
        "shares": shares,
        "total": total,
        "secure": secure,
    }


def _sides(
    case: str,
    data: dict[str, Any],
    spark: Any,
    flink: FlinkPeer | None,
    workdir: Path,
    native: bool,
) -> dict[str, Callable[[], Run]]:
    clusters, topic, total = data["clusters"], data["topic"], data["total"]
    jvm = spark_jvm()
    metadata = workdir / f"{case}.yaml"
    write_metadata(metadata, clusters, topic)
    sides: dict[str, Callable[[], Run]] = {
        "dynamic_kafka": lambda: measure(jvm, lambda: dynamic_kafka(spark, metadata), total),
    }
    if len(clusters) == 1:
        sides["kafka"] = lambda: measure(jvm, lambda: kafka(spark, clusters[0], topic), total)
    else:
        sides["union"] = lambda: measure(jvm, lambda: union_of_kafka(spark, clusters, topic), total)
    if not data["secure"]:
        sides["raw"] = lambda: raw(data["shares"])
    if flink is not None and case.startswith("kafka") and not data["secure"]:
        sides["flink"] = lambda: _flink_run(flink, total, topic, clusters)
    if case == "kafka-1x8":
        tasks = _tasks(data["shares"])
        sides["floor"] = lambda: measure(jvm, lambda: floor(spark, total, tasks), total)
    if native:  # the compiled core (pyspark-dynamic-kafka-core): the same source, reader=native
        sides["native"] = lambda: measure(
            jvm, lambda: dynamic_kafka(spark, metadata, "native"), total
        )
    return sides


def _attempt(name: str, side: Callable[[], _T], attempts: int = 4) -> _T:
    """Run a side; again, as a fresh query, when Spark gave up waiting for a Python worker to
    start (its 10 s wait is fixed in Spark; a heavily loaded machine misses it now and then)."""
    for _ in range(attempts - 1):
        try:
            return side()
        except (Exception, SystemExit) as exc:
            if "failed to connect back" not in str(exc):
                raise
        print(f"  {name}: a Python worker did not start within Spark's 10 s; running it again")
    return side()


def main() -> None:
    parser = report.parser(__doc__, 2_000_000)
    parser.add_argument("--cases", nargs="+", default=DEFAULT_CASES, choices=list(CASES))
    parser.add_argument("--no-flink", action="store_true", help="leave Flink out")
    parser.add_argument(
        "--no-native", action="store_true", help="leave the compiled core's reader out"
    )
    args = parser.parse_args()
    workdir, jars = bench_setup(floor_module)
    native = not args.no_native
    if native and core() is None:
        raise SystemExit("the compiled core is not installed (make setup), or pass --no-native")

    kinds = {CASES[c][0] for c in args.cases}
    counts = {k: max(CASES[c][1] for c in args.cases if CASES[c][0] == k) for k in kinds}
    with ExitStack() as stack:
        # The Apache Kafka clusters have TLS and SASL listeners when a case reads through them.
        secured = any(CASES[c][3] for c in args.cases)
        options = {
            "kafka": {"tls": secured, "scram": secured, "jvm_options": SERVING_JVM_OPTIONS},
            "tansu": {},
        }
        started = {
            kind: stack.enter_context(
                start_clusters([f"{kind}{i}" for i in range(n)], broker=kind, **options[kind])
            )
            for kind, n in counts.items()
        }
        for cluster in started.get("kafka", {}).values() if secured else ():
            set_scram_password(cluster, SCRAM_USER, SCRAM_PASSWORD)
        data = {case: load(started, case, args.records, args.size) for case in args.cases}
        flink = None
        if not args.no_flink and "kafka" in kinds:
            flink = stack.enter_context(FlinkPeer(find_java(), workdir / "flink.log"))
        spark = local_spark_session(
            "dynamic-kafka-bench",
            **{"spark.ui.showConsoleProgress": "false", "spark.jars": ",".join(map(str, jars))},
        )
        spark.sparkContext.setLogLevel("ERROR")
        spark.dataSource.register(floor_module.FloorSource)
        sides = {
            case: _sides(case, data[case], spark, flink, workdir, native) for case in args.cases
        }
        results: dict[str, list[dict[str, Run]]] = {case: [] for case in args.cases}
        for rnd in range(args.rounds + 1):
            for case in args.cases if rnd % 2 else reversed(args.cases):
                names = list(sides[case]) if rnd % 2 else list(reversed(sides[case]))
                if not rnd and "raw" in names:  # round 0 warms the JVMs and Python workers up
                    names.remove("raw")
                load_now = load_average()
                runs = {name: _attempt(name, sides[case][name]) for name in names}
                if rnd:
                    results[case].append(runs)
                print(report.round_line(case, rnd, runs, load_now), flush=True)
        spark.stop()

    print(
        f"\nmachine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, PySpark {pyspark.__version__}, spark-sql-kafka "
        f"{spark_kafka_version()}, load average now {load_average():.1f}"
    )
    for case in args.cases:
        print(report.summary(case, results[case]))
    out = workdir / "results.json"
    out.write_text(json.dumps(report.as_json(results), indent=1))
    print(f"results: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
