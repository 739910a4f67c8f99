"""confluent-kafka's producer: the sink's Arrow batches handed to librdkafka row by row (a Python
object per record), the dedupe headers stamped and the delivery reports counted in Python, and
exactlyOnce's transactions.

:class:`PythonProducer` is the :class:`~.roles.BatchProducer` of a cluster planned on ``python``
(:mod:`.write_core`'s ``CoreProducer`` is the compiled core's). Its failures are the
engine-neutral :class:`~.roles.ProduceFailure`, its reason confluent-kafka's text (the
``KafkaException``'s or the failed delivery's ``KafkaError``'s), with three exceptions kept
from the sink's confluent-kafka path: :meth:`PythonProducer.begin_transaction` lets a
``KafkaException`` through as it is, a batch without a ``value`` column is a
:class:`~pyspark_dynamic_kafka.errors.WriteError` saying so, and a ``SystemError`` that
confluent-kafka raised for anything but a Kafka failure (a callback's own bug) is raised as it
is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from confluent_kafka import KafkaError, KafkaException, Message, Producer, TopicPartition

from pyspark_dynamic_kafka.engines.roles import (
    FLUSH_MARGIN_MS,
    CommittedOffset,
    GroupLender,
    ProduceFailure,
    TopicRoutes,
    stamp_headers,
)
from pyspark_dynamic_kafka.errors import WriteError

__all__ = ["Deliveries", "PythonProducer"]

_POLL_S = 0.1
_NO_VALUE = "The rows have no 'value' column: it is required (binary or string)."


class Deliveries:
    """Counts acknowledged records and keeps the first failure (confluent-kafka's delivery
    callback)."""

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


#: The producer setting that reports every record when false (the core's producer sets it too).
_REPORT_EVERY_RECORD = "delivery.report.only.error"


def _column(batch: pa.RecordBatch, name: str) -> list[Any] | None:
    index = batch.schema.get_field_index(name)
    return None if index < 0 else batch.column(index).to_pylist()


@contextlib.contextmanager
def _producing(topic: str | None) -> Iterator[None]:
    """confluent-kafka's failures while producing as :class:`ProduceFailure` (on ``topic``).

    A fatal error (a transactional producer fenced by a newer attempt) raised while
    confluent-kafka serves delivery callbacks surfaces as a ``SystemError``: "returned a result
    with an exception set", whose cause is the ``KafkaException`` (that one is the reason), or,
    at times, "returned NULL without setting an exception" (confluent-kafka 2.16 lost it; its
    text is the reason). A ``SystemError`` caused by anything else (our own callback) is raised.
    """
    try:
        yield
    except KafkaException as exc:
        raise ProduceFailure(topic, str(exc)) from None
    except SystemError as exc:
        cause = exc.__cause__ or exc.__context__
        if cause is not None and not isinstance(cause, KafkaException):
            raise
        raise ProduceFailure(topic, str(cause or exc)) from None


@contextlib.contextmanager
def _transacting() -> Iterator[None]:
    """A ``KafkaException`` of the producer's creation or of a transaction step as
    :class:`ProduceFailure` (no topic)."""
    try:
        yield
    except KafkaException as exc:
        raise ProduceFailure(None, str(exc)) from None


class PythonProducer:
    """confluent-kafka's producer of one cluster, from the parameters
    :func:`~.implementations.batch_producer` takes (``config``, ``stamp``: every record carries
    the stamp's headers). ``lender`` (exactlyOnce) makes the consumer that lends a group's
    metadata to :meth:`commit_transaction`'s offset commit; without it no offsets are committed.

    Raises
    ------
    ProduceFailure
        librdkafka refused the configuration (no topic).
    """

    def __init__(
        self,
        config: Mapping[str, str],
        stamp: tuple[str, str, int] | None,
        lender: GroupLender | None = None,
    ) -> None:
        # Every record is reported, whatever the properties say: the deliveries are counted
        # from the reports. confluent-kafka takes this property as a bool (a user's "true"
        # failed the producer's creation).
        with _transacting():
            self._producer = Producer({**config, _REPORT_EVERY_RECORD: False})
        self._stamp = stamp
        self._lender = lender
        self._deliveries = Deliveries()
        self._sequence = 0
        self._offsets: dict[str, list[TopicPartition]] = {}
        self._offsets_timeout_ms = 0
        self._transactional = False

    def _rows(
        self, batch: pa.RecordBatch, topic: str | None, topics: TopicRoutes
    ) -> list[tuple[str, dict[str, Any]]]:
        """``(topic, produce keyword arguments)`` of each row, numbered on from the rows sent
        before."""
        values = _column(batch, "value")
        if values is None:  # the sink's Python path's own error, not one naming the cluster
            raise WriteError(_NO_VALUE)
        count = len(values)
        keys = _column(batch, "key") or [None] * count
        if topic is not None:
            targets = [topic] * count
        else:
            known = dict(topics)
            targets = [known[t] for t in _column(batch, "topic") or [None] * count]
        partitions = _column(batch, "partition") or [None] * count
        headers = _column(batch, "headers") or [None] * count
        rows = []
        for i in range(count):
            kwargs: dict[str, Any] = {"value": values[i], "key": keys[i]}
            if partitions[i] is not None:
                kwargs["partition"] = partitions[i]
            own = [(h["key"], h["value"]) for h in headers[i] or ()]
            if self._stamp is not None:
                own += stamp_headers(self._stamp, self._sequence + i)
            if own:
                kwargs["headers"] = own
            rows.append((targets[i], kwargs))
        self._sequence += count
        return rows

    def send(
        self, batch: pa.RecordBatch, topic: str | None = None, topics: TopicRoutes = ()
    ) -> None:
        """Hand every row of ``batch`` to librdkafka: to ``topic`` when given, else to the topic
        ``topics`` maps the row's ``topic`` value to; stops early once a delivery failed."""
        deliveries = self._deliveries
        for target, kwargs in self._rows(batch, topic, topics):
            with _producing(target):
                while True:
                    try:
                        self._producer.produce(target, on_delivery=deliveries, **kwargs)
                        break
                    except BufferError:  # the local queue is full: serve deliveries, retry
                        self._producer.poll(_POLL_S)
            if deliveries.error is not None:
                break
        with _producing(None):
            self._producer.poll(0)

    def failed(self) -> bool:
        """Whether a delivery report failed."""
        return self._deliveries.error is not None

    def flush(self, timeout_ms: int) -> int:
        """Wait for the acknowledgements up to ``timeout_ms`` and
        :data:`~.roles.FLUSH_MARGIN_MS` more: the records still waiting."""
        with _producing(None):
            left: int = self._producer.flush(timeout_ms / 1000.0 + FLUSH_MARGIN_MS / 1000)
        return left

    def deliveries(self) -> tuple[dict[str, int], dict[str, int], tuple[str, str] | None]:
        """Records and key+value bytes per topic acknowledged so far, and the first failure as
        (topic, reason) or ``None``."""
        done = self._deliveries
        error = None if done.error is None else (str(done.error_topic), str(done.error))
        return done.rows, done.topic_bytes, error

    def init_transactions(self, timeout_ms: int) -> None:
        """Fence older producers of the configured ``transactional.id``, ending their
        transaction."""
        with _transacting():
            self._producer.init_transactions(timeout_ms / 1000.0)
        self._transactional = True

    def begin_transaction(self) -> None:
        """Begin a transaction (confluent-kafka's ``KafkaException`` raised as it is)."""
        self._offsets.clear()
        self._producer.begin_transaction()

    def send_offset(
        self, group: str, place: tuple[str, int, int], metadata: str, timeout_ms: int
    ) -> None:
        """Commit offset ``place[2]`` of (topic, partition) ``place[:2]`` with ``metadata`` for
        ``group`` inside the open transaction: sent with the commit, all of a group's offsets
        in one request."""
        topic, partition, offset = place
        marker = TopicPartition(topic, partition, offset, metadata=metadata)
        self._offsets.setdefault(group, []).append(marker)
        self._offsets_timeout_ms = timeout_ms

    def commit_transaction(self, timeout_ms: int) -> None:
        """Send the offsets of :meth:`send_offset` (each group's metadata lent by a consumer of
        the group) and commit the open transaction."""
        offsets, self._offsets = self._offsets, {}
        with _transacting():
            for group, markers in offsets.items():
                if self._lender is None:
                    raise ProduceFailure(None, "no consumer lends the group's metadata")
                consumer = self._lender(group)
                try:
                    metadata = consumer.consumer_group_metadata()
                    timeout_s = self._offsets_timeout_ms / 1000.0
                    self._producer.send_offsets_to_transaction(markers, metadata, timeout_s)
                finally:
                    consumer.close()
            self._producer.commit_transaction(timeout_ms / 1000.0)

    def abort_transaction(self, timeout_ms: int) -> None:
        """Abort the open transaction."""
        self._offsets.clear()
        with _transacting():
            self._producer.abort_transaction(timeout_ms / 1000.0)

    def committed(
        self, group: str, places: list[tuple[str, int]], timeout_ms: int
    ) -> list[CommittedOffset] | None:
        """``None``: confluent-kafka's producer reads no offsets (a consumer of the group
        does)."""
        return None

    def close(self) -> None:
        """Destroy the producer now (records not yet acknowledged are dropped), but for a
        transactional one (:meth:`init_transactions` succeeded), which ends with its last
        reference, as the sink's confluent-kafka transaction always left it."""
        if not self._transactional:
            self._producer.close()
