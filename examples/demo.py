"""The main job, end to end on two local clusters: a live migration of stream ``orders``.

1. Start two local Apache Kafka clusters, ``east`` and ``west``, write a metadata file
   mapping stream ``orders`` to ``east`` and serve it with the reference metadata server
   (``dynamic-kafka serve``, writes protected by a token).
2. The producer job: a Spark ``writeStream`` of numbered JSON events (``demo_ids``, a source of
   200 ids a micro-batch that has no more once every id is out, so the writer is idle when the
   demo stops it: no micro-batch is cancelled) with format ``dynamic_kafka``, stream
   ``orders``: the sink writes each micro-batch to the cluster marked ``write: true``
   (deliveryGuarantee exactlyOnce on Apache Kafka, atLeastOnce on Tansu, whose read_committed
   fetches do not skip aborted transactions).
3. The reader job: a Spark pipeline reads ``orders`` with format ``dynamic_kafka`` from the
   metadata service (``metadataService=http``), parses the JSON, writes the events to a
   checkpointed Parquet sink and prints per-cluster counts per micro-batch.
4. Mid-run, ``orders`` is migrated by the runbook of docs/sink.md: west is added through the
   service's write API (writes stay on east), ``dynamic-kafka move --write`` flips the writes
   to west (the writer's next micro-batch goes there), the reader drains east, and
   ``dynamic-kafka move`` maps ``orders`` to west only.
5. A summary: the guarantee used, records written per cluster (the sink's metrics), read per
   cluster, lost, duplicated, seconds from the write flip to the first record read from
   ``west``, and how the metadata requests were answered.
6. The query's metrics (``pyspark_dynamic_kafka.monitoring.attach``) drawn by ``dynamic-kafka
   report``: records read per second and records waiting per cluster, with the two metadata
   changes marked (a PNG and an HTML page in ``demo-report/``, paths printed).

Run with ``make demo`` (Apache Kafka clusters: needs java, the jars fetched once from Maven
Central without Maven), or ``make demo BROKER=tansu`` (the embedded Tansu broker, no JVM for
the brokers; its limits: ``pyspark_dynamic_kafka.testing.BROKER_KINDS``): ``--broker`` names
the kind of clusters started.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# Spark's Python workers (and its lookup of pyspark_* data sources) run this interpreter:
# local_spark_session() sets it, whatever python3 is on PATH.

from demo_server import DEADLINE_S, TOKEN, MetadataServer, write_metadata  # examples/
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.datasource import DataSource, SimpleDataSourceStreamReader

from pyspark_dynamic_kafka.engines.choice import read_engine
from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.metadata.http import HttpMetadataService
from pyspark_dynamic_kafka.monitoring import attach
from pyspark_dynamic_kafka.monitoring.report import render_report
from pyspark_dynamic_kafka.testing import local_spark_session, start_clusters

PARTITIONS = 3
ROWS_PER_BATCH = 200  # the writer's micro-batches, one a second
TOTAL = ROWS_PER_BATCH * 24  # ids written; then the writer has nothing more to write
FLIP_AFTER_BATCH = 8  # the writes flip to west once the writer completed this micro-batch
MAX_PER_BATCH = 400
REPORT_DIR = Path("demo-report")


def guarantee_for(broker: str) -> str:
    """The sink's ``deliveryGuarantee`` on ``broker``: exactlyOnce needs a broker whose
    ``read_committed`` fetches skip aborted transactions; Tansu's do not (its Fetch lists no
    aborted transactions, and its read_committed latest offset is 0 while a transaction is
    open), so on Tansu the writer is atLeastOnce."""
    return "exactlyOnce" if broker == "kafka" else "atLeastOnce"


class DemoIdsReader(SimpleDataSourceStreamReader):
    """Ids 0..TOTAL-1, ROWS_PER_BATCH a micro-batch; then no new data, so no micro-batch."""

    def initialOffset(self) -> dict[str, int]:
        return {"next": 0}

    def read(self, start: dict[str, int]) -> tuple[Iterator[tuple[int]], dict[str, int]]:
        end = min(start["next"] + ROWS_PER_BATCH, TOTAL)
        return self.readBetweenOffsets(start, {"next": end}), {"next": end}

    def readBetweenOffsets(
        self, start: dict[str, int], end: dict[str, int]
    ) -> Iterator[tuple[int]]:
        return iter([(i,) for i in range(start["next"], end["next"])])


class DemoIds(DataSource):
    """The writer's source, ``demo_ids``: column ``value``, the ids."""

    @classmethod
    def name(cls) -> str:
        return "demo_ids"

    def schema(self) -> str:
        return "value long"

    def simpleStreamReader(self, schema: Any) -> DemoIdsReader:
        return DemoIdsReader()


