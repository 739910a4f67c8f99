"""A stand-alone streaming write for the sink's speculation test: a driver of its own on a
standalone Spark cluster whose two workers are two hosts (127.0.0.1 and 127.0.0.2), with
speculation on and aggressive (one 1-core executor per worker).

Usage: python speculation_app.py CONFIG_JSON, a file with ``master`` (the cluster's URL),
``root`` (the repository, put on the executors' ``PYTHONPATH``), ``event_log`` (a directory),
``input`` (a directory of text files) and ``runs``: a list of ``{"name", "options",
"checkpoint", "signals"}``, each one streaming query (``Trigger.AvailableNow``) through
:func:`slow_format`, run one after the other.

The test hook (test code only: a subclass of the sink's writer registered under its own format
name, nothing in the product) slows Spark partition :data:`SLOW_PARTITION` deterministically:

- its first attempt produces one Arrow batch, waits until those records are on the cluster (in
  its open transaction, exactlyOnce), writes ``signals/slow-waiting`` and blocks until
  ``signals/copy-done`` exists; Spark sees a task far slower than the other one and launches a
  speculative copy of it on the other host (the only one without an attempt of the task);
- any later attempt waits for ``slow-waiting`` (so it starts its transaction while the first
  attempt has records in its own), writes the partition, then writes ``copy-done``.

Every attempt of every partition leaves ``signals/attempt-<partition>-<attempt>.json`` (its
Spark task id and stage), which the test matches with the speculative task of the event log.
The app prints ``RESULT <json>``: each run's error (``"none"``) and the seconds spent waiting
for the executors and in each run.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests import query_start
from tests.integration.sink_app import hooked_format, wait_on_cluster, write_text_files

DEADLINE = 240.0
SLOW_PARTITION = 0
SPECULATION = {
    "spark.speculation": "true",
    "spark.speculation.interval": "100ms",
    "spark.speculation.multiplier": "1.0",
    "spark.speculation.quantile": "0.5",
    "spark.speculation.minTaskRuntime": "500ms",
    # Spark 3.4+ speculates only "inefficient" tasks by default (a low rate of records read);
    # the blocked attempt read its shuffle input at once, so the gate is off.
    "spark.speculation.efficiency.enabled": "false",
}


def _wait_for(path: Path) -> bool:
    deadline = time.monotonic() + DEADLINE
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def slow_format(spark: Any, signals: Path, name: str) -> str:
    """Register the sink with the hook slowing Spark partition :data:`SLOW_PARTITION`'s first
    attempt (see the module's docstring) as format ``name``."""
    from pyspark import TaskContext

    from pyspark_dynamic_kafka.sink.writer import DynamicKafkaStreamWriter

    class SlowFirstAttemptWriter(DynamicKafkaStreamWriter):  # type: ignore[misc]
        def write(self, iterator: Iterator[Any]) -> Any:
            context = TaskContext.get()
            partition, attempt = context.partitionId(), context.attemptNumber()
            seen = {"task": context.taskAttemptId(), "stage": context.stageId()}
            (signals / f"attempt-{partition}-{attempt}.json").write_text(json.dumps(seen))
            if partition != SLOW_PARTITION:
                return super().write(iterator)
            if attempt == 0:
                return super().write(self._slow(iterator))
            if not _wait_for(signals / "slow-waiting"):
                raise RuntimeError("the first attempt never reached its wait")
            report = super().write(iterator)
            (signals / "copy-done").write_text(f"attempt {attempt} wrote the partition")
            return report

        def _slow(self, batches: Iterator[Any]) -> Iterator[Any]:
            first = next(batches, None)
            if first is None:
                return
            yield first
            route = self.task.route
            values = {str(v) for v in first.column("value").to_pylist()}
            wait_on_cluster(dict(route.properties), route.topic_of(None), values)
            (signals / "slow-waiting").write_text(f"{len(values)} records sent")
            _wait_for(signals / "copy-done")  # no copy: the test fails on the event log
            yield from batches

    return hooked_format(spark, name, SlowFirstAttemptWriter)


def _session(config: dict[str, Any]) -> Any:
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(config["master"])
        .appName("sink-speculation-app")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.executor.cores", "1")
        .config("spark.cores.max", "2")
        .config("spark.executor.memory", "512m")
        .config("spark.task.maxFailures", "4")
        .config("spark.locality.wait", "0")  # tasks go to any free core at once
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "50")
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", config["event_log"])
        .config("spark.eventLog.compress", "false")
        .config("spark.eventLog.rolling.enabled", "false")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.executorEnv.PYTHONPATH", config["root"])
    )
    for key, value in SPECULATION.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _await_executors(spark: Any) -> None:
    """Wait until both executors registered, so that the two tasks of a stage start at once,
    one on each host."""
    tracker = spark.sparkContext._jsc.sc().statusTracker()
    deadline = time.monotonic() + DEADLINE
    while len(tracker.getExecutorInfos()) < 3:  # the driver is listed too
        if time.monotonic() > deadline:
            raise TimeoutError("two executors never registered")
        time.sleep(0.2)


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text())
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    started = time.monotonic()
    spark = _session(config)
    _await_executors(spark)
    result: dict[str, Any] = {"errors": {}, "seconds": {}}
    result["seconds"]["executors"] = round(time.monotonic() - started, 1)
    for run in config["runs"]:
        run_started = time.monotonic()
        sink = slow_format(spark, Path(run["signals"]), f"dynamic_kafka_slow_{run['name']}")
        error = write_text_files(spark, config["input"], sink, run["options"], run["checkpoint"])
        result["errors"][run["name"]] = error
        result["seconds"][run["name"]] = round(time.monotonic() - run_started, 1)
    print(f"RESULT {json.dumps(result)}", flush=True)
    spark.stop()


if __name__ == "__main__":
    query_start.install()
    main()
