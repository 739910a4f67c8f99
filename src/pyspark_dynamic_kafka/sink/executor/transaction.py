"""exactlyOnce: one Kafka transaction per task, with a progress marker committed inside it.

The transaction of Spark partition ``p`` of a write has the fixed ``transactional.id``
``<sinkId>.<cluster>.<p>``: a retried or speculative attempt initialises it again, which fences
the older attempt (it can no longer commit) and ends whatever the older one left open.

The **progress marker** says "Spark partition p of micro-batch B is committed": an offset commit
of the group ``<sinkId>.progress.<p>`` on partition 0 of the route's first topic, offset ``B``,
metadata :data:`MARKER`, sent with ``send_offsets_to_transaction`` so it commits atomically with
the records (KIP-98). After ``init_transactions`` (so that no older attempt can still commit),
the task reads the marker on **every** cluster the stream lists (a replayed micro-batch may have
been committed on a cluster the route has left since) and writes nothing when one says ``>= B``.

A transaction never outlives its task: any error aborts it before the task fails.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from pyspark_dynamic_kafka.errors import WriteError
from pyspark_dynamic_kafka.events import log_event
from pyspark_dynamic_kafka.kafka.config import client_properties, redact_secrets
from pyspark_dynamic_kafka.sink.executor.produce import Stamp, failure, send_all
from pyspark_dynamic_kafka.sink.executor.task import MarkerCluster, WriteReport, WriteTask

__all__ = [
    "MARKER",
    "Opener",
    "Transaction",
    "already_committed",
    "committed_batch",
    "open_transaction",
    "produce_transaction",
    "progress_group",
    "transaction_properties",
]

_LOG = logging.getLogger(__name__)
#: The metadata string of a progress marker's offset commit.
MARKER = "dynamic_kafka.sink.batch"
_RETRY_S = 0.2
_COORDINATOR_MOVES = frozenset(
    {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
    }
)


def transactional_id(task: WriteTask, partition: int) -> str:
    """``<sinkId>.<cluster>.<partition>``: fixed for every attempt of one Spark partition."""
    return f"{task.sink_id}.{task.route.cluster_id}.{partition}"


def progress_group(task: WriteTask, partition: int) -> str:
    """The group whose committed offset is Spark partition ``partition``'s progress marker."""
    return f"{task.sink_id}.progress.{partition}"


def _timeout_s(task: WriteTask) -> float:
    return task.flush_timeout_ms / 1000.0


def _marker_consumer(properties: dict[str, str], group: str) -> Consumer:
    return Consumer(
        {
            **properties,
            "group.id": group,
            "enable.auto.commit": "false",
            "isolation.level": "read_committed",  # committed() waits for pending txn offsets
        }
    )


def committed_batch(task: WriteTask, cluster: MarkerCluster, partition: int) -> int | None:
    """The last micro-batch whose Spark partition ``partition`` is committed on ``cluster``.

    Raises
    ------
    WriteError
        When the cluster does not answer (naming it; a replay cannot be checked, so the task
        must not write).
    """
    properties = client_properties(cluster.properties, cluster.cluster_id)
    consumer = _marker_consumer(properties, progress_group(task, partition))
    deadline = time.monotonic() + _timeout_s(task)
    try:
        while True:
            try:
                found = consumer.committed(
                    [TopicPartition(cluster.topic, 0)], timeout=_timeout_s(task)
                )
                break
            except KafkaException as exc:
                # NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...: the group's coordinator
                # moves or loads (a fresh cluster creates __consumer_offsets); ask again.
                error = exc.args[0]
                again = error.retriable() or error.code() in _COORDINATOR_MOVES
                if not again or time.monotonic() >= deadline:
                    raise
                time.sleep(_RETRY_S)
    except KafkaException as exc:
        text = redact_secrets(str(exc), cluster.properties)
        raise WriteError(
            f"Cannot read the sink's progress marker on cluster {cluster.cluster_id!r} (group "
            f"{progress_group(task, partition)!r}): {text}. Every cluster the stream lists "
            "must answer for exactlyOnce writes."
        ) from None
    finally:
        consumer.close()
    marker = found[0]
    if marker.error is not None or marker.offset < 0 or marker.metadata != MARKER:
        return None
    return int(marker.offset)


def transaction_properties(task: WriteTask, partition: int) -> dict[str, str]:
    """The producer properties of Spark partition ``partition``'s transactions."""
    properties = task.producer_properties()
    properties["transactional.id"] = transactional_id(task, partition)
    properties.setdefault("transaction.timeout.ms", str(max(task.flush_timeout_ms, 60_000)))
    return properties


def open_transaction(task: WriteTask, partition: int) -> Producer:
    """A producer with Spark partition ``partition``'s ``transactional.id``, initialised: an
    older producer with that id is fenced and its open transaction ended."""
    try:
        producer = Producer(transaction_properties(task, partition))
        producer.init_transactions(_timeout_s(task))
    except KafkaException as exc:
        raise failure(task, "Cannot start a transaction on", None, exc) from None
    return producer