def writer(spark: SparkSession, metadata_url: str, checkpoint: Path, broker: str) -> Any:
    """The producer job: numbered events ``{"id": n, "produced_at": t}`` (ids 0..TOTAL-1, 200 a
    micro-batch, then none) written to stream ``orders`` by the ``dynamic_kafka`` sink."""
    # Tansu's high watermark is the base offset of a partition's last record batch + 1: the
    # rest of the last batch east gets would stay hidden from readers, as nothing lands after it.
    batching = {"kafka.batch.num.messages": "1"} if broker == "tansu" else {}
    spark.dataSource.register(DemoIds)
    return (
        spark.readStream.format("demo_ids")
        .load()
        .selectExpr(
            "CAST(value AS STRING) AS key",
            "to_json(named_struct('id', value, 'produced_at', unix_micros(current_timestamp())"
            " / 1e6)) AS value",
            f"CAST(value % {PARTITIONS} AS INT) AS partition",
        )
        .writeStream.format("dynamic_kafka")
        .queryName("orders-writer")
        .option("metadataService", "http")
        .option("metadataService.url", metadata_url)
        .option("metadataService.token", TOKEN)
        .option("streamId", "orders")
        .option("deliveryGuarantee", guarantee_for(broker))
        .options(**batching)
        .option("sinkId", "orders-demo-writer")
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="1 second")
        .start()
    )


def written(metrics: Path) -> dict[str, Any]:
    """The writer's last ``writes`` object in the metrics file (the sink's own counts)."""
    lines = (
        [json.loads(line) for line in metrics.read_text().splitlines()] if metrics.exists() else []
    )
    found = [line["writes"] for line in lines if "writes" in line]
    return (
        max(found, key=lambda w: w["batches"])
        if found
        else {"batches": 0, "cluster": None, "clusters": {}}
    )


def rows_on(metrics: Path, cluster: str) -> int:
    return int(written(metrics)["clusters"].get(cluster, {}).get("rowsTotal", 0))


def pipeline(
    spark: SparkSession, metadata_url: str, checkpoint: Path, output: Path, guarantee: str
) -> Any:
    """dynamic_kafka -> parse JSON -> Parquet (checkpointed) + per-cluster counts per batch;
    read_committed behind an exactlyOnce writer."""
    isolation = "read_committed" if guarantee == "exactlyOnce" else "read_uncommitted"
    events: DataFrame = (
        spark.readStream.format("dynamic_kafka")
        .option("kafka.isolation.level", isolation)
        .option("metadataService", "http")
        .option("metadataService.url", metadata_url)
        .option("metadataService.token", TOKEN)
        .option("streamIds", "orders")
        .option("startingOffsets", "earliest")
        .option("metadataDiscoveryIntervalMs", "1000")
        .option("maxOffsetsPerTrigger", str(MAX_PER_BATCH))  # backlogs drain over a few batches
        .load()
        .select(
            F.col("cluster"),
            F.col("partition"),
            F.col("offset"),
            F.get_json_object(F.col("value").cast("string"), "$.id").cast("long").alias("id"),
            F.current_timestamp().alias("read_at"),
        )
    )

    def sink(batch: DataFrame, batch_id: int) -> None:
        # One directory per micro-batch, overwritten on replay: the output stays exactly-once.
        batch.persist()
        batch.write.mode("overwrite").parquet(str(output / f"batch={batch_id}"))
        counts = {r["cluster"]: r["count"] for r in batch.groupBy("cluster").count().collect()}
        batch.unpersist()
        if counts:
            print(f"  micro-batch {batch_id}: {dict(sorted(counts.items()))}", flush=True)

    return (
        events.writeStream.foreachBatch(sink)
        .queryName("orders-migration")
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="500 milliseconds")
        .start()
    )


def east_drained(query: Any, expected: int) -> bool:
    """Whether the query's checkpointed offsets on ``east`` cover the ``expected`` records."""
    progress = query.lastProgress
    if not progress:
        return False
    end = progress["sources"][0]["endOffset"]
    end = json.loads(end) if isinstance(end, str) else end
    east = end.get("clusters", {}).get("east", {}).get("orders", {})
    return sum(east.values()) >= expected


