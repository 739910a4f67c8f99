"""A stand-alone streaming job for fault tests: dynamic_kafka -> a checkpointed memory table, in
a Spark session of its own (``local[2,max_failures]``: its tasks are retried).

Usage: python fault_app.py CONFIG_JSON, a file with ``options`` (the source options),
``checkpoint`` and ``max_failures``.

Standard output, one line each: ``STARTED`` once the query runs; ``COUNT n`` whenever the rows
read by the micro-batches reported so far changed. After a line on standard input (or its end),
or once the query failed: ``FAILED_TASKS n`` (failed attempts of the query's tasks), ``PROGRESS
<json>`` per progress report, ``VALUES <json>`` (every row's value, sorted) and, last, ``ERROR
<<message>>`` (``ERROR none``); then it exits with code 0.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

from tests import query_start

from pyspark_dynamic_kafka.testing import local_spark_session


def _failed_tasks(spark: Any, group: str) -> int:
    tracker = spark.sparkContext.statusTracker()
    failed = 0
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        for stage_id in info.stageIds if info else ():
            stage = tracker.getStageInfo(stage_id)
            failed += stage.numFailedTasks if stage else 0
    return failed


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as file:
        config = json.load(file)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = local_spark_session("dynamic-kafka-fault-app", max_failures=config["max_failures"])
    query = (
        spark.readStream.format("dynamic_kafka")
        .options(**config["options"])
        .load()
        .selectExpr("cast(value as string) as value")
        .writeStream.format("memory")
        .queryName("out")
        .option("checkpointLocation", config["checkpoint"])
        .trigger(processingTime="300 milliseconds")
        .start()
    )
    print("STARTED", flush=True)
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    # Rows per micro-batch, from the progress reports (no Spark job of its own: counting the
    # table would compete with the query for the two cores).
    rows: dict[int, int] = {}
    count = 0
    while not stop.is_set() and query.isActive:
        rows.update((p["batchId"], p["numInputRows"]) for p in query.recentProgress)
        if sum(rows.values()) != count:
            count = sum(rows.values())
            print("COUNT", count, flush=True)
        time.sleep(0.3)
    print("FAILED_TASKS", _failed_tasks(spark, str(query.runId)), flush=True)
    for progress in query.recentProgress:
        print("PROGRESS", json.dumps(progress, default=str), flush=True)
    values = sorted(row.value for row in spark.table("out").collect())
    print("VALUES", json.dumps(values), flush=True)
    error = query.exception()  # last: its message spans lines
    print(f"ERROR <<{error}>>" if error is not None else "ERROR none", flush=True)
    query.stop()
    spark.stop()


if __name__ == "__main__":
    query_start.install()
    main()
