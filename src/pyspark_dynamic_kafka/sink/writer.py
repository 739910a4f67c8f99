"""Spark's writer API adapted to the sink: ``df.write`` and ``writeStream`` to ``dynamic_kafka``.

Both writers take Arrow batches (:class:`DataSourceArrowWriter`,
:class:`DataSourceStreamArrowWriter`; on PySpark 4.0 the stream writer takes rows, made into
batches by :mod:`.rows`). The route is resolved when Spark builds the writer on the
driver (once per batch write, once per micro-batch) and travels inside the pickled writer to
every task, so all tasks and retries of a batch write to one cluster.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Collection, Iterator, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    StringType,
    StructType,
)

from pyspark_dynamic_kafka.avro.spark_types import spark_type
from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.events import log_event
from pyspark_dynamic_kafka.gcpause import executor_task_gc
from pyspark_dynamic_kafka.sink.config.options import AT_LEAST_ONCE, SinkOptions
from pyspark_dynamic_kafka.sink.driver.plan import ServiceFactory, plan_write
from pyspark_dynamic_kafka.sink.executor.avro_columns import encode_columns
from pyspark_dynamic_kafka.sink.executor.produce import Stamp, produce_batches
from pyspark_dynamic_kafka.sink.executor.task import WriteReport, WriteTask
from pyspark_dynamic_kafka.sink.executor.transaction import produce_transaction
from pyspark_dynamic_kafka.sink.metrics import query_of, record_batch, summarize
from pyspark_dynamic_kafka.sink.rows import StreamWriterBase, as_batches

__all__ = [
    "DynamicKafkaBatchWriter",
    "DynamicKafkaStreamWriter",
    "check_avro_columns",
    "check_columns",
]

_LOG = logging.getLogger(__name__)
_HEADERS = ArrayType(
    StructType().add("key", StringType()).add("value", BinaryType()), containsNull=True
)
_TEXT = (StringType(), BinaryType())
_COLUMNS: dict[str, tuple[tuple[DataType, ...], str]] = {
    "value": (_TEXT, "string or binary"),
    "key": (_TEXT, "string or binary"),
    "topic": ((StringType(),), "string"),
    "partition": ((IntegerType(),), "int"),
    "headers": ((_HEADERS,), "array<struct<key:string,value:binary>>"),
}


def _same(actual: DataType, expected: DataType) -> bool:
    if isinstance(expected, ArrayType):  # nullability of the elements does not matter
        return isinstance(actual, ArrayType) and _same(actual.elementType, expected.elementType)
    if isinstance(expected, StructType):
        return isinstance(actual, StructType) and [(f.name, f.dataType) for f in actual.fields] == [
            (f.name, f.dataType) for f in expected.fields
        ]
    return actual == expected


def check_columns(schema: StructType, avro: Collection[str] = ()) -> None:
    """Check the columns Spark's ``kafka`` sink defines: ``value`` required, each known column of
    its type (but the ``avro`` ones: ``key`` or ``value`` written as Avro, checked by
    :func:`check_avro_columns` once their schemas are known).

    Raises
    ------
    OptionsError
        Naming the column, its type and the expected one.
    """
    fields = {f.name.lower(): f for f in schema.fields}
    if "value" not in fields:
        raise OptionsError(
            "Writes to format dynamic_kafka need a 'value' column (string or binary); got "
            f"columns {', '.join(schema.fieldNames()) or 'none'}. Select or alias one as value."
        )
    for name, (types, shown) in _COLUMNS.items():
        found = fields.get(name)
        if name in avro:
            continue
        if found is not None and not any(_same(found.dataType, t) for t in types):
            raise OptionsError(
                f"Column {found.name!r} of a write to format dynamic_kafka must be {shown}, got "
                f"{found.dataType.simpleString()}. Cast it (e.g. CAST({found.name} AS STRING))."
            )


def _loose(data_type: DataType) -> Any:
    """A type's JSON with every nullability left out: a column may be nullable where its Avro
    schema is not (a null there fails that row, naming it)."""
    shape = data_type.jsonValue()

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            drop = ("nullable", "containsNull", "valueContainsNull", "metadata")
            return {k: strip(v) for k, v in node.items() if k not in drop}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(shape)


def check_avro_columns(schema: StructType, task: WriteTask) -> None:
    """Check that the ``value`` (``key``) column written as Avro is of its schema's Spark type,
    as ``from_avro`` gives it (nullability aside), for every topic's schema.

    Raises
    ------
    OptionsError
        Naming the column, its type, the schema's subject and the type expected.
    """
    fields = {f.name.lower(): f for f in schema.fields}
    for target in (task.value_avro, task.key_avro):
        found = None if target is None else fields.get(target.side)
        if target is None or found is None:
            continue
        for topic in target.schemas:
            expected = spark_type(json.loads(topic.schema)).data_type
            if _loose(found.dataType) != _loose(expected):
                raise OptionsError(
                    f"Column {found.name!r} is written as Avro ({target.side}Format=avro) with "
                    f"subject {topic.subject!r} (schema id {topic.schema_id} on cluster "
                    f"{task.route.cluster_id!r}), whose Spark type is "
                    f"{expected.simpleString()}; the column is "
                    f"{found.dataType.simpleString()}. Build the column of that type (field "
                    "names and types as from_avro gives them for the schema)."
                )


def _plan(options: SinkOptions, schema: StructType, factory: ServiceFactory) -> WriteTask:
    avro = [a.side for a in (options.value_avro, options.key_avro) if a is not None]
    check_columns(schema, avro)
    task = plan_write(options, factory)
    check_avro_columns(schema, task)
    return task


def _log_commit(messages: Sequence[WriterCommitMessage | None], batch_id: int | None) -> None:
    """Log what the batch wrote and, for a streaming query, hand it to the monitoring listener
    (:mod:`~pyspark_dynamic_kafka.sink.metrics`)."""
    write = summarize(-1 if batch_id is None else batch_id, messages)
    rows = {f"{write.cluster_id}/{topic}": count for topic, count in write.rows.items()}
    log_event(
        _LOG, logging.INFO, "write_committed", batch=batch_id, rows=rows, skipped=write.skipped
    )
    query_id = query_of(messages)
    if batch_id is not None and query_id is not None:
        try:
            record_batch(query_id, write)
        except OSError as exc:  # metrics must never fail a committed batch
            _LOG.warning("Could not record the write metrics of batch %s: %s", batch_id, exc)


def _task_position() -> tuple[int | None, int, str | None]:
    """The micro-batch id, the Spark partition and the streaming query of the running task
    (executor side); no micro-batch nor query outside ``writeStream``."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        return None, 0, None
    batch = context.getLocalProperty("streaming.sql.batchId")
    query = context.getLocalProperty("sql.streaming.queryId")
    return None if batch is None else int(batch), context.partitionId(), query or None