def batch_of(query: Any) -> int:
    """The query's last completed micro-batch (-1 before the first)."""
    progress = query.lastProgress
    return -1 if progress is None else int(progress["batchId"])


def wait_for(condition: Callable[[], bool], queries: list[Any], what: str) -> None:
    """Poll ``condition`` while the queries run; give up (saying so) only after DEADLINE_S."""
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        failed = [q.exception() for q in queries if q.exception() is not None]
        if time.monotonic() > deadline or failed:
            raise RuntimeError(f"gave up waiting for {what}: {failed}")
        time.sleep(0.5)


def reader_lines(clusters: dict[str, Any]) -> list[str]:
    """The engine that reads each cluster with the default ``reader=auto``, and why when it is
    not the compiled core's direct fetch path (the driver's own per-cluster decision, on the
    properties the metadata gives the cluster: :func:`write_metadata`'s)."""
    module = core()
    version = "" if module is None else f", librdkafka {module.librdkafka_version()}"
    what = {
        "direct": f"pyspark-dynamic-kafka-core's direct fetch path{version}",
        "librdkafka": f"pyspark-dynamic-kafka-core with librdkafka's consumer{version}",
        "python": "the Python reader, confluent-kafka",
    }
    lines = []
    for name, cluster in sorted(clusters.items()):
        engine = read_engine("auto", name, {"bootstrap.servers": cluster.bootstrap_servers})
        why = "" if engine.reason is None else f", because {engine.reason}"
        lines.append(f"reader for {name}: {engine.name} ({what[engine.name]}){why}")
    return lines


