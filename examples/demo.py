"""The main job, end to end on two embedded clusters: a live migration of stream ``orders``.

1. Start two local Kafka-protocol clusters, ``east`` and ``west``, write a metadata file
   mapping stream ``orders`` to ``east`` and serve it with the reference metadata server
   (``dynamic-kafka serve``, writes protected by a token).
2. A producer writes numbered JSON events to whichever cluster currently owns ``orders``.
3. A Spark pipeline reads ``orders`` with format ``dynamic_kafka`` from the metadata service
   (``metadataService=http``), parses the JSON, writes the events to a checkpointed Parquet
   sink and prints per-cluster counts per micro-batch.
4. Mid-run, ``orders`` is migrated: it is first mapped to east+west through the service's
   write API, the producer moves to west, and once east is drained ``dynamic-kafka move``
   maps it to west only.
5. A summary: records per cluster, lost, duplicated, seconds from the metadata change to the
   first record read from ``west``, and how the metadata requests were answered.
6. The query's metrics (``pyspark_dynamic_kafka.monitoring.attach``) drawn by ``dynamic-kafka
   report``: records read per second and records waiting per cluster, with the two metadata
   changes marked (a PNG and an HTML page in ``demo-report/``, paths printed).

Run with ``make demo`` (embedded Tansu clusters), or ``make demo BROKER=kafka`` (Apache Kafka
clusters; needs java and mvn): ``--broker`` names the kind of clusters started.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from confluent_kafka import Producer

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# Spark's Python workers (and its lookup of pyspark_* data sources) run this interpreter:
# local_spark_session() sets it, whatever python3 is on PATH.

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pyspark_dynamic_kafka.metadata.http import HttpMetadataService
from pyspark_dynamic_kafka.monitoring import attach
from pyspark_dynamic_kafka.monitoring.report import render_report
from pyspark_dynamic_kafka.source.executor.native import core, native_problem
from pyspark_dynamic_kafka.testing import local_spark_session, start_clusters

PARTITIONS = 3
RATE_PER_SECOND = 200
MAX_PER_BATCH = 400
RUN_BEFORE_MIGRATION_S = 12
RUN_AFTER_MIGRATION_S = 12
TOKEN = "demo-write-token"
REPORT_DIR = Path("demo-report")
DEADLINE_S = 300  # waits for a process or the query give up only after this (a loaded machine)


def write_metadata(path: Path, clusters: dict[str, Any], owners: list[str]) -> None:
    """Map stream ``orders`` to topic ``orders`` on ``owners``; rewrite the file atomically."""
    document = {
        "clusters": {n: {"bootstrap.servers": c.bootstrap_servers} for n, c in clusters.items()},
        "streams": {"orders": [{"cluster": o, "topics": ["orders"]} for o in owners]},
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(document, sort_keys=False))
    os.replace(tmp, path)


class MetadataServer:
    """``dynamic-kafka serve`` in a subprocess on a free port, logging to a file."""

    def __init__(self, metadata: Path, workdir: Path) -> None:
        self.token_file = workdir / "token"
        self.token_file.write_text(TOKEN)
        self.token_file.chmod(0o600)
        self.log = workdir / "metadata-server.log"
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        command = [sys.executable, "-m", "pyspark_dynamic_kafka", "serve"]
        command += ["--metadata", str(metadata), "--port", self.url.rsplit(":", 1)[1]]
        command += ["--token-file", str(self.token_file)]
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + DEADLINE_S  # a healthy server answers at once
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/v1/health", timeout=2):
                    return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    log = self.log.read_text()
                    raise RuntimeError(f"metadata server did not start: {log}") from None
                time.sleep(0.2)

    def move(self, stream: str, source: str, target: str) -> None:
        """``dynamic-kafka move`` against this server."""
        command = [sys.executable, "-m", "pyspark_dynamic_kafka", "move", stream]
        command += ["--from", source, "--to", target, "--metadata", self.url]
        command += ["--token-file", str(self.token_file)]
        result = subprocess.run(command, capture_output=True, text=True, timeout=DEADLINE_S)
        print(result.stdout.rstrip() or result.stderr.rstrip(), flush=True)
        if result.returncode != 0:
            raise RuntimeError(f"dynamic-kafka move failed: {result.stderr}")

    def answers(self) -> dict[str, int]:
        """How the server answered the query's metadata reads, by status."""
        statuses = re.findall(
            r'"GET /v1/streams\?id=orders HTTP/1.1" (\d{3})', self.log.read_text()
        )
        return {status: statuses.count(status) for status in sorted(set(statuses))}

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(20)