def _stamp(task: WriteTask, batch: object, partition: int) -> Stamp | None:
    """The task's dedupe headers with ``dedupeHeaders=true`` (which needs ``sinkId``)."""
    if not task.dedupe_headers or task.sink_id is None:
        return None
    return Stamp(task.sink_id, str(batch), partition)


def _produce(
    task: WriteTask, batches: Iterator[pa.RecordBatch], stamp: Stamp | None = None
) -> WriteReport:
    """atLeastOnce with the producer of the engine the driver chose (the compiled core's or
    confluent-kafka's)."""
    return produce_batches(task, encode_columns(task, batches), stamp)


class DynamicKafkaBatchWriter(DataSourceArrowWriter):  # type: ignore[misc]
    """``df.write``: each task produces its rows to the route resolved when the write started."""

    def __init__(self, options: SinkOptions, schema: StructType, factory: ServiceFactory) -> None:
        if options.delivery_guarantee != AT_LEAST_ONCE:
            raise OptionsError(
                f"deliveryGuarantee={options.delivery_guarantee} is for writeStream only: a "
                "df.write is atLeastOnce (remove the option)."
            )
        self.task = _plan(options, schema, factory)
        #: The ``dynamic_kafka.batch`` header of this write's records: one id per df.write.
        self.write_id = f"write-{uuid.uuid4().hex}"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        """Produce one partition's rows; returns once the cluster acknowledged them all."""
        stamp = None
        if self.task.dedupe_headers:
            stamp = _stamp(self.task, self.write_id, _task_position()[1])
        with executor_task_gc():  # see gcpause: the collector's walks, not the rows, cost most
            return _produce(self.task, iterator, stamp)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Every task's records are already acknowledged: log what was written."""
        _log_commit(messages, None)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Records of tasks that succeeded stay written (at least once)."""
        log_event(_LOG, logging.WARNING, "write_aborted", batch=None)


class DynamicKafkaStreamWriter(StreamWriterBase):  # type: ignore[misc]
    """``writeStream``: built by Spark before each micro-batch, so each micro-batch resolves its
    own route and all its tasks write to that one cluster."""

    def __init__(self, options: SinkOptions, schema: StructType, factory: ServiceFactory) -> None:
        self.task = _plan(options, schema, factory)
        self.schema = schema

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        """Produce one partition's rows, acknowledged (and committed, exactlyOnce) on return."""
        with executor_task_gc():  # see gcpause: the collector's walks, not the rows, cost most
            return self._write(iterator)

    def _write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        iterator = as_batches(iterator, self.schema)  # PySpark 4.0 gives rows
        batch_id, partition, query_id = _task_position()
        if not (self.task.exactly_once or self.task.dedupe_headers):
            return replace(_produce(self.task, iterator), query_id=query_id)
        if batch_id is None:
            raise OptionsError(
                "The micro-batch id is missing from the task (Spark sets it on writeStream "
                "tasks): deliveryGuarantee=exactlyOnce and dedupeHeaders need it."
            )
        if self.task.exactly_once and query_id is None:
            raise OptionsError(
                "The streaming query id is missing from the task (Spark sets it on writeStream "
                "tasks): deliveryGuarantee=exactlyOnce needs it for its progress markers."
            )
        stamp = _stamp(self.task, batch_id, partition)
        if not self.task.exactly_once:
            return replace(_produce(self.task, iterator, stamp), query_id=query_id)
        started = time.monotonic()
        batches = encode_columns(self.task, iterator)
        report = produce_transaction(self.task, batches, batch_id, partition, stamp, query_id)
        elapsed = round((time.monotonic() - started) * 1000)
        return replace(report, query_id=query_id, transaction_ms=elapsed)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Every task's records are already acknowledged: log what was written."""
        _log_commit(messages, batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Records of tasks that succeeded stay written (at least once)."""
        log_event(_LOG, logging.WARNING, "write_aborted", batch=batchId)
