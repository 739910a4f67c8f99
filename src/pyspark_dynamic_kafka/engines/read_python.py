"""The Python range reader: exact offset ranges of one cluster read with a pooled confluent-kafka
consumer, one Python ``Message`` per record, into Arrow batches (:mod:`.read_python_batches`).

Reading stops at each range's end even when more data exists, and does not hang when the last
offsets of a range never arrive as records (transaction markers, compaction gaps): a partition is
done when a record at or past its end arrives, or when the consumer reports partition EOF or a
position at or past the end.

Records of a range that are gone (out of range: retention removed them; the topic or partition no
longer exists) fail the task with :class:`~pyspark_dynamic_kafka.errors.DataLossError`, or, with
``failOnDataLoss=false``, are skipped with a warning: reading resumes at the earliest offset still
available, or the range ends when nothing of it is left. This is the loss only reading can find:
the rest is decided on the driver (:mod:`~pyspark_dynamic_kafka.source.driver.reconcile`).
"""

from __future__ import annotations

import bisect
import logging
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from pyspark_dynamic_kafka.engines.roles import Range, RangeRead, ReadOptions
from pyspark_dynamic_kafka.errors import DataLossError, ReadError
from pyspark_dynamic_kafka.kafka.pool import ConsumerFactory, confluent_consumer

if TYPE_CHECKING:  # the Avro modules only where Avro columns are read
    from pyspark_dynamic_kafka.avro.decode import Decoded

__all__ = ["PythonRangeReader"]

_log = logging.getLogger(__name__)

_CONSUME_BATCH = 10000
#: Longest wait for a message before the loop checks positions and the poll timeout again.
_WAIT_S = 0.2
_EOF = KafkaError._PARTITION_EOF
_OUT_OF_RANGE = (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE)
_GONE = (KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC, KafkaError.UNKNOWN_TOPIC_OR_PART)
_WATERMARK_TIMEOUT_S = 10.0


class PythonRangeReader:
    """The :class:`~.roles.RangeReader` of the Python reader (confluent-kafka)."""

    @property
    def factory(self) -> ConsumerFactory:
        """confluent-kafka's consumers
        (:func:`~pyspark_dynamic_kafka.kafka.pool.confluent_consumer`)."""
        return confluent_consumer

    def read(
        self, consumer: Any, request: RangeRead
    ) -> Iterator[tuple[pa.RecordBatch, dict[str, Decoded]]]:
        """Read with a confluent-kafka ``consumer``, each batch's Avro columns then decoded by
        the request's decoders; raises as :meth:`.roles.RangeReader.read` says."""
        batches = _read_cluster(consumer, request.cluster_id, request.ranges, request.options)
        if not request.decoders:
            for batch in batches:
                yield batch, {}
            return
        from pyspark_dynamic_kafka.engines.columns import decode_columns

        for batch in batches:
            yield batch, decode_columns(batch, request.decoders, request.cluster_id)


def _read_cluster(
    consumer: Any, cluster_id: str, ranges: Sequence[Range], options: ReadOptions
) -> Iterator[pa.RecordBatch]:
    reader = _RangeReader(consumer, cluster_id, ranges, options)
    pending = reader.pending
    if not pending:
        return
    assignment = [TopicPartition(t, p, r.start) for (t, p), r in pending.items()]
    # librdkafka keeps a partition's pause flag across unassign()/assign(): a pooled consumer
    # that paused this partition at the end of an earlier range would never fetch it again.
    # Resumed before assign(), not after: assign() wakes the broker thread to fetch, and a
    # resume() right after it bumps the partition's fetch version under that thread, which then
    # idles until its 1 s I/O timeout before fetching (measured: 1 s in about 1 task of 3).
    consumer.resume(assignment)
    consumer.assign(assignment)
    builder = reader.builder
    deadline_s = options.poll_timeout_ms / 1000.0
    last_progress = time.monotonic()
    try:
        while pending:
            messages = _ready(consumer)
            if messages:
                last_progress = time.monotonic()
                reader.accept(messages)
                if builder.due:
                    yield builder.flush()
                continue
            _finish_by_position(consumer, pending)
            if pending and time.monotonic() - last_progress > deadline_s:
                raise ReadError(_stuck_message(consumer, cluster_id, pending, options))
        if len(builder):
            yield builder.flush()
    finally:
        try:
            consumer.unassign()
        except KafkaException as exc:  # the consumer is closed by the pool if it misbehaves
            _log.debug("unassign failed: %s", exc)


