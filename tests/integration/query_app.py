"""A stand-alone streaming job for restart tests: dynamic_kafka -> checkpointed Parquet.

Usage: python query_app.py METADATA CHECKPOINT OUTPUT STREAM_IDS MODE [OPTIONS_JSON]
MODE is ``run`` (run until killed) or ``drain`` (process what is available, then exit);
OPTIONS_JSON, when given, adds source options (e.g. ``archive.path``).

In ``run`` mode the job reports its readiness on stdout, one line each: ``STARTED`` once the
query runs, ``COMMITTED`` once a micro-batch that read records has been committed (its progress
is reported after its output and its commit log are written). A test waits for these lines
instead of guessing how long Spark takes to start.

Run by ``spark-submit`` (``spark-submit --master spark://... query_app.py ...``), the job uses
the session spark-submit configured (master, Python of the executors) instead of a local one,
and prints ``APP <application id>`` first.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

from tests import query_start

from pyspark_dynamic_kafka.testing import local_spark_session


def _read_records(query: Any) -> bool:
    return any(p["numInputRows"] > 0 for p in query.recentProgress)


def report_progress(query: Any, stopping: Callable[[], bool] = lambda: False) -> None:
    """Print ``STARTED``, then ``COMMITTED`` once a micro-batch that read records is committed;
    return once the query has ended (raising if it failed) or ``stopping()`` is true."""
    print("STARTED", flush=True)
    committed = False
    # awaitTermination(timeout) returns True once the query ended (and raises if it failed).
    while not stopping() and not query.awaitTermination(0.2):
        if not committed and _read_records(query):
            committed = True
            print("COMMITTED", flush=True)


def parquet_query(
    spark: Any,
    metadata: str,
    checkpoint: str,
    output: str,
    stream_ids: str,
    extra: dict[str, str],
) -> Any:
    """The job's query, not started: stream ``stream_ids`` of ``metadata`` (source options
    ``extra`` added) to Parquet files in ``output``, checkpointed in ``checkpoint``; a test
    drains a killed job's checkpoint with it in its own session."""
    df = (
        spark.readStream.format("dynamic_kafka")
        .option("metadataService", "file")
        .option("metadataService.path", metadata)
        .option("streamIds", stream_ids)
        .option("startingOffsets", "earliest")
        .option("metadataDiscoveryIntervalMs", "0")
        .options(**extra)
        .load()
        .selectExpr("cluster", "topic", "partition", "offset", "cast(value as string) as value")
    )
    return (
        df.writeStream.format("parquet")
        .option("path", output)
        .option("checkpointLocation", checkpoint)
    )


def main() -> None:
    metadata, checkpoint, output, stream_ids, mode = sys.argv[1:6]
    extra = json.loads(sys.argv[6]) if len(sys.argv) > 6 else {}
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # started by spark-submit, which set the master
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.appName("dynamic-kafka-query-app").getOrCreate()
        print("APP", spark.sparkContext.applicationId, flush=True)
    else:
        spark = local_spark_session("dynamic-kafka-query-app")
    writer = parquet_query(spark, metadata, checkpoint, output, stream_ids, extra)
    if mode == "drain":
        writer.trigger(availableNow=True).start().awaitTermination()
    else:
        report_progress(writer.trigger(processingTime="300 milliseconds").start())
    spark.stop()


if __name__ == "__main__":
    query_start.install()
    main()
