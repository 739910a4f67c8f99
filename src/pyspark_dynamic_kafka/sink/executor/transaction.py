"""exactlyOnce: one Kafka transaction per task, with a progress marker committed inside it.

The transaction of Spark partition ``p`` of a write has the fixed ``transactional.id``
``<sinkId>.<cluster>.<p>``: a retried or speculative attempt initialises it again, which fences
the older attempt (it can no longer commit) and ends whatever the older one left open.

The **progress marker** (:mod:`~pyspark_dynamic_kafka.sink.executor.markers`) says "Spark
partition p of micro-batch B of query Q is committed": an offset commit of the group
``<sinkId>.progress.<p>`` on partition 0 of each of the route's topics, offset ``B``, its
metadata naming Q, sent with ``send_offsets_to_transaction`` so it commits atomically with the
records (KIP-98). After ``init_transactions`` (so that no older attempt can still commit), the
task reads the markers on **every** cluster the stream lists, on each of the stream's topics
there (a replayed micro-batch may have been committed on a cluster the route has left since,
or while the route had other topics besides), and writes nothing when the newest is its
query's and says ``>= B``; a newest marker of another query fails
the task (:func:`~pyspark_dynamic_kafka.sink.executor.markers.claim`), unless the option
``sinkIdTakeover`` lets this query take the ``sinkId`` over.

A transaction never outlives its task: any error aborts it before the task fails.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Iterator

import pyarrow as pa
from confluent_kafka import KafkaException, Producer, TopicPartition

from pyspark_dynamic_kafka.engines.roles import Transaction
from pyspark_dynamic_kafka.events import log_event
from pyspark_dynamic_kafka.kafka.config import client_properties
from pyspark_dynamic_kafka.sink.executor.markers import (
    MARKER,
    Claim,
    claim,
    committed_markers,
    marker_consumer,
    marker_metadata,
    progress_group,
)
from pyspark_dynamic_kafka.sink.executor.produce import Stamp, failure, send_all
from pyspark_dynamic_kafka.sink.executor.task import WriteReport, WriteTask

__all__ = [
    "Opener",
    "Transaction",
    "already_committed",
    "open_transaction",
    "produce_transaction",
    "transaction_properties",
]

_LOG = logging.getLogger(__name__)


def transactional_id(task: WriteTask, partition: int) -> str:
    """``<sinkId>.<cluster>.<partition>``: fixed for every attempt of one Spark partition."""
    return f"{task.sink_id}.{task.route.cluster_id}.{partition}"


def _timeout_s(task: WriteTask) -> float:
    return task.flush_timeout_ms / 1000.0


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
    except KafkaException as exc:
        raise failure(task, "Cannot start a transaction on", None, exc) from None
    try:
        producer.init_transactions(_timeout_s(task))
    except KafkaException as exc:
        producer.close()  # not left reconnecting until the error's traceback is collected
        raise failure(task, "Cannot start a transaction on", None, exc) from None
    return producer


def already_committed(
    task: WriteTask, batch_id: int, partition: int, query_id: str | None = None
) -> tuple[WriteReport | None, str]:
    """Whether Spark partition ``partition`` of ``query_id``'s micro-batch ``batch_id`` is
    committed, by the markers on every cluster the stream lists (call it after
    ``init_transactions``: no older attempt can commit any more): the skip report (else
    ``None``) and the metadata of the marker this task commits.

    Raises
    ------
    WriteError
        When a cluster does not answer
        (:func:`~pyspark_dynamic_kafka.sink.executor.markers.committed_markers`).
    SinkIdInUseError
        When the newest marker is another query's and ``sinkIdTakeover`` is off.
    """
    sink_id = task.sink_id or ""
    found = [
        marker
        for cluster in task.marker_clusters
        for marker in committed_markers(cluster, sink_id, partition, task.flush_timeout_ms)
    ]
    decided = claim(found, sink_id, query_id, batch_id, task.sink_id_takeover)
    _log_claim(decided, batch_id, partition, query_id)
    metadata = MARKER if query_id is None else marker_metadata(query_id, decided.generation)
    if decided.done is None:
        return None, metadata
    return WriteReport(task.route.cluster_id, {}, skipped=True), metadata


def _log_claim(decided: Claim, batch_id: int, partition: int, query_id: str | None) -> None:
    newest = decided.newest
    if decided.done is not None:
        legacy = decided.done.query_id is None and query_id is not None
        log_event(
            _LOG,
            # A legacy marker cannot tell this query's replay from another checkpoint's batch.
            logging.WARNING if legacy else logging.INFO,
            "write_skipped",
            batch=batch_id,
            partition=partition,
            marker=decided.done.where,
            committed=decided.done.batch,
            marker_query=decided.done.query_id,
        )
    elif newest is not None and newest.query_id != query_id and query_id is not None:
        log_event(
            _LOG,
            logging.WARNING,
            "sink_id_taken_over",
            batch=batch_id,
            partition=partition,
            marker=newest.where,
            committed=newest.batch,
            marker_query=newest.query_id,
            query=query_id,
        )


def _commit(
    task: WriteTask, producer: Producer, partition: int, batch_id: int, metadata: str
) -> None:
    places = task.route.marker_places
    markers = [TopicPartition(t, p, batch_id, metadata=metadata) for t, p in places]
    # The route's own client properties (registry keys left out, secret references resolved):
    # the consumer only lends the group's metadata to the transaction.
    properties = client_properties(task.route.properties, task.route.cluster_id)
    consumer = marker_consumer(properties, progress_group(task.sink_id or "", partition))
    try:
        group = consumer.consumer_group_metadata()
        producer.send_offsets_to_transaction(markers, group, _timeout_s(task))
    finally:
        consumer.close()
    producer.commit_transaction(_timeout_s(task))


#: Opens a :class:`Transaction` for a task's Spark partition, with a stamp for its records.
Opener = Callable[[WriteTask, int, Stamp | None], Transaction[WriteReport]]


class _Confluent:
    """:class:`~pyspark_dynamic_kafka.engines.roles.Transaction` with confluent-kafka's
    producer."""

    def __init__(self, task: WriteTask, partition: int, stamp: Stamp | None) -> None:
        self.task, self.partition, self.stamp = task, partition, stamp
        self.producer = open_transaction(task, partition)

    def begin(self) -> None:
        self.producer.begin_transaction()

    def write(self, batches: Iterable[pa.RecordBatch]) -> WriteReport:
        with self._failing():
            deliveries = send_all(self.task, self.producer, batches, self.stamp)
        return deliveries.report(self.task.route.cluster_id)

    def commit(self, batch_id: int, metadata: str) -> None:
        with self._failing():
            _commit(self.task, self.producer, self.partition, batch_id, metadata)

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
    query_id: str | None = None,
) -> WriteReport:
    """exactlyOnce: write Spark partition ``partition`` of streaming query ``query_id``'s
    micro-batch ``batch_id`` in one transaction with its progress marker (and ``stamp``'s
    headers, if any), or nothing when a marker of the query says it is committed (``None``: no
    query, every marker counts as its own), with the producer ``opener`` opens (confluent-kafka's by
    default; the compiled core's:
    :class:`~pyspark_dynamic_kafka.sink.executor.native.NativeTransaction`). The same course
    for both: initialise (fences older attempts), skip if marked, begin, write, commit; any
    error aborts the transaction before it is raised again.

    Raises
    ------
    WriteRouteError, WriteError
        As :func:`~pyspark_dynamic_kafka.sink.executor.produce.send_all`, after the transaction
        was aborted; a fenced attempt fails with a :class:`WriteError`.
    SinkIdInUseError
        When another query's marker is the newest (:func:`already_committed`).
    """
    transaction = (opener or _Confluent)(task, partition, stamp)
    try:
        skip, metadata = already_committed(task, batch_id, partition, query_id)
        if skip is not None:
            return skip
        transaction.begin()
        try:
            report = transaction.write(batches)
            transaction.commit(batch_id, metadata)
        except BaseException:
            # Fenced, or the cluster is gone: the broker aborts the transaction on its timeout.
            transaction.abort()
            raise
        return report
    finally:
        transaction.close()
