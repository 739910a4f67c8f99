"""One datacenter's streaming app for the ``assignment=group`` tests: a separate driver process.

Usage: python group_app.py METADATA CHECKPOINT OUTPUT NAME OPTIONS_JSON

Reads stream ``orders`` with ``assignment=group`` (plus OPTIONS_JSON, e.g. ``kafka.group.id``,
``kafka.client.rack``) into Parquet at OUTPUT, checkpointed at CHECKPOINT, with the monitoring
listener attached (it tells the source each completed micro-batch). ``kafka.client.id`` is NAME,
so ``describe --group`` shows which app owns a partition.

Lines on stdout: ``STARTED`` once the query runs, ``COMMITTED`` once a micro-batch that read
records is committed. SIGTERM stops the query gracefully (``query.stop()``), waits until the
source has handed its partitions over (its handoff directory is gone), prints ``STOPPED`` and
exits.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from tests import query_start
from tests.integration.query_app import report_progress

from pyspark_dynamic_kafka.monitoring import attach
from pyspark_dynamic_kafka.monitoring.progress import offset_document
from pyspark_dynamic_kafka.testing import local_spark_session

_stop = False


def _on_term(signum: int, frame: object) -> None:
    global _stop
    _stop = True


def _handoff(query: Any) -> str | None:
    for progress in reversed(query.recentProgress):
        for source in json.loads(progress.json)["sources"]:
            latest = source.get("latestOffset")
            document = offset_document(latest)
            handoff = (document or {}).get("dynamicKafka", {}).get("handoff")
            if handoff:
                return str(handoff)
    return None


def main() -> None:
    metadata, checkpoint, output, name, extra = sys.argv[1:6]
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    signal.signal(signal.SIGTERM, _on_term)
    spark = local_spark_session(f"dynamic-kafka-{name}")
    monitor = attach(spark)
    df = (
        spark.readStream.format("dynamic_kafka")
        .option("metadataService", "file")
        .option("metadataService.path", metadata)
        .option("streamIds", "orders")
        .option("startingOffsets", "earliest")
        .option("assignment", "group")
        .option("kafka.client.id", name)
        .options(**json.loads(extra))
        .load()
        .selectExpr("cluster", "topic", "partition", "offset", "cast(value as string) as value")
    )
    query = (
        df.writeStream.format("parquet")
        .option("path", output)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="1 second")
        .start()
    )
    report_progress(query, lambda: _stop)
    handoff = _handoff(query)
    print(f"HANDOFF {handoff}", flush=True)
    query.stop()
    deadline = time.monotonic() + 120
    while handoff and Path(handoff).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    print("STOPPED", flush=True)
    monitor.detach()
    spark.stop()


if __name__ == "__main__":
    query_start.install()
    main()