class _RangeReader:
    """Routes consumed messages of one cluster to their ranges and into an Arrow builder.

    Messages arrive in runs of one partition with ascending offsets, so a run is kept whole
    unless its last offset reaches the range's end, where it is cut (bisect) and the partition
    is done (paused). A partition is identified by its number alone when no two ranges share
    one, which saves a ``topic()`` call per record. The next offset of each range is kept per run,
    so that skipping lost records never re-reads one.
    """

    def __init__(
        self, consumer: Any, cluster_id: str, ranges: Sequence[Range], options: ReadOptions
    ) -> None:
        self.consumer = consumer
        self.cluster_id = cluster_id
        self.fail_on_data_loss = options.fail_on_data_loss
        self.pending = {(r.topic, r.partition): r for r in ranges if r.end > r.start}
        self.next: dict[tuple[str, int], int] = {tp: r.start for tp, r in self.pending.items()}
        # The Python reader's builders (pyarrow.compute): the compiled core's tasks need none.
        from pyspark_dynamic_kafka.engines.read_python_batches import BatchBuilder

        self.builder = BatchBuilder(cluster_id, options.include_headers)
        numbers = [p for _, p in self.pending]
        self._topic_of: dict[int, str] | None = (
            {p: t for t, p in self.pending} if len(set(numbers)) == len(numbers) else None
        )

    def accept(self, messages: list[Any]) -> None:
        """Keep the data messages inside their ranges; handle events in order."""
        errors = list(map(Message.error, messages))
        if not any(errors):  # a KafkaError is truthy (and KafkaError.__eq__(None) raises)
            self._data(messages)
            return
        start = 0
        for i, error in enumerate(errors):
            if error is not None:
                self._data(messages[start:i])
                self._event(messages[i], error)
                start = i + 1
        self._data(messages[start:])

    def _data(self, messages: list[Any]) -> None:
        if not messages:
            return
        partitions = list(map(Message.partition, messages))
        topic_of = self._topic_of
        keys: list[Any] = (
            partitions
            if topic_of is not None
            else list(zip(map(Message.topic, messages), partitions, strict=True))
        )
        first = keys[0]
        if keys.count(first) == len(keys):
            self._run(first, messages)
            return
        start = 0
        for i in range(1, len(keys)):
            if keys[i] != keys[i - 1]:
                self._run(keys[start], messages[start:i])
                start = i
        self._run(keys[start], messages[start:])

    def _run(self, key: Any, messages: list[Any]) -> None:
        tp = (self._topic_of[key], key) if self._topic_of is not None else key
        r = self.pending.get(tp)
        if r is None:  # fetched past the end of a finished range
            return
        last = messages[-1].offset()
        if last + 1 >= r.end:
            messages = messages[: bisect.bisect_left(messages, r.end, key=_offset)]
            self._done(r)
        else:
            self.next[tp] = last + 1
        self.builder.add_run(r.topic, r.partition, messages)

    def _event(self, message: Any, error: Any) -> None:
        code = error.code()
        tp = (message.topic(), message.partition())
        r = self.pending.get(tp)
        if code == _EOF:
            if r is not None and message.offset() >= r.end:
                self._done(r)
            return
        if code in _OUT_OF_RANGE and r is not None:
            self._out_of_range(r, error)
            return
        if code in _GONE and r is not None:
            self._lost(r, "the topic or partition no longer exists", error)
            self._done(r)
            return
        if error.fatal() or not error.retriable():
            raise ReadError(f"Reading from cluster '{self.cluster_id}' failed: {error.str()}")
        _log.warning("Retriable error from cluster %r: %s", self.cluster_id, error.str())

    def _done(self, r: Range) -> None:
        _done(self.consumer, self.pending, r)

    def _lost(self, r: Range, what: str, error: Any, upto: int | None = None) -> None:
        """Fail, or warn that offsets [next, ``upto``) of ``r`` are gone (``upto``: its end)."""
        where = f"{self.cluster_id}/{r.topic}/{r.partition}"
        next_offset = self.next[(r.topic, r.partition)]
        if self.fail_on_data_loss:
            raise DataLossError(
                f"Data loss: offsets [{next_offset}, {r.end}) of {where} cannot be read: {what} "
                f"({error.str()}). Set failOnDataLoss=false to skip records that are gone."
            )
        span = f"[{next_offset}, {r.end if upto is None else upto})"
        _log.warning("Data loss (failOnDataLoss=false): offsets %s of %s: %s", span, where, what)

    def _out_of_range(self, r: Range, error: Any) -> None:
        """The next offset of ``r`` is not on the cluster: fail, or resume where records are.

        The warning names exactly the records lost: from the next offset to the earliest one
        still available, or to the range's end when none of the range is left.
        """
        tp = (r.topic, r.partition)
        what = "they are no longer available (retention, or the topic was recreated)"
        if self.fail_on_data_loss:
            self._lost(r, what, error)
        low, high = self.consumer.get_watermark_offsets(
            TopicPartition(r.topic, r.partition), timeout=_WATERMARK_TIMEOUT_S, cached=False
        )
        resume = _resume_offset(self.next[tp], r.end, low, high)
        self._lost(r, what, error, r.end if resume is None else resume)
        if resume is None:
            self._done(r)
            return
        self.next[tp] = resume
        _refetch(self.consumer, r.topic, r.partition, resume)


