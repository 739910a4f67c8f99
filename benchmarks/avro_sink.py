"""Avro values written by the sink (``valueFormat=avro``) beside what a Spark user writes today:
Spark's ``format("kafka")`` sink fed ``concat(<Confluent's 5-byte prefix>, to_avro(value, schema))``
(spark-avro, the version ``peers/spark-avro/pom.xml`` pins).

Data: ``--records`` rows (default 1,000,000) of :mod:`benchmarks.avro_records`'s 10-field schema
(long, string, int, double, boolean, bytes, timestamp-millis, a nullable string, string, long) as
a struct column ``value``, built in Spark and kept as Parquet in 2 files (2 tasks on
``local[2]``). One Apache Kafka cluster (``SERVING_JVM_OPTIONS``) and a
:class:`LocalSchemaRegistry` (in this process, outside every measured tree) that the cluster's
metadata entry names. Each side writes a fresh 8-partition topic whose subject ``<topic>-value``
holds the schema; the peer's prefix carries that id, ours looks it up as a user's query does.

Sides, each a new ``writeStream`` with ``trigger(availableNow=True)`` in one warm session, priced
whole (``start()`` to the end of ``awaitTermination()``) and over ``addBatch``, CPU by thread
(:mod:`benchmarks.write_floor`'s machinery, each Python side primed first):

* ``noop``, ``floor``: the same rows into Spark's ``noop`` sink and into the write floor (what
  any Python sink pays to receive them: here a struct column, dearer to hand over than bytes);
* ``kafka``: Spark's sink with ``to_avro`` and the prefix (at-least-once);
* ``native``, ``exactly_once_native``: ours, ``writer=native`` (the core encodes and produces),
  atLeastOnce and exactlyOnce;
* ``dynamic_kafka``: ours, ``writer=python`` (fastavro row by row), atLeastOnce.

Every write is checked: the topic's end offsets, and in the first warm-up round the records
themselves: every side's values as a multiset must equal the peer's, byte for byte (Avro's binary
encoding of a value is unique). Warm-up rounds until the JVM's compiled code has settled
(:func:`benchmarks.write_floor.warm`, and at least :data:`LEAST_WARM_UPS`: Spark's ``to_avro`` path
takes six or seven), then ``--rounds`` interleaved rounds, order reversed every other round; ratios
per round and medians, with issue 44's Avro target (rows/s >= 2x, CPU/record <= 0.6x Spark's sink),
then the split by thread group.
``python -m benchmarks.avro_sink --rounds 3 [--records N] [--sides ...] [--secure]``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from benchmarks import floor as floor_module
from benchmarks import report
from benchmarks.avro_records import SCHEMA
from benchmarks.floor import WriteFloorSink
from benchmarks.peers.maven import spark_avro_jars, spark_avro_version
from benchmarks.sink import committed_messages
from benchmarks.spark_sides import Cluster, bench_setup, write_metadata
from benchmarks.write_floor import FloorWrites, run_rounds, secure_listener
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import to_avro

from pyspark_dynamic_kafka.testing import local_spark_session, start_clusters
from pyspark_dynamic_kafka.testing.kafka_config import SERVING_JVM_OPTIONS
from pyspark_dynamic_kafka.testing.schema_registry import LocalSchemaRegistry

#: Warm-up rounds at least: Spark's ``to_avro`` path into its sink got faster for 6 to 7 queries
#: in each of 3 runs (2026-11-30), with a plateau of JIT before its last steps down.
LEAST_WARM_UPS = 7
SIDES = ["noop", "floor", "kafka", "native", "exactly_once_native", "dynamic_kafka"]
PAIRS: report.Pairs = [
    ("floor", "kafka"),
    *[(ours, peer) for ours in SIDES[3:] for peer in ("kafka", "floor")],
]
#: Issue 44's Avro target against Spark's sink fed by ``to_avro`` (rows/s at least, CPU at most).
TARGETS: dict[str, report.Target] = {"native/kafka": (2.0, 0.6)}
SCHEMA_JSON = json.dumps(SCHEMA)
#: The rows as :func:`benchmarks.avro_records.record` gives them, as a Spark struct.
VALUE = """named_struct(
    'id', id,
    'customer', format_string('customer-%05d', id % 50000),
    'quantity', CAST(id % 1000 AS INT),
    'price', (id % 100000) / 100D,
    'paid', id % 2 = 0,
    'token', unhex(lpad(hex(id), 16, '0')),
    'created', timestamp_millis(1700000000000 + id * 37),
    'note', IF(id % 3 = 0, NULL, concat('note ', id % 97)),
    'region', element_at(array('eu-west', 'eu-north', 'us-east', 'us-west', 'ap-south',
                               'ap-east', 'sa-east', 'af-x'), CAST(id % 8 + 1 AS INT)),
    'sequence', id * 7919 % 1099511627776) AS value"""


def prepare(spark: Any, path: Path, records: int) -> None:
    """``records`` rows of the struct column ``value`` as Parquet in 2 files."""
    spark.range(records, numPartitions=2).selectExpr(VALUE).write.mode("overwrite").parquet(
        str(path)
    )


def digest(cluster: Any, topic: str) -> Counter[bytes]:
    """Every committed value of ``topic``, as a multiset of SHA-1 digests."""
    messages = committed_messages(cluster, topic)
    return Counter(hashlib.sha1(m.value() or b"").digest() for m in messages)


class AvroWrites(FloorWrites):
    """:class:`benchmarks.write_floor.FloorWrites` on Avro rows: topics with a registered subject,
    ours with ``valueFormat=avro``, the peer fed ``to_avro`` behind Confluent's prefix."""

    def __init__(self, *args: Any, registry: LocalSchemaRegistry, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.registry = registry
        #: The schema id of each topic made (its ``<topic>-value`` subject).
        self.ids: dict[str, int] = {}
        #: While set, each side's records are read back (the warm-up round): side -> multiset.
        self.kept: dict[str, Counter[bytes]] | None = None

    def _topic(self) -> tuple[str, Path]:
        topic, metadata = super()._topic()
        self.ids[topic] = self.registry.register(f"{topic}-value", SCHEMA_JSON)
        registry = ("schema.registry.url", self.registry.url)
        entry = Cluster("w", self.listener.bootstrap, (*self.listener.security, registry))
        write_metadata(metadata, [entry], topic)
        return topic, metadata

    def _options(self, sink: str, topic: str, metadata: Path) -> dict[str, str]:
        options = super()._options(sink, topic, metadata)
        if sink != "kafka":
            options |= {"valueFormat": "avro", "valueSchema": SCHEMA_JSON}
        return options

    def _frame(self, rows: Path, fmt: str, options: dict[str, str]) -> Any:
        """Spark's sink is fed ``to_avro`` behind Confluent's prefix; the others the rows."""
        frame = super()._frame(rows, fmt, options)
        if fmt != "kafka":
            return frame
        prefix = b"\x00" + self.ids[options["topic"]].to_bytes(4, "big")
        return frame.select(
            F.concat(F.lit(prefix), to_avro(F.col("value"), SCHEMA_JSON)).alias("value")
        )

    def _check(self, name: str, topic: str) -> None:
        if self.kept is not None:
            self.kept[name] = digest(self.cluster, topic)
        super()._check(name, topic)


def same_records(kept: dict[str, Counter[bytes]], total: int) -> None:
    """Every side wrote the peer's values, byte for byte (the multisets are equal)."""
    peer = kept["kafka"]
    if sum(peer.values()) != total:
        raise SystemExit(f"Spark's sink wrote {sum(peer.values())} values, expected {total}")
    for name, seen in kept.items():
        if seen != peer:
            differ = sum((seen - peer).values()) + sum((peer - seen).values())
            raise SystemExit(f"{name}'s values differ from Spark's to_avro in {differ} records")
    print(f"values byte for byte equal to to_avro's: {', '.join(kept)}", flush=True)


@contextlib.contextmanager
def avro_writes(records: int, secure: bool) -> Iterator[AvroWrites]:
    """:class:`AvroWrites` in a warm session with spark-avro, over ``records`` rows (``secure``:
    through the SASL_SSL listener with SCRAM-SHA-512)."""
    bench, jars = bench_setup(floor_module)
    workdir = bench / "avro_sink"
    workdir.mkdir(exist_ok=True)
    with (
        start_clusters(
            ["w"], broker="kafka", tls=secure, scram=secure, jvm_options=SERVING_JVM_OPTIONS
        ) as started,
        LocalSchemaRegistry(first_id=100) as registry,
    ):
        listener = secure_listener(started["w"]) if secure else None
        jars = [*jars, *spark_avro_jars()]
        conf = {"spark.ui.showConsoleProgress": "false", "spark.jars": ",".join(map(str, jars))}
        spark = local_spark_session("dynamic-kafka-avro-sink", 2, 1, **conf)
        spark.sparkContext.setLogLevel("ERROR")
        spark.dataSource.register(WriteFloorSink)
        rows, tiny = workdir / "rows.parquet", workdir / "tiny.parquet"
        prepare(spark, rows, records)
        prepare(spark, tiny, 2)
        try:
            yield AvroWrites(
                spark, started["w"], rows, records, workdir, listener, tiny=tiny, registry=registry
            )
        finally:
            spark.stop()


def main() -> None:
    parser = report.parser(__doc__, 1_000_000)
    parser.add_argument("--sides", nargs="+", default=SIDES, choices=SIDES)
    parser.add_argument("--secure", action="store_true", help="SASL_SSL with SCRAM-SHA-512")
    args = parser.parse_args()
    sides, pairs = args.sides, [p for p in PAIRS if set(p) <= set(args.sides)]
    with avro_writes(args.records, args.secure) as writes:
        writes.kept = {} if "kafka" in sides else None

        def checked() -> None:
            if writes.kept is not None:
                same_records(writes.kept, args.records)
            writes.kept = None

        run_rounds(writes, sides, pairs, args.rounds, TARGETS, checked, LEAST_WARM_UPS)
    print(f"spark-avro {spark_avro_version()}")


if __name__ == "__main__":
    main()
