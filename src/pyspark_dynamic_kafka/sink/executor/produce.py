"""One task's rows -> records on its route's cluster, acknowledged before the task ends.

Columns are those of Spark's ``kafka`` sink: ``value`` (required), ``key``, ``topic``,
``partition``, ``headers`` (``array<struct<key: string, value: binary>>``); others are ignored,
as Spark's sink does. The producer is idempotent (no duplicate from librdkafka's own retries);
the task flushes and fails, naming the cluster and the topic, when a record is not acknowledged,
so a batch is written whole or its task retried (at least once).

With ``dedupeHeaders=true`` each record also carries a :class:`Stamp`: the headers
``dynamic_kafka.sink``, ``dynamic_kafka.batch``, ``dynamic_kafka.partition`` and
``dynamic_kafka.sequence`` (decimal text, UTF-8), equal on every attempt of a deterministic
batch, so a reader drops a retried attempt's copies by keeping one record per stamp.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from confluent_kafka import KafkaError, KafkaException, Message, Producer

from pyspark_dynamic_kafka.errors import WriteError
from pyspark_dynamic_kafka.kafka.config import redact_secrets
from pyspark_dynamic_kafka.sink.executor.task import WriteReport, WriteTask

__all__ = [
    "STAMP_HEADERS",
    "Deliveries",
    "Stamp",
    "check_flushed",
    "failure",
    "produce_batches",
    "send_all",
]

_LOG = logging.getLogger(__name__)
_POLL_S = 0.1
_FLUSH_MARGIN_S = 10.0
#: The dedupe headers' keys, in the order a record carries them (after its own headers).
STAMP_HEADERS = (
    "dynamic_kafka.sink",
    "dynamic_kafka.batch",
    "dynamic_kafka.partition",
    "dynamic_kafka.sequence",
)


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
        values = (self.sink_id, self.batch, str(self.partition), str(sequence))
        return [(k, v.encode()) for k, v in zip(STAMP_HEADERS, values, strict=True)]


class Deliveries:
    """Counts acknowledged records and keeps the first failure."""

    def __init__(self) -> None:
        self.rows: dict[str, int] = {}
        self.topic_bytes: dict[str, int] = {}
        self.error: KafkaError | None = None
        self.error_topic: str | None = None

    def __call__(self, error: KafkaError | None, message: Message) -> None:
        topic = str(message.topic())
        if error is not None:
            if self.error is None:
                self.error, self.error_topic = error, topic
            return
        self.rows[topic] = self.rows.get(topic, 0) + 1
        size = len(message.value() or b"") + len(message.key() or b"")
        self.topic_bytes[topic] = self.topic_bytes.get(topic, 0) + size

    def report(self, cluster_id: str, skipped: bool = False) -> WriteReport:
        """The commit message of the task."""
        return WriteReport(cluster_id, self.rows, skipped, self.topic_bytes)


def _column(batch: pa.RecordBatch, name: str) -> list[Any] | None:
    index = batch.schema.get_field_index(name)
    return None if index < 0 else batch.column(index).to_pylist()


def _rows(
    task: WriteTask, batch: pa.RecordBatch, stamp: Stamp | None, first: int
) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(topic, produce keyword arguments)`` of each row (the ``first``-th of the task first);
    every topic is checked first, so a row outside the route fails the batch before any of its
    records is sent."""
    values = _column(batch, "value")
    if values is None:
        raise WriteError("The rows have no 'value' column: it is required (binary or string).")
    count = len(values)
    keys = _column(batch, "key") or [None] * count
    if task.topic is not None:
        topics = [task.route.topic_of(task.topic)] * count
    else:
        given = _column(batch, "topic") or [None] * count
        known = {t: task.route.topic_of(t) for t in set(given)}
        topics = [known[t] for t in given]
    partitions = _column(batch, "partition") or [None] * count
    headers = _column(batch, "headers") or [None] * count
    for i in range(count):
        kwargs: dict[str, Any] = {"value": values[i], "key": keys[i]}
        if partitions[i] is not None:
            kwargs["partition"] = partitions[i]
        own = [(h["key"], h["value"]) for h in headers[i] or ()]
        if stamp is not None:
            own += stamp.headers(first + i)
        if own:
            kwargs["headers"] = own
        yield topics[i], kwargs


