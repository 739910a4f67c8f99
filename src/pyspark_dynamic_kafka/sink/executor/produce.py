"""One task's rows -> records on its route's cluster, acknowledged before the task ends, with
the producer of the engine the driver planned for the cluster.

Columns are those of Spark's ``kafka`` sink: ``value`` (required), ``key``, ``topic``,
``partition``, ``headers`` (``array<struct<key: string, value: binary>>``); others are ignored,
as Spark's sink does. The producer is idempotent (no duplicate from librdkafka's own retries);
the task flushes and fails, naming the cluster and the topic, when a record is not acknowledged,
so a batch is written whole or its task retried (at least once). A task that wrote every record
leaves its producer, connected and with its producer id, to the next task of the worker on the
same cluster and properties (:func:`~pyspark_dynamic_kafka.kafka.pool.producer_pool`, closed after
:data:`PRODUCER_IDLE_MS` idle); a task that failed closes it. A stamped task has its own.

The producer is a :class:`~pyspark_dynamic_kafka.engines.roles.BatchProducer`, asked of
:func:`~pyspark_dynamic_kafka.engines.implementations.batch_producer` by the task's planned
engine (:attr:`~pyspark_dynamic_kafka.sink.executor.task.WriteTask.engine`, the option
``writer``): confluent-kafka's or the compiled core's. This module checks each batch's topics
against the route, hands the batches over, and words the producer's failures.

With ``dedupeHeaders=true`` each record also carries a :class:`Stamp`: the headers
``dynamic_kafka.sink``, ``dynamic_kafka.batch``, ``dynamic_kafka.partition`` and
``dynamic_kafka.sequence`` (decimal text, UTF-8), equal on every attempt of a deterministic
batch, so a reader drops a retried attempt's copies by keeping one record per stamp.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

import pyarrow as pa

from pyspark_dynamic_kafka.engines.implementations import CoreMissingError, batch_producer
from pyspark_dynamic_kafka.engines.roles import (
    STAMP_HEADERS,
    BatchProducer,
    GroupLender,
    ProduceFailure,
    TopicRoutes,
    stamp_headers,
)
from pyspark_dynamic_kafka.errors import WriteError
from pyspark_dynamic_kafka.kafka.config import redact_secrets
from pyspark_dynamic_kafka.kafka.pool import producer_pool
from pyspark_dynamic_kafka.sink.executor.task import WriteReport, WriteTask

__all__ = [
    "PRODUCER_IDLE_MS",
    "STAMP_HEADERS",
    "Stamp",
    "check_flushed",
    "failure",
    "open_producer",
    "produce_batches",
    "producing",
    "send_all",
]

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Stamp:
    """What identifies a task's records across its attempts: its dedupe headers, less the row's
    sequence (``sink_id`` the ``sinkId`` option, ``batch`` the micro-batch id or a ``df.write``'s
    id drawn once on the driver, ``partition`` the task's Spark partition)."""

    sink_id: str
    batch: str
    partition: int

    def headers(self, sequence: int) -> list[tuple[str, bytes]]:
        """The dedupe headers of the task's ``sequence``-th row (from 0)."""
        return stamp_headers((self.sink_id, self.batch, self.partition), sequence)


def failure(task: WriteTask, what: str, topic: str | None, cause: object) -> WriteError:
    """A :class:`WriteError` naming the route's cluster (and ``topic``), secrets masked."""
    route = task.route
    where = f"cluster {route.cluster_id!r}"
    if topic:
        where = f"topic {topic!r} on {where}"
    text = redact_secrets(f"{what} {where} (stream {route.stream_id!r}): {cause}", route.properties)
    return WriteError(redact_secrets(text, task.kafka_properties))


def open_producer(
    task: WriteTask,
    properties: dict[str, str],
    stamp: Stamp | None,
    what: str,
    lender: GroupLender | None = None,
) -> BatchProducer:
    """The producer of ``task``'s planned engine with ``properties`` (and ``stamp``'s headers,
    if any; ``lender`` as
    :func:`~pyspark_dynamic_kafka.engines.implementations.batch_producer`'s).

    Raises
    ------
    WriteError
        ``what`` the cluster, when librdkafka refuses the properties; or the compiled core is
        not installed on this worker.
    """
    carried = None if stamp is None else (stamp.sink_id, stamp.batch, stamp.partition)
    with _opening(task, what):
        return batch_producer(task.engine, properties, carried, lender)


@contextlib.contextmanager
def _opening(task: WriteTask, what: str) -> Iterator[None]:
    """A producer's creation failures as :func:`open_producer` words them."""
    try:
        yield
    except CoreMissingError:
        raise WriteError(
            f"Cluster '{task.route.cluster_id}' was planned for the native writer, but this "
            "Python worker has no pyspark-dynamic-kafka-core: install it on the executors or "
            "set writer=python."
        ) from None
    except ProduceFailure as exc:
        raise failure(task, what, None, exc.reason) from None


#: How long an atLeastOnce producer waits in its worker's pool for the next task (ms).
PRODUCER_IDLE_MS = 60_000


@functools.cache
def _pooled(engine: str) -> Callable[[str, Mapping[str, str]], BatchProducer]:
    """The pool's factory of unstamped producers on ``engine`` (one object per engine: the
    factory is part of a pooled producer's key)."""

    def make(cluster_id: str, properties: Mapping[str, str]) -> BatchProducer:
        return batch_producer(engine, properties, None)

    return make


@contextlib.contextmanager
def producing(task: WriteTask, what: str) -> Iterator[None]:
    """The producer's failures as a :class:`WriteError` naming the cluster (and the topic)."""
    try:
        yield
    except ProduceFailure as exc:
        raise failure(task, what, exc.topic, exc.reason) from None


def _topics(task: WriteTask, batch: pa.RecordBatch) -> tuple[str | None, TopicRoutes]:
    """Where the batch's rows go, as a producer's ``send`` takes them (``topic``, ``topics``:
    the ``topic`` column's values in the order they first appear); every ``topic`` value is
    checked first, in the order of a set of them, so a row outside the route fails the batch
    before any record is sent. A batch without rows has no row without a topic."""
    route = task.route
    if task.topic is not None:
        return route.topic_of(task.topic), ()
    index = batch.schema.get_field_index("topic")
    if index < 0:
        if not batch.num_rows and route.default_topic is None:
            return None, ()
        return route.topic_of(None), ()
    import pyarrow.compute as pc  # on executors only: the sink's planner needs none

    # The distinct values in the order they first appear: a set of them iterates as a set of
    # the whole column does.
    given = pc.unique(batch.column(index)).to_pylist()
    known = {t: route.topic_of(t) for t in set(given)}
    return None, [(t, known[t]) for t in given]


def send_all(
    task: WriteTask, producer: BatchProducer, batches: Iterable[pa.RecordBatch]
) -> WriteReport:
    """Produce every row of ``batches`` with ``producer``, flush it, and check the deliveries.

    Raises
    ------
    WriteRouteError
        When a row's ``topic`` is outside the route (nothing of that Arrow batch is sent).
    WriteError
        When a record cannot be sent or is not acknowledged within the flush timeout (the
        message names the cluster and the topic, never a secret), or a batch has no ``value``
        column.
    """
    # What a pooled producer's earlier tasks wrote (copies: a producer may update its own).
    before_rows, before_sizes = (dict(counts) for counts in producer.deliveries()[:2])
    for batch in batches:
        topic, topics = _topics(task, batch)
        with producing(task, "Cannot produce to"):
            producer.send(batch, topic, topics)
            if producer.failed():
                break
    # message.timeout.ms is the flush timeout: records fail (naming their topic) before the
    # flush gives up (its margin, the producer's), which it does only when librdkafka hangs.
    with producing(task, "Cannot produce to"):
        left = producer.flush(task.flush_timeout_ms)
        rows, sizes, error = producer.deliveries()
    topic, reason = (None, None) if error is None else error
    check_flushed(task, left, topic, reason)
    rows = {t: n - before_rows.get(t, 0) for t, n in rows.items() if n > before_rows.get(t, 0)}
    sizes = {t: n - before_sizes.get(t, 0) for t, n in sizes.items() if t in rows}
    return WriteReport(task.route.cluster_id, rows, False, sizes)


def check_flushed(task: WriteTask, left: int, topic: str | None, error: object | None) -> None:
    """After the flush: fail on the first record not written (``error``, on ``topic``) or on
    ``left`` records not acknowledged.

    Raises
    ------
    WriteError
        Naming the cluster (and the topic), never a secret.
    """
    if error is not None:
        raise failure(task, "A record was not written to", topic, error)
    if left:
        raise failure(
            task,
            f"{left} record(s) were not acknowledged within {task.flush_timeout_ms} ms "
            "(kafkaProducer.flushTimeoutMs) by",
            None,
            "is the cluster reachable?",
        )


def produce_batches(
    task: WriteTask, batches: Iterable[pa.RecordBatch], stamp: Stamp | None = None
) -> WriteReport:
    """atLeastOnce: produce every row of ``batches`` to ``task``'s route with an idempotent
    producer (with ``stamp``'s headers, if any) and wait for the acknowledgements (the errors
    of :func:`send_all`). Unstamped, the producer comes from the worker's pool and goes back to
    it when every record was written."""
    properties = task.producer_properties()
    what, cluster_id = "Cannot create a producer for", task.route.cluster_id
    if stamp is None:
        factory = _pooled(task.engine)
        with _opening(task, what):
            producer = producer_pool().acquire(cluster_id, properties, factory=factory)
    else:
        producer = open_producer(task, properties, stamp, what)
    written = False
    try:
        report = send_all(task, producer, batches)
        written = True
    finally:
        if written and stamp is None:
            producer_pool().release(
                cluster_id, properties, producer, True, PRODUCER_IDLE_MS, factory=factory
            )
        else:
            # Destroyed now, not when an error's traceback lets go of it: a producer left
            # alive goes on reconnecting to its cluster (a stopped one's port may be another's).
            producer.close()
    _LOG.debug("wrote %s to cluster %r", report.rows, task.route.cluster_id)
    return report
