"""Hybrid read at scale (issue 13): an archive of 1M records, then 200k live Kafka records.

Two Apache Kafka clusters (``east``, ``west``), topic ``orders`` with 8 partitions each:

1. 1M records of 100 bytes (value ``cluster/partition/offset`` padded) are produced, then archived
   by the one-line archiving job (a ``dynamic_kafka`` batch read written as Parquet partitioned
   by cluster and topic, in ``--files`` tasks);
2. Kafka loses the oldest half of every partition (DeleteRecords, as retention would);
3. 150k live records are produced, and 50k more while the query reads;
4. the streaming query with ``archive.path`` runs into a ``noop`` sink (``Trigger.AvailableNow``)
   while the 50k are produced: the rows/s of its archive phase and of its Kafka phase are
   printed side by side (rows over the summed trigger time of each phase's micro-batches;
   target: archive >= 3x Kafka);
5. the same query runs again, on a checkpoint of its own, into Parquet (cluster, partition,
   offset and whether the value matches its coordinates), twice (``AvailableNow`` stops at the
   offsets of its start), and the output is checked to hold every record exactly once.

Run with ``make bench`` (after ``benchmarks/run.py``) or ``python benchmarks/hybrid.py``; needs
java and mvn (the Apache Kafka jars are fetched once). Options: ``--records``, ``--live``,
``--files``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

import yaml
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from pyspark_dynamic_kafka.testing import local_spark_session, start_clusters

TOPIC = "orders"
PARTITIONS = 8
CLUSTERS = ("east", "west")
SIZE = 100


def _records(cluster: str, first: dict[int, int], per_partition: int) -> Iterator[dict[str, Any]]:
    for partition in range(PARTITIONS):
        start = first.get(partition, 0)
        for offset in range(start, start + per_partition):
            value = f"{cluster}/{partition}/{offset}".ljust(SIZE, ".")
            yield {"key": None, "value": value, "partition": partition}
        first[partition] = start + per_partition


def _delete_oldest_half(cluster: Any, produced: dict[int, int]) -> None:
    admin = AdminClient(cluster.client_properties())
    request = [TopicPartition(TOPIC, p, n // 2) for p, n in produced.items()]
    for future in admin.delete_records(request, operation_timeout=60).values():
        future.result(timeout=120)


def _options(metadata: Path, **extra: str) -> dict[str, str]:
    return {
        "metadataService": "file",
        "metadataService.path": str(metadata),
        "streamIds": "orders",
        "startingOffsets": "earliest",
        **extra,
    }


def _phase_rates(progress: list[dict[str, Any]]) -> dict[str, tuple[int, float]]:
    """Per phase: rows read and summed trigger seconds of its micro-batches with rows (a
    micro-batch ending in the archive phase read files only; the switch and later ones Kafka
    only, since ``archive.maxFilesPerTrigger`` keeps the two apart)."""
    rates: dict[str, tuple[int, float]] = {}
    for p in progress:
        if not p["numInputRows"]:
            continue
        end = json.loads(p["sources"][0]["endOffset"])
        phase = "archive" if end.get("phase") == "archive" else "kafka"
        rows, seconds = rates.get(phase, (0, 0.0))
        seconds += p["durationMs"]["triggerExecution"] / 1e3
        rates[phase] = (rows + p["numInputRows"], seconds)
    return rates


def _run(out: Any, work: Path, sink: str = "parquet") -> list[dict[str, Any]]:
    """One ``Trigger.AvailableNow`` run into the Parquet output (or ``noop``, on a checkpoint
    of its own); its progress."""
    writer = out.writeStream.format(sink).trigger(availableNow=True)
    if sink == "parquet":
        writer = writer.option("path", str(work / "out"))
    query = writer.option("checkpointLocation", str(work / f"ckpt-{sink}")).start()
    query.awaitTermination()
    return list(query.recentProgress)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="archived records")
    parser.add_argument("--live", type=int, default=200_000, help="live records")
    parser.add_argument("--files", type=int, default=24, help="archive tasks (files)")
    parser.add_argument("--files-per-trigger", type=int, default=4)
    args = parser.parse_args()
    per_partition = args.records // (len(CLUSTERS) * PARTITIONS)
    live_per_partition = args.live // (len(CLUSTERS) * PARTITIONS)
    work = Path(tempfile.mkdtemp(prefix="hybrid-bench-"))
    with start_clusters(list(CLUSTERS), broker="kafka") as clusters:
        produced: dict[str, dict[int, int]] = {name: {} for name in CLUSTERS}
        for cluster in clusters.values():
            cluster.create_topic(TOPIC, partitions=PARTITIONS)
        began = time.monotonic()
        for name, cluster in clusters.items():
            cluster.produce_bulk(TOPIC, _records(name, produced[name], per_partition))
        print(f"produced {args.records:,} records in {time.monotonic() - began:.1f} s")
        metadata = work / "streams.yaml"
        metadata.write_text(
            yaml.safe_dump(
                {
                    "clusters": {
                        n: {"bootstrap.servers": c.bootstrap_servers} for n, c in clusters.items()
                    },
                    "streams": {"orders": [{"cluster": n, "topics": [TOPIC]} for n in CLUSTERS]},
                }
            )
        )
        spark = local_spark_session(
            "dynamic-kafka-hybrid-bench", **{"spark.ui.showConsoleProgress": "false"}
        )
        spark.sparkContext.setLogLevel("ERROR")
        archive = work / "archive"
        began = time.monotonic()
        (
            spark.read.format("dynamic_kafka")
            .options(**_options(metadata, minPartitions=str(args.files)))
            .load()
            .sortWithinPartitions("cluster", "topic", "partition", "offset")
            .write.partitionBy("cluster", "topic")
            .parquet(str(archive))
        )
        files = len(list(archive.rglob("*.parquet")))
        print(f"archived into {files} Parquet files in {time.monotonic() - began:.1f} s")
        for name, cluster in clusters.items():
            _delete_oldest_half(cluster, dict(produced[name]))
        print("Kafka lost the oldest half of every partition (DeleteRecords)")
        early = live_per_partition * 3 // 4
        for name, cluster in clusters.items():
            cluster.produce_bulk(TOPIC, _records(name, produced[name], early))

        def more() -> None:  # production continues while the query reads
            for name, cluster in clusters.items():
                cluster.produce_bulk(
                    TOPIC, _records(name, produced[name], live_per_partition - early)
                )

        options = _options(
            metadata,
            **{
                "archive.path": str(archive),
                "archive.maxFilesPerTrigger": str(args.files_per_trigger),
            },
        )
        df = spark.readStream.format("dynamic_kafka").options(**options).load()
        out = df.selectExpr(
            "cluster",
            "partition",
            "offset",
            "substring_index(cast(value as string), '.', 1) = "
            "concat(cluster, '/', partition, '/', offset) as ok",
        )
        producer = threading.Thread(target=more)
        producer.start()
        # Speed: the whole query into a noop sink (what the source gives, not a sink's cost),
        # while production continues.
        speed_progress = _run(out, work, "noop")
        producer.join()
        began = time.monotonic()
        progress = _run(out, work)
        # AvailableNow reads up to the offsets of its start; the rest by a run on the checkpoint.
        progress += _run(out, work)
        elapsed = time.monotonic() - began
        result = spark.read.parquet(str(work / "out"))
        result.createOrReplaceTempView("hybrid_out")
        row = spark.sql(
            "select count(*) n, count(distinct cluster, partition, offset) d, "
            "sum(case when ok then 0 else 1 end) bad from hybrid_out"
        ).collect()[0]
        expected = {(c, p): n for c in CLUSTERS for p, n in produced[c].items()}
        spans = {
            (r.cluster, r.partition): (r.lo, r.hi, r.n)
            for r in spark.sql(
                "select cluster, partition, min(offset) lo, max(offset) hi, count(*) n "
                "from hybrid_out group by cluster, partition"
            ).collect()
        }
        exact = (
            row.n == row.d == sum(expected.values())
            and row.bad == 0
            and all(spans.get(k) == (0, n - 1, n) for k, n in expected.items())
        )
        print(
            f"read {row.n:,} rows ({row.d:,} distinct, {row.bad} with a wrong value) of "
            f"{sum(expected.values()):,} produced in {elapsed:.1f} s: "
            f"{'EXACT (every record once)' if exact else 'NOT EXACT'}"
        )
        for sink, runs in (("parquet", progress), ("noop", speed_progress)):
            rates = _phase_rates(runs)
            speed = {phase: rows / seconds for phase, (rows, seconds) in rates.items()}
            for phase, (rows, seconds) in sorted(rates.items()):
                rate = speed[phase]
                print(
                    f"{sink:>7} sink, {phase:>7} phase: {rows:>9,} rows in {seconds:6.1f} s = "
                    f"{rate:>9,.0f} rows/s"
                )
        ratio = speed.get("archive", 0.0) / max(speed.get("kafka", 0.0), 1e-9)
        print(f"archive / kafka: {ratio:.1f}x (target >= 3x): {'OK' if ratio >= 3 else 'BELOW'}")
        spark.stop()


if __name__ == "__main__":
    main()