def already_committed(task: WriteTask, batch_id: int, partition: int) -> WriteReport | None:
    """The skip report when a progress marker on any of the stream's clusters says Spark
    partition ``partition`` of micro-batch ``batch_id`` is committed (call it after
    ``init_transactions``: no older attempt can commit any more), else ``None``.

    Raises
    ------
    WriteError
        When a cluster does not answer (:func:`committed_batch`).
    """
    for cluster in task.marker_clusters:
        done = committed_batch(task, cluster, partition)
        if done is not None and done >= batch_id:
            log_event(
                _LOG,
                logging.INFO,
                "write_skipped",
                batch=batch_id,
                partition=partition,
                cluster=cluster.cluster_id,
                committed=done,
            )
            return WriteReport(task.route.cluster_id, {}, skipped=True)
    return None


def _commit(task: WriteTask, producer: Producer, partition: int, batch_id: int) -> None:
    marker = TopicPartition(task.route.marker_topic, 0, batch_id, metadata=MARKER)
    # The route's own client properties (registry keys left out, secret references resolved):
    # the consumer only lends the group's metadata to the transaction.
    properties = client_properties(task.route.properties, task.route.cluster_id)
    consumer = _marker_consumer(properties, progress_group(task, partition))
    try:
        metadata = consumer.consumer_group_metadata()
        producer.send_offsets_to_transaction([marker], metadata, _timeout_s(task))
    finally:
        consumer.close()
    producer.commit_transaction(_timeout_s(task))


class Transaction(Protocol):
    """One producer's side of a task's transaction (confluent-kafka's or the compiled core's),
    its ``transactional.id`` initialised: older attempts are fenced. Each step fails with a
    :class:`~pyspark_dynamic_kafka.errors.WriteError` naming the cluster."""

    def begin(self) -> None:
        """Begin the transaction."""

    def write(self, batches: Iterable[pa.RecordBatch]) -> WriteReport:
        """Send every row, flush, and check the deliveries."""
        ...

    def commit(self, batch_id: int) -> None:
        """Send the progress marker of micro-batch ``batch_id`` and commit, atomically."""

    def abort(self) -> None:
        """Abort the open transaction (its errors ignored: the broker aborts it on timeout)."""

    def close(self) -> None:
        """Release the producer."""


#: Opens a :class:`Transaction` for a task's Spark partition, with a stamp for its records.
Opener = Callable[[WriteTask, int, Stamp | None], Transaction]


class _Confluent:
    """:class:`Transaction` with confluent-kafka's producer."""

    def __init__(self, task: WriteTask, partition: int, stamp: Stamp | None) -> None:
        self.task, self.partition, self.stamp = task, partition, stamp
        self.producer = open_transaction(task, partition)

    def begin(self) -> None:
        self.producer.begin_transaction()

    def write(self, batches: Iterable[pa.RecordBatch]) -> WriteReport:
        with self._failing():
            deliveries = send_all(self.task, self.producer, batches, self.stamp)
        return deliveries.report(self.task.route.cluster_id)

    def commit(self, batch_id: int) -> None:
        with self._failing():
            _commit(self.task, self.producer, self.partition, batch_id)

    def abort(self) -> None:
        with contextlib.suppress(KafkaException):
            self.producer.abort_transaction(_timeout_s(self.task))

    def close(self) -> None:
        """Nothing to release: confluent-kafka's producer ends with its last reference."""

    @contextlib.contextmanager
    def _failing(self) -> Iterator[None]:
        try:
            yield
        except KafkaException as exc:
            raise failure(self.task, "Cannot commit the transaction on", None, exc) from None


def produce_transaction(
    task: WriteTask,
    batches: Iterable[pa.RecordBatch],
    batch_id: int,
    partition: int,
    stamp: Stamp | None = None,
    opener: Opener | None = None,
) -> WriteReport:
    """exactlyOnce: write Spark partition ``partition`` of micro-batch ``batch_id`` in one
    transaction with its progress marker (and ``stamp``'s headers, if any), or nothing when a
    marker says it is committed, with the producer ``opener`` opens (confluent-kafka's by
    default; the compiled core's:
    :class:`~pyspark_dynamic_kafka.sink.executor.native.NativeTransaction`). The same course
    for both: initialise (fences older attempts), skip if marked, begin, write, commit; any
    error aborts the transaction before it is raised again.

    Raises
    ------
    WriteRouteError, WriteError
        As :func:`~pyspark_dynamic_kafka.sink.executor.produce.send_all`, after the transaction
        was aborted; a fenced attempt fails with a :class:`WriteError`.
    """
    transaction = (opener or _Confluent)(task, partition, stamp)
    try:
        skip = already_committed(task, batch_id, partition)
        if skip is not None:
            return skip
        transaction.begin()
        try:
            report = transaction.write(batches)
            transaction.commit(batch_id)
        except BaseException:
            # Fenced, or the cluster is gone: the broker aborts the transaction on its timeout.
            transaction.abort()
            raise
        return report
    finally:
        transaction.close()
