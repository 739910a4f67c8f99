"""A stand-alone streaming write for the sink's fault tests, in a Spark session of its own
(``local[2,4]``: its tasks are retried, which the suite's ``local[2]`` session never does).

Usage: python sink_app.py CONFIG_JSON, a file with ``input`` (a directory of text files, one
micro-batch per file), ``checkpoint``, ``options`` (the sink's) and ``fail_dir``: the value of
each row goes through a UDF that raises once for the values listed in ``fail_values`` (a marker
file in ``fail_dir`` remembers the first attempt), so the task writing that row fails part-way
through its transaction and is retried.

The query runs with ``Trigger.AvailableNow`` until the input is written, then the app prints
``ERROR <message or none>`` and exits 0 (the marker files say which failures happened).

With ``hang_after_commit`` (``{"batch": B, "signal": PATH}``) the query writes through a
subclass of the sink whose driver-side ``commit`` of micro-batch B writes PATH and then blocks:
B's tasks have committed their transactions, Spark has not recorded B in its commit log, and
the test kills the driver there (the app exits by itself after ``DEADLINE`` otherwise).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from pyspark_dynamic_kafka.testing import local_spark_session

DEADLINE = 600.0


def hanging_format(spark: Any, batch: int, signal: str) -> str:
    """Register a sink whose ``commit`` of micro-batch ``batch`` signals, then blocks; its name."""
    from pyspark_dynamic_kafka.datasource import DynamicKafkaDataSource
    from pyspark_dynamic_kafka.metadata.factory import create_metadata_service
    from pyspark_dynamic_kafka.sink.config.options import parse_sink_options
    from pyspark_dynamic_kafka.sink.writer import DynamicKafkaStreamWriter

    class HangingWriter(DynamicKafkaStreamWriter):  # type: ignore[misc]
        def commit(self, messages: Any, batchId: int) -> None:
            super().commit(messages, batchId)
            if batchId == batch:
                Path(signal).write_text(f"batch {batchId} committed by its tasks")
                time.sleep(DEADLINE)  # the test kills the driver meanwhile
                os._exit(3)

    class HangingSource(DynamicKafkaDataSource):  # type: ignore[misc]
        @classmethod
        def name(cls) -> str:
            return "dynamic_kafka_hanging"

        def streamWriter(self, schema: Any, overwrite: bool) -> Any:
            options = parse_sink_options(self.options)
            return HangingWriter(options, schema, create_metadata_service)

    spark.dataSource.register(HangingSource)
    return HangingSource.name()


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text())
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = local_spark_session(
        "sink-fault-app",
        max_failures=4,
        **{"spark.sql.execution.arrow.maxRecordsPerBatch": "50"},
    )
    fail_dir = Path(config["fail_dir"])
    fail_values = set(config["fail_values"])

    from pyspark.sql.functions import udf

    @udf("string")  # type: ignore[misc]
    def fail_once(value: str) -> str:
        # Slow rows: the writing task has sent records of earlier rows when a row fails.
        time.sleep(0.005)
        if value in fail_values:
            marker = fail_dir / value
            if not marker.exists():
                marker.write_text("failed once")
                raise RuntimeError(f"injected failure at row {value}")
        return value

    sink = "dynamic_kafka"
    if "hang_after_commit" in config:
        hang = config["hang_after_commit"]
        sink = hanging_format(spark, int(hang["batch"]), hang["signal"])
    query = (
        spark.readStream.format("text")
        .option("maxFilesPerTrigger", "1")
        .load(config["input"])
        .repartition(2)  # before the UDF: it fails in the writing task, not in a map task
        .select(fail_once("value").alias("value"))
        .selectExpr("value AS key", "value")
        .writeStream.format(sink)
        .options(**config["options"])
        .option("checkpointLocation", config["checkpoint"])
        .trigger(availableNow=True)
        .start()
    )
    error = "none"
    try:
        query.awaitTermination()
    except Exception as exc:  # the test reads it from the output
        error = str(exc).replace("\n", " ")[:20000]
    print(f"ERROR {error}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
