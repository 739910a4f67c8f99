"""A stand-alone streaming write for the sink's fault tests, in a Spark session of its own
(``local[2,4]``: its tasks are retried, which the suite's ``local[2]`` session never does).

Usage: python sink_app.py CONFIG_JSON, a file with ``input`` (a directory of text files, one
micro-batch per file), ``checkpoint``, ``options`` (the sink's), ``fail_dir`` and
``fail_values``. The query writes through :func:`faulty_format`, the sink with two test hooks:

- the first attempt of the task whose rows hold a value of ``fail_values`` waits until the
  records it has produced so far are on the cluster (in its open transaction, exactlyOnce),
  then fails (a marker file in ``fail_dir`` remembers the attempt), and the task is retried.
  A stamped atLeastOnce producer is flushed first: the direct produce path has no thread of its
  own and sends a batch open shorter than ``linger.ms`` only at its next call, which the hook
  holds back;
- with ``hang_after_commit`` (``{"batch": B, "signal": PATH}``), the driver-side ``commit`` of
  micro-batch B writes PATH and then blocks: B's tasks have committed, Spark has not recorded B
  in its commit log, and the test kills the driver there (the app exits by itself after
  ``DEADLINE`` otherwise).

The query runs with ``Trigger.AvailableNow`` until the input is written, then the app prints
``ERROR <message or none>`` and exits 0 (the marker files say which failures happened).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests import query_start

from pyspark_dynamic_kafka.testing import local_spark_session

DEADLINE = 600.0


def wait_on_cluster(properties: dict[str, str], topic: str, values: set[str]) -> None:
    """Poll ``topic`` (read_uncommitted) until every one of ``values`` is on it."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": properties["bootstrap.servers"],
            "group.id": "sink-app-fault",
            "enable.auto.commit": "false",
            "isolation.level": "read_uncommitted",
        }
    )
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        missing, deadline = set(values), time.monotonic() + DEADLINE
        while missing:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(missing)} records never reached {topic}")
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                missing.discard((message.value() or b"").decode())
    finally:
        consumer.close()


def hooked_format(spark: Any, name: str, writer: type) -> str:
    """Register the sink as format ``name`` whose stream writer is ``writer`` (a subclass of the
    sink's, carrying test hooks); returns ``name``."""
    from pyspark_dynamic_kafka.datasource import DynamicKafkaDataSource
    from pyspark_dynamic_kafka.metadata.factory import create_metadata_service
    from pyspark_dynamic_kafka.sink.config.options import parse_sink_options

    class HookedSource(DynamicKafkaDataSource):  # type: ignore[misc]
        @classmethod
        def name(cls) -> str:
            return name

        def streamWriter(self, schema: Any, overwrite: bool) -> Any:
            return writer(parse_sink_options(self.options), schema, create_metadata_service)

    spark.dataSource.register(HookedSource)
    return name


@contextlib.contextmanager
def _keeping_producers(opened: list[Any]) -> Iterator[None]:
    """Append to ``opened`` each stamped atLeastOnce producer the task opens meanwhile."""
    from pyspark_dynamic_kafka.sink.executor import produce

    original = produce.open_producer

    def keeping(*args: Any, **kwargs: Any) -> Any:
        producer = original(*args, **kwargs)
        opened.append(producer)
        return producer

    produce.open_producer = keeping
    try:
        yield
    finally:
        produce.open_producer = original


def faulty_format(spark: Any, config: dict[str, Any]) -> str:
    """Register the sink with the test hooks of ``config``; returns its format name."""
    from pyspark_dynamic_kafka.sink.writer import DynamicKafkaStreamWriter

    fail_dir, fail_values = Path(config["fail_dir"]), set(config["fail_values"])
    hang = config.get("hang_after_commit") or {"batch": -1, "signal": ""}

    class FaultyWriter(DynamicKafkaStreamWriter):  # type: ignore[misc]
        def write(self, iterator: Iterator[Any]) -> Any:
            self._opened: list[Any] = []
            with _keeping_producers(self._opened):
                return super().write(self._failing(iterator))

        def _failing(self, batches: Iterator[Any]) -> Iterator[Any]:
            sent: set[str] = set()
            for batch in batches:
                values = [str(v) for v in batch.column("value").to_pylist()]
                hits = [v for v in values if v in fail_values and not (fail_dir / v).exists()]
                if hits:
                    for producer in self._opened:
                        producer.flush(int(DEADLINE * 1000))
                    route = self.task.route
                    topic = self.task.topic or route.topic_of(None)
                    wait_on_cluster(dict(route.properties), topic, sent)
                    (fail_dir / hits[0]).write_text(f"failed once after {len(sent)} records")
                    raise RuntimeError(f"injected failure at row {hits[0]}")
                sent.update(values)
                yield batch

        def commit(self, messages: Any, batchId: int) -> None:
            super().commit(messages, batchId)
            if batchId == int(hang["batch"]):
                Path(hang["signal"]).write_text(f"batch {batchId} committed by its tasks")
                time.sleep(DEADLINE)  # the test kills the driver meanwhile
                os._exit(3)

    return hooked_format(spark, "dynamic_kafka_faulty", FaultyWriter)


def write_text_files(
    spark: Any, source: str, sink: str, options: dict[str, str], checkpoint: str
) -> str:
    """Stream the text files of ``source`` (one micro-batch per file, two Spark partitions,
    each line a record's key and value) to format ``sink`` until all are written
    (``Trigger.AvailableNow``); the query's error, ``"none"`` when it ended well."""
    query = (
        spark.readStream.format("text")
        .option("maxFilesPerTrigger", "1")
        .load(source)
        .repartition(2)
        .selectExpr("value AS key", "value")
        .writeStream.format(sink)
        .options(**options)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination()
    except Exception as exc:  # the test reads it from the output
        return str(exc).replace("\n", " ")[:20000]
    return "none"


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text())
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = local_spark_session(
        "sink-fault-app",
        max_failures=4,
        **{"spark.sql.execution.arrow.maxRecordsPerBatch": "50"},
    )
    sink = faulty_format(spark, config)
    error = write_text_files(spark, config["input"], sink, config["options"], config["checkpoint"])
    print(f"ERROR {error}", flush=True)
    spark.stop()


if __name__ == "__main__":
    query_start.install()
    main()
