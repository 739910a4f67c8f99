"""The native write path: the compiled core produces a task's Arrow batches to librdkafka.

The core's ``Producer`` reads the sink's columns straight from the Arrow batches and counts the
delivery reports in Rust, so no Python object is made per record. Whether it or confluent-kafka
(:mod:`~pyspark_dynamic_kafka.sink.executor.produce`) writes a cluster (the option ``writer``)
the driver decides once per write (:func:`~pyspark_dynamic_kafka.kafka.engine.write_engine`);
the task carries the decision in
:attr:`~pyspark_dynamic_kafka.sink.executor.task.WriteTask.engine`. Both guarantees:
atLeastOnce (:func:`produce_native`) and exactlyOnce's transactions (:func:`transaction_native`).
Semantics, errors and the :class:`~pyspark_dynamic_kafka.sink.executor.task.WriteReport` are
those of the Python path.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pyspark_dynamic_kafka.errors import WriteError
from pyspark_dynamic_kafka.kafka.engine import core
from pyspark_dynamic_kafka.sink.executor.produce import Stamp, check_flushed, failure
from pyspark_dynamic_kafka.sink.executor.task import WriteReport, WriteTask
from pyspark_dynamic_kafka.sink.executor.transaction import (
    MARKER,
    progress_group,
    run_transaction,
    transaction_properties,
)

__all__ = ["produce_native", "transaction_native"]

_LOG = logging.getLogger(__name__)
_FLUSH_MARGIN_MS = 10_000


def _module(task: WriteTask) -> Any:
    module = core()
    if module is None:
        raise WriteError(
            f"Cluster '{task.route.cluster_id}' was planned for the native writer, but this "
            "Python worker has no pyspark-dynamic-kafka-core: install it on the executors or "
            "set writer=python."
        )
    return module


def _producer(module: Any, task: WriteTask, properties: dict[str, str], stamp: Stamp | None) -> Any:
    carried = None if stamp is None else (stamp.sink_id, stamp.batch, stamp.partition)
    try:
        return module.Producer(sorted(properties.items()), carried)
    except module.WriteFailure as exc:
        raise failure(task, "Cannot create a producer for", None, exc.args[1]) from None


@contextlib.contextmanager
def _producing(module: Any, task: WriteTask, what: str) -> Iterator[None]:
    """The core's failures as the Python path's :class:`WriteError` (cluster, topic named)."""
    try:
        yield
    except module.WriteFailure as exc:
        topic, reason = exc.args
        raise failure(task, what, topic, reason) from None


def _topics(task: WriteTask, batch: pa.RecordBatch) -> dict[str, Any]:
    """Where the batch's rows go, as the core's ``send`` takes it; every ``topic`` value is
    checked first, so a row outside the route fails the batch before any record is sent."""
    route = task.route
    if task.topic is not None:
        return {"topic": route.topic_of(task.topic)}
    index = batch.schema.get_field_index("topic")
    if index < 0:
        return {"topic": route.topic_of(None)}
    given = pc.unique(batch.column(index)).to_pylist()
    return {"topics": [(t, route.topic_of(t)) for t in given]}


def _send_all(
    module: Any, task: WriteTask, producer: Any, batches: Iterable[pa.RecordBatch]
) -> WriteReport:
    """Produce every batch's rows with the core's ``producer``, flush, check the deliveries."""
    for batch in batches:
        where = _topics(task, batch)
        with _producing(module, task, "Cannot produce to"):
            producer.send(batch, **where)
            if producer.failed():
                break
    with _producing(module, task, "Cannot produce to"):
        left = producer.flush(task.flush_timeout_ms + _FLUSH_MARGIN_MS)
        rows, sizes, error = producer.deliveries()
    topic, reason = (None, None) if error is None else error
    check_flushed(task, left, topic, reason)
    return WriteReport(task.route.cluster_id, rows, False, sizes)


def produce_native(
    task: WriteTask, batches: Iterable[pa.RecordBatch], stamp: Stamp | None = None
) -> WriteReport:
    """atLeastOnce with the compiled core: as
    :func:`~pyspark_dynamic_kafka.sink.executor.produce.produce_batches`."""
    module = _module(task)
    producer = _producer(module, task, task.producer_properties(), stamp)
    try:
        report = _send_all(module, task, producer, batches)
    finally:
        producer.close()
    _LOG.debug("wrote %s to cluster %r natively", report.rows, task.route.cluster_id)
    return report


def transaction_native(
    task: WriteTask,
    batches: Iterable[pa.RecordBatch],
    batch_id: int,
    partition: int,
    stamp: Stamp | None = None,
) -> WriteReport:
    """exactlyOnce with the compiled core: as
    :func:`~pyspark_dynamic_kafka.sink.executor.transaction.produce_transaction` (same
    ``transactional.id``, progress marker and skip; the markers are read with confluent-kafka)."""
    module = _module(task)
    timeout = task.flush_timeout_ms
    producer = _producer(module, task, transaction_properties(task, partition), stamp)

    def begin() -> None:
        with _producing(module, task, "Cannot start a transaction on"):
            producer.begin_transaction()

    def write() -> WriteReport:
        report = _send_all(module, task, producer, batches)
        with _producing(module, task, "Cannot commit the transaction on"):
            marker = (task.route.marker_topic, 0, batch_id)
            producer.send_offset(progress_group(task, partition), *marker, MARKER, timeout)
            producer.commit_transaction(timeout)
        return report

    def abort() -> None:
        with contextlib.suppress(module.WriteFailure):
            producer.abort_transaction(timeout)

    try:
        with _producing(module, task, "Cannot start a transaction on"):
            producer.init_transactions(timeout)
        return run_transaction(task, batch_id, partition, begin, write, abort)
    finally:
        producer.close()
