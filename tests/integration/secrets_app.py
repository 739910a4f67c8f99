"""A stand-alone job for the secret scan: everything it does is logged as verbosely as possible.

Usage: python secrets_app.py METADATA BROKEN_METADATA CHECKPOINT OUTPUT BOOTSTRAP

1. Streams ``orders`` (metadata with a secret) into Parquet with a checkpoint until 10 rows,
   with the monitoring listener attached: its Prometheus scrape and JSON lines are printed.
2. Reads it in batch.
3. Deletes the topic while the metadata lists it: the stream fails with data loss.
4. Reads in batch from a cluster that cannot be reached (metadata with the same secret).

Every error and every progress report is printed. Python logging of every Python process is set
to DEBUG by the ``sitecustomize`` the test puts on ``PYTHONPATH``; Spark logs at INFO (the
log4j2 configuration the test gives the JVM).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import traceback
import urllib.request

from confluent_kafka.admin import AdminClient
from tests import query_start

from pyspark_dynamic_kafka.monitoring import attach
from pyspark_dynamic_kafka.testing import local_spark_session

DEADLINE = 300.0


def _options(metadata: str) -> dict[str, str]:
    return {
        "metadataService": "file",
        "metadataService.path": metadata,
        "streamIds": "orders",
        "startingOffsets": "earliest",
        "metadataDiscoveryIntervalMs": "0",
        "kafkaAdmin.requestTimeoutMs": "3000",
        "fetchOffset.numRetries": "1",
    }


def main() -> None:
    metadata, broken, checkpoint, output, bootstrap = sys.argv[1:6]
    logging.getLogger().setLevel(logging.DEBUG)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = local_spark_session("dynamic-kafka-secrets")
    metrics = os.path.join(os.path.dirname(checkpoint), "metrics.jsonl")
    monitor = attach(spark, prometheus_port=0, path=metrics)
    query = (
        spark.readStream.format("dynamic_kafka")
        .options(**_options(metadata))
        .load()
        .selectExpr("cluster", "cast(value as string) as value")
        .writeStream.format("parquet")
        .option("path", output)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="300 milliseconds")
        .start()
    )
    # Wait for the 10 records; the deadline only bounds a failure (Spark starts slowly on a
    # loaded machine), the test then finds fewer than 10 in "STREAMED".
    deadline = time.monotonic() + DEADLINE
    done = 0
    while done < 10 and time.monotonic() < deadline:
        if query.awaitTermination(0.5):
            break
        done = sum(p["numInputRows"] for p in query.recentProgress)
    print("STREAMED", done, flush=True)
    # The listener runs on Spark's listener bus, after the progress: wait for its series.
    scrape = ""
    while "dynamic_kafka_records_total{" not in scrape and time.monotonic() < deadline:
        with urllib.request.urlopen(f"http://127.0.0.1:{monitor.port}/metrics", timeout=30) as page:
            scrape = page.read().decode()
        time.sleep(0.2)
    print(f"SCRAPE <<{scrape}>>", flush=True)
    with open(metrics, encoding="utf-8") as lines:
        print(f"METRICS <<{lines.read()}>>", flush=True)
    batch = spark.read.format("dynamic_kafka").options(**_options(metadata)).load()
    print("BATCH", batch.count(), flush=True)

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics(["orders"])["orders"].result(30)
    try:
        query.awaitTermination(DEADLINE)
        print("STREAM ERROR none", flush=True)
    except Exception as exc:
        print(f"STREAM ERROR <<{exc}>>", flush=True)
        traceback.print_exc()
    for progress in query.recentProgress:
        print("PROGRESS", json.dumps(progress, default=str), flush=True)
    query.stop()
    monitor.detach()

    try:
        spark.read.format("dynamic_kafka").options(**_options(broken)).load().count()
        print("BROKEN ERROR none", flush=True)
    except Exception as exc:
        print(f"BROKEN ERROR <<{exc}>>", flush=True)
        traceback.print_exc()
    spark.stop()


if __name__ == "__main__":
    query_start.install()
    main()