def _resume_offset(next_offset: int, end: int, low: int, high: int) -> int | None:
    """Where reading resumes after offset ``next_offset`` of a range ending at ``end`` was out of
    range, given the partition's watermarks: the earliest offset still available, or ``None``
    when nothing of the range is left (every offset from ``next_offset`` to the end is lost)."""
    resume = max(next_offset, low)
    return None if resume >= min(end, high) else resume


def _refetch(consumer: Any, topic: str, partition: int, offset: int) -> None:
    """Fetch a partition again from ``offset`` after its offset was out of range.

    With ``auto.offset.reset=error`` librdkafka stops fetching the partition and refuses to
    ``seek()`` it (``_STATE``, "Erroneous state"); assigning it again restarts its fetch, and
    leaves the other partitions' positions and pause flags as they are.
    """
    consumer.incremental_unassign([TopicPartition(topic, partition)])
    consumer.incremental_assign([TopicPartition(topic, partition, offset)])


def _ready(consumer: Any) -> list[Any]:
    """The messages ready now (up to a batch), waiting at most :data:`_WAIT_S` for the first.

    ``consume(n, timeout)`` returns only when it has ``n`` messages or the timeout passed, so a
    range's last records would wait out the whole timeout; ``poll()`` returns the first message
    as soon as it arrives, and ``consume(n, 0)`` takes what is queued behind it without waiting.
    While records stream in faster than they are read the first call alone fills the batch.
    """
    messages: list[Any] = consumer.consume(num_messages=_CONSUME_BATCH, timeout=0)
    if messages:
        return messages
    first = consumer.poll(_WAIT_S)
    if first is None:
        return messages
    messages = consumer.consume(num_messages=_CONSUME_BATCH - 1, timeout=0)
    messages.insert(0, first)
    return messages


def _offset(message: Any) -> int:
    return int(message.offset())


def _done(consumer: Any, pending: dict[tuple[str, int], Range], r: Range) -> None:
    if pending.pop((r.topic, r.partition), None) is not None:
        consumer.pause([TopicPartition(r.topic, r.partition)])


def _finish_by_position(consumer: Any, pending: dict[tuple[str, int], Range]) -> None:
    positions = consumer.position([TopicPartition(t, p) for t, p in pending])
    for tp in positions:
        r = pending.get((tp.topic, tp.partition))
        if r is not None and tp.offset >= r.end:
            _done(consumer, pending, r)


def _stuck_message(
    consumer: Any,
    cluster_id: str,
    pending: dict[tuple[str, int], Range],
    options: ReadOptions,
) -> str:
    parts = []
    for tp in consumer.position([TopicPartition(t, p) for t, p in pending]):
        r = pending[(tp.topic, tp.partition)]
        parts.append(
            f"{cluster_id}/{r.topic}/{r.partition} range [{r.start}, {r.end}) stuck at "
            f"position {tp.offset}"
        )
    return (
        f"No progress for kafkaConsumer.pollTimeoutMs={options.poll_timeout_ms} ms: "
        + "; ".join(parts)
        + ". The cluster may be unreachable or the records may have been deleted."
    )