def _send(producer: Producer, topic: str, kwargs: dict[str, Any], on_delivery: Any) -> None:
    while True:
        try:
            producer.produce(topic, on_delivery=on_delivery, **kwargs)
            return
        except BufferError:  # the local queue is full: serve deliveries, then retry
            producer.poll(_POLL_S)


def failure(task: WriteTask, what: str, topic: str | None, cause: object) -> WriteError:
    """A :class:`WriteError` naming the route's cluster (and ``topic``), secrets masked."""
    route = task.route
    where = f"cluster {route.cluster_id!r}"
    if topic:
        where = f"topic {topic!r} on {where}"
    text = redact_secrets(f"{what} {where} (stream {route.stream_id!r}): {cause}", route.properties)
    return WriteError(redact_secrets(text, task.kafka_properties))


@contextlib.contextmanager
def _producing(task: WriteTask, topic: str | None) -> Iterator[None]:
    """Turn the producer's errors into a :class:`WriteError` naming the cluster (and ``topic``).

    A fatal error (a transactional producer fenced by a newer attempt) raised while
    confluent-kafka serves delivery callbacks surfaces as a ``SystemError``: "returned a result
    with an exception set", whose cause is the ``KafkaException`` (that one is named), or, at
    times, "returned NULL without setting an exception" (confluent-kafka 2.16 lost it; its
    text is named). A ``SystemError`` caused by anything else (our own callback) is raised.
    """
    try:
        yield
    except KafkaException as exc:
        raise failure(task, "Cannot produce to", topic, exc) from None
    except SystemError as exc:
        cause = exc.__cause__ or exc.__context__
        if cause is not None and not isinstance(cause, KafkaException):
            raise
        raise failure(task, "Cannot produce to", topic, cause or exc) from None


def send_all(
    task: WriteTask,
    producer: Producer,
    batches: Iterable[pa.RecordBatch],
    stamp: Stamp | None = None,
) -> Deliveries:
    """Produce every row of ``batches`` with ``producer`` (with ``stamp``'s headers, if any)
    and flush it.

    Raises
    ------
    WriteRouteError
        When a row's ``topic`` is outside the route (nothing of that Arrow batch is sent).
    WriteError
        When a record cannot be sent or is not acknowledged within the flush timeout; the
        message names the cluster and the topic, never a secret.
    """
    deliveries = Deliveries()
    sequence = 0
    for batch in batches:
        rows = list(_rows(task, batch, stamp, sequence))
        sequence += len(rows)
        for topic, kwargs in rows:
            with _producing(task, topic):
                _send(producer, topic, kwargs, deliveries)
            if deliveries.error is not None:
                break
        with _producing(task, None):
            producer.poll(0)
        if deliveries.error is not None:
            break
    # message.timeout.ms is the flush timeout: records fail (naming their topic) before the
    # flush gives up, which it does only when librdkafka itself hangs.
    with _producing(task, None):
        left = producer.flush(task.flush_timeout_ms / 1000.0 + _FLUSH_MARGIN_S)
    check_flushed(task, left, deliveries.error_topic, deliveries.error)
    return deliveries


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
    of :func:`send_all`)."""
    try:
        producer = Producer(task.producer_properties())
    except KafkaException as exc:
        raise failure(task, "Cannot create a producer for", None, exc) from None
    try:
        deliveries = send_all(task, producer, batches, stamp)
    finally:
        # Destroyed now, not when an error's traceback lets go of it: a producer left alive
        # goes on reconnecting to its cluster (a stopped one's port may be another's by then).
        producer.close()
    _LOG.debug("wrote %s to cluster %r", deliveries.rows, task.route.cluster_id)
    return deliveries.report(task.route.cluster_id)