class EventProducer(threading.Thread):
    """Writes events ``{"id": n, "produced_at": t}`` to the cluster named by ``target``."""

    def __init__(self, clusters: dict[str, Any]) -> None:
        super().__init__(daemon=True)
        self.producers = {
            name: Producer(
                {
                    "bootstrap.servers": c.bootstrap_servers,
                    "linger.ms": 0,
                    "batch.num.messages": 1,
                    "enable.idempotence": True,
                }
            )
            for name, c in clusters.items()
        }
        self.target = "east"
        self.sent: dict[str, int] = {name: 0 for name in clusters}
        self.next_id = 0
        self.errors: list[str] = []
        self._stopping = threading.Event()
        self._lock = threading.Lock()

    def move_to(self, cluster: str) -> None:
        """Flush the current cluster, then send every further event to ``cluster``."""
        with self._lock:
            self.producers[self.target].flush(30)
            self.target = cluster

    def run(self) -> None:
        interval = 1.0 / RATE_PER_SECOND
        while not self._stopping.is_set():
            with self._lock:
                target = self.target
                event = {"id": self.next_id, "produced_at": time.time()}
                self.producers[target].produce(
                    "orders",
                    key=str(self.next_id),
                    value=json.dumps(event),
                    partition=self.next_id % PARTITIONS,
                    on_delivery=self._delivered,
                )
                self.producers[target].poll(0)
                self.sent[target] += 1
                self.next_id += 1
            time.sleep(interval)

    def _delivered(self, err: Any, _msg: Any) -> None:
        if err is not None:
            self.errors.append(str(err))

    def stop(self) -> None:
        self._stopping.set()
        self.join()
        for producer in self.producers.values():
            producer.flush(30)
            producer.close()