def read_paths(metrics: Path) -> dict[str, str]:
    """The engine the source reported reading each cluster with (``readPath`` in the listener's
    JSON lines: the source's progress)."""
    paths: dict[str, str] = {}
    for line in metrics.read_text().splitlines() if metrics.exists() else []:
        for name, cluster in json.loads(line).get("clusters", {}).items():
            if cluster.get("readPath"):
                paths[name] = cluster["readPath"]
    return dict(sorted(paths.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A live migration of stream orders, end to end.")
    parser.add_argument(
        "--broker", default="kafka", help="the kind of the two clusters (kafka or tansu)"
    )
    broker = parser.parse_args(argv).broker
    logging.basicConfig(level=logging.WARNING)
    workdir = Path(tempfile.mkdtemp(prefix="dynamic-kafka-demo-"))
    metadata = workdir / "streams.yaml"
    output = workdir / "events"
    try:
        with start_clusters(["east", "west"], broker) as clusters:
            spark = local_spark_session(
                "dynamic-kafka-demo", **{"spark.ui.showConsoleProgress": "false"}
            )
            spark.sparkContext.setLogLevel("ERROR")
            try:
                return run(spark, clusters, metadata, workdir, output, broker)
            finally:
                spark.stop()  # before the clusters go: no client outlives its broker
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def run(
    spark: SparkSession,
    clusters: dict[str, Any],
    metadata: Path,
    workdir: Path,
    output: Path,
    broker: str,
) -> int:
    """Produce, read, migrate ``orders`` from east to west, and summarize."""
    for cluster in clusters.values():
        cluster.create_topic("orders", partitions=PARTITIONS)
    write_metadata(metadata, clusters, ["east"])
    server = MetadataServer(metadata, workdir)
    try:
        return migrate(spark, clusters, server, workdir, output, broker)
    finally:
        server.stop()


def migrate(
    spark: SparkSession,
    clusters: dict[str, Any],
    server: MetadataServer,
    workdir: Path,
    output: Path,
    broker: str,
) -> int:
    """Run the writer and the reader while ``orders`` moves from east to west (the runbook)."""
    print(f"clusters: { {n: c.bootstrap_servers for n, c in clusters.items()} }")
    print(f"metadata service: {server.url} (orders -> east, write: true)")
    guarantee = guarantee_for(broker)
    print(f"writer: dynamic_kafka sink, deliveryGuarantee={guarantee}")
    for line in reader_lines(clusters):
        print(line)

    metrics = workdir / "metrics.jsonl"
    monitor = attach(spark, path=metrics)  # one JSON line per micro-batch, per cluster
    producer = writer(spark, server.url, workdir / "writer-checkpoint", broker)
    query = pipeline(spark, server.url, workdir / "checkpoint", output, guarantee)
    queries = [producer, query]
    wait_for(lambda: any(p["numInputRows"] for p in query.recentProgress), queries, "a first read")
    wait_for(lambda: batch_of(producer) >= FLIP_AFTER_BATCH, queries, "the writer's batches")

    print("runbook 1: add west (write API; writes stay on east)")
    service = HttpMetadataService(server.url, TOKEN)
    service.update_stream(
        "orders", lambda entries: [*entries, {"cluster": "west", "topics": ["orders"]}]
    )
    print("runbook 2: flip writes to west (dynamic-kafka move --write)")
    flipped = batch_of(producer)
    server.move("orders", "east", "west", write=True)
    changed_at = time.time()
    # The micro-batch running during the flip may still go to east; the one after it cannot.
    wait_for(lambda: batch_of(producer) >= flipped + 2, queries, "a writer batch on west")
    wait_for(lambda: written(metrics)["cluster"] == "west", queries, "the sink's west metrics")
    on_east = rows_on(metrics, "east")
    print(f"runbook 3: the reader drains east ({on_east} records written there)")
    wait_for(lambda: east_drained(query, on_east), queries, "east to be drained")
    print("runbook 4: remove east (dynamic-kafka move)")
    server.move("orders", "east", "west")

    wait_for(lambda: batch_of(producer) >= TOTAL // ROWS_PER_BATCH - 1, queries, "every id written")
    wait_for(
        lambda: rows_on(metrics, "east") + rows_on(metrics, "west") >= TOTAL, queries, "metrics"
    )
    # Every id is out: the writer has no micro-batch to run, so stopping it cancels none.
    wait_for(lambda: not producer.status["isDataAvailable"], queries, "the writer to be idle")
    producer.stop()
    query.processAllAvailable()
    query.stop()
    monitor.detach()
    print(f"metadata reads answered (HTTP status: count): {server.answers()}")
    code = summarize(spark, output, written(metrics), guarantee, changed_at, read_paths(metrics))
    reads = workdir / "reads.jsonl"  # the reader's lines (the writer's have no cluster read)
    lines = metrics.read_text().splitlines()
    reads.write_text("".join(f"{x}\n" for x in lines if json.loads(x).get("kafkaClustersCount")))
    png, page = render_report(
        reads,
        REPORT_DIR.resolve(),
        title="Stream 'orders' moves from cluster east to cluster west, a Spark query reading it",
    )
    print(f"  chart of the migration: {png}")
    print(f"                  page:   {page}")
    return code


def summarize(
    spark: SparkSession,
    output: Path,
    writes: dict[str, Any],
    guarantee: str,
    changed_at: float,
    paths: dict[str, str],
) -> int:
    """Print the summary and return the exit code (0 when nothing was lost or duplicated)."""
    events = spark.read.parquet(str(output))
    per_cluster = {r["cluster"]: r["count"] for r in events.groupBy("cluster").count().collect()}
    ids = [r["id"] for r in events.select("id").collect()]
    by_sink = {name: c["rowsTotal"] for name, c in sorted(writes["clusters"].items())}
    lost = TOTAL - len(set(ids) & set(range(TOTAL)))
    duplicated = len(ids) - len(set(ids))
    unexpected = len(set(ids) - set(range(TOTAL)))
    first_west = events.where("cluster = 'west'").agg(F.min("read_at")).first()[0]
    lag = (first_west.timestamp() - changed_at) if first_west is not None else float("nan")
    print()
    print("summary")
    why = {"atLeastOnce": " (Tansu's read_committed does not skip aborted transactions)"}
    print(f"  delivery guarantee:  {guarantee}{why.get(guarantee, ' (read_committed reader)')}")
    print(f"  ids produced:        {TOTAL}")
    print(f"  written per cluster: {by_sink} (the sink's metrics)")
    print(f"  read per cluster:    {dict(sorted(per_cluster.items()))}")
    print(f"  read path:           {paths} (the source's progress metrics)")
    print(f"  lost:                {lost}")
    print(f"  duplicated:          {duplicated}")
    if unexpected:
        print(f"  unexpected ids:      {unexpected}")
    print(f"  write flip -> first record read from west: {lag:.2f} s")
    ok = lost == 0 and duplicated == 0 and not unexpected and sum(by_sink.values()) == TOTAL
    print("  result:              " + ("OK" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
