"""The native write path: the compiled core produces a task's Arrow batches to librdkafka.

The core's ``Producer`` reads the sink's columns straight from the Arrow batches and counts the
delivery reports in Rust, so no Python object is made per record. Whether it or confluent-kafka
(:mod:`~pyspark_dynamic_kafka.sink.executor.produce`) writes a cluster (the option ``writer``)
the driver decides once per write (:func:`~pyspark_dynamic_kafka.engines.choice.write_engine`);
the task carries the decision in
:attr:`~pyspark_dynamic_kafka.sink.executor.task.WriteTask.engine`. Both guarantees:
atLeastOnce (:func:`produce_native`) and exactlyOnce's transactions (:class:`NativeTransaction`).
Semantics, errors and the :class:`~pyspark_dynamic_kafka.sink.executor.task.WriteReport` are
those of the Python path.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from pyspark_dynamic_kafka.engines.implementations import CoreMissingError, core_producer
from pyspark_dynamic_kafka.engines.roles import BatchProducer, ProduceFailure, TopicRoutes
from pyspark_dynamic_kafka.errors import WriteError
from pyspark_dynamic_kafka.sink.executor.markers import progress_group
from pyspark_dynamic_kafka.sink.executor.produce import Stamp, check_flushed, failure
from pyspark_dynamic_kafka.sink.executor.task import WriteReport, WriteTask
from pyspark_dynamic_kafka.sink.executor.transaction import transaction_properties

__all__ = ["NativeTransaction", "produce_native"]

_LOG = logging.getLogger(__name__)
_FLUSH_MARGIN_MS = 10_000


def _producer(task: WriteTask, properties: dict[str, str], stamp: Stamp | None) -> BatchProducer:
    carried = None if stamp is None else (stamp.sink_id, stamp.batch, stamp.partition)
    try:
        return core_producer(properties, carried)
    except CoreMissingError:
        raise WriteError(
            f"Cluster '{task.route.cluster_id}' was planned for the native writer, but this "
            "Python worker has no pyspark-dynamic-kafka-core: install it on the executors or "
            "set writer=python."
        ) from None
    except ProduceFailure as exc:
        raise failure(task, "Cannot create a producer for", None, exc.reason) from None


@contextlib.contextmanager
def _producing(task: WriteTask, what: str) -> Iterator[None]:
    """The core's failures as the Python path's :class:`WriteError` (cluster, topic named)."""
    try:
        yield
    except ProduceFailure as exc:
        raise failure(task, what, exc.topic, exc.reason) from None


def _topics(task: WriteTask, batch: pa.RecordBatch) -> tuple[str | None, TopicRoutes]:
    """Where the batch's rows go, as the producer's ``send`` takes it (``topic``, ``topics``);
    every ``topic`` value is checked first, so a row outside the route fails the batch before
    any record is sent."""
    route = task.route
    if task.topic is not None:
        return route.topic_of(task.topic), ()
    index = batch.schema.get_field_index("topic")
    if index < 0:
        return route.topic_of(None), ()
    given = pc.unique(batch.column(index)).to_pylist()
    return None, [(t, route.topic_of(t)) for t in given]


def _send_all(
    task: WriteTask, producer: BatchProducer, batches: Iterable[pa.RecordBatch]
) -> WriteReport:
    """Produce every batch's rows with the core's ``producer``, flush, check the deliveries."""
    for batch in batches:
        topic, topics = _topics(task, batch)
        with _producing(task, "Cannot produce to"):
            producer.send(batch, topic, topics)
            if producer.failed():
                break
    with _producing(task, "Cannot produce to"):
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
    producer = _producer(task, task.producer_properties(), stamp)
    try:
        report = _send_all(task, producer, batches)
    finally:
        producer.close()
    _LOG.debug("wrote %s to cluster %r natively", report.rows, task.route.cluster_id)
    return report


class NativeTransaction:
    """exactlyOnce with the compiled core: a
    :class:`~pyspark_dynamic_kafka.engines.roles.Transaction` for
    :func:`~pyspark_dynamic_kafka.sink.executor.transaction.produce_transaction` (same
    ``transactional.id``, progress marker and skip; the markers are read with confluent-kafka)."""

    def __init__(self, task: WriteTask, partition: int, stamp: Stamp | None) -> None:
        self.task, self.partition = task, partition
        self.timeout = task.flush_timeout_ms
        properties = transaction_properties(task, partition)
        self.producer = _producer(task, properties, stamp)
        try:
            with _producing(task, "Cannot start a transaction on"):
                self.producer.init_transactions(self.timeout)
        except BaseException:
            self.producer.close()
            raise

    def begin(self) -> None:
        with _producing(self.task, "Cannot start a transaction on"):
            self.producer.begin_transaction()

    def write(self, batches: Iterable[pa.RecordBatch]) -> WriteReport:
        return _send_all(self.task, self.producer, batches)

    def commit(self, batch_id: int, metadata: str) -> None:
        task = self.task
        with _producing(task, "Cannot commit the transaction on"):
            group = progress_group(task.sink_id or "", self.partition)
            for topic, partition in task.route.marker_places:  # one transaction: all or none
                marker = (topic, partition, batch_id)
                self.producer.send_offset(group, marker, metadata, self.timeout)
            self.producer.commit_transaction(self.timeout)

    def abort(self) -> None:
        with contextlib.suppress(ProduceFailure):
            self.producer.abort_transaction(self.timeout)

    def close(self) -> None:
        self.producer.close()