def pipeline(spark: SparkSession, metadata_url: str, checkpoint: Path, output: Path) -> Any:
    """dynamic_kafka -> parse JSON -> Parquet (checkpointed) + per-cluster counts per batch."""
    events: DataFrame = (
        spark.readStream.format("dynamic_kafka")
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


def wait_for(condition: Callable[[], bool], query: Any, what: str) -> None:
    """Poll ``condition`` while the query runs; give up (saying so) only after DEADLINE_S."""
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline or query.exception() is not None:
            print(f"gave up waiting for {what}: {query.exception()}")
            return
        time.sleep(0.5)


def reader_lines(clusters: dict[str, Any]) -> list[str]:
    """Which reader reads each cluster with the default ``reader=auto``, and why when it is the
    Python reader (the driver's own per-cluster decision, on the properties the metadata gives
    the cluster: :func:`write_metadata`'s)."""
    module = core()
    lines = []
    for name, cluster in sorted(clusters.items()):
        problem = native_problem({"bootstrap.servers": cluster.bootstrap_servers})
        if problem is None and module is not None:
            version = module.librdkafka_version()
            lines.append(
                f"reader for {name}: native (pyspark-dynamic-kafka-core, librdkafka {version})"
            )
        else:
            lines.append(f"reader for {name}: python, because {problem}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A live migration of stream orders, end to end.")
    parser.add_argument(
        "--broker", default="tansu", help="the kind of the two clusters (tansu or kafka)"
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
                return run(spark, clusters, metadata, workdir, output)
            finally:
                spark.stop()  # before the clusters go: no client outlives its broker
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def run(
    spark: SparkSession, clusters: dict[str, Any], metadata: Path, workdir: Path, output: Path
) -> int:
    """Produce, read, migrate ``orders`` from east to west, and summarize."""
    for cluster in clusters.values():
        cluster.create_topic("orders", partitions=PARTITIONS)
    write_metadata(metadata, clusters, ["east"])
    server = MetadataServer(metadata, workdir)
    try:
        return migrate(spark, clusters, server, workdir, output)
    finally:
        server.stop()


def migrate(
    spark: SparkSession,
    clusters: dict[str, Any],
    server: MetadataServer,
    workdir: Path,
    output: Path,
) -> int:
    """Run the pipeline while ``orders`` moves from east to west through the metadata service."""
    print(f"clusters: { {n: c.bootstrap_servers for n, c in clusters.items()} }")
    print(f"metadata service: {server.url} (orders -> east)")
    for line in reader_lines(clusters):
        print(line)

    metrics = workdir / "metrics.jsonl"
    monitor = attach(spark, path=metrics)  # one JSON line per micro-batch, per cluster
    producer = EventProducer(clusters)
    producer.start()
    query = pipeline(spark, server.url, workdir / "checkpoint", output)
    wait_for(lambda: any(p["numInputRows"] for p in query.recentProgress), query, "a first read")
    time.sleep(RUN_BEFORE_MIGRATION_S)  # the pipeline runs a while before the migration

    print("migrating orders: east -> east+west (write API), producer -> west")
    service = HttpMetadataService(server.url, TOKEN)
    service.update_stream(
        "orders", lambda entries: [*entries, {"cluster": "west", "topics": ["orders"]}]
    )
    changed_at = time.time()
    producer.move_to("west")
    time.sleep(RUN_AFTER_MIGRATION_S / 2)
    wait_for(lambda: east_drained(query, producer.sent["east"]), query, "east to be drained")
    print("migrating orders: east+west -> west (dynamic-kafka move)")
    server.move("orders", "east", "west")
    time.sleep(RUN_AFTER_MIGRATION_S / 2)

    producer.stop()
    query.processAllAvailable()
    query.stop()
    monitor.detach()
    print(f"metadata reads answered (HTTP status: count): {server.answers()}")
    code = summarize(spark, output, producer, changed_at)
    png, page = render_report(
        metrics,
        REPORT_DIR.resolve(),
        title="Stream 'orders' moves from cluster east to cluster west, a Spark query reading it",
    )
    print(f"  chart of the migration: {png}")
    print(f"                  page:   {page}")
    return code


def summarize(spark: SparkSession, output: Path, producer: EventProducer, changed_at: float) -> int:
    """Print the summary and return the exit code (0 when nothing was lost or duplicated)."""
    events = spark.read.parquet(str(output))
    per_cluster = {r["cluster"]: r["count"] for r in events.groupBy("cluster").count().collect()}
    ids = [r["id"] for r in events.select("id").collect()]
    produced = producer.next_id
    lost = produced - len(set(ids) & set(range(produced)))
    duplicated = len(ids) - len(set(ids))
    first_west = events.where("cluster = 'west'").agg(F.min("read_at")).first()[0]
    lag = (first_west.timestamp() - changed_at) if first_west is not None else float("nan")
    print()
    print("summary")
    print(f"  produced:            {produced} ({producer.sent})")
    print(f"  read per cluster:    {dict(sorted(per_cluster.items()))}")
    print(f"  lost:                {lost}")
    print(f"  duplicated:          {duplicated}")
    print(f"  metadata change -> first record from west: {lag:.2f} s")
    if producer.errors:
        print(f"  producer errors:     {producer.errors[:3]}")
    ok = lost == 0 and duplicated == 0 and not producer.errors
    print("  result:              " + ("OK" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
