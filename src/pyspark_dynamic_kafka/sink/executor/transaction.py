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
from collections.abc import Iterable

import pyarrow as pa
from confluent_kafka import Consumer

from pyspark_dynamic_kafka.engines.roles import CommittedOffset, ProduceFailure, Transaction
from pyspark_dynamic_kafka.events import log_event
from pyspark_dynamic_kafka.kafka.config import client_properties
from pyspark_dynamic_kafka.sink.executor.markers import (
    MARKER,
    Claim,
    OffsetLookup,
    claim,
    committed_markers,
    marker_consumer,
    marker_metadata,
    progress_group,
)
from pyspark_dynamic_kafka.sink.executor.produce import (
    Stamp,
    open_producer,
    producing,
    send_all,
)
from pyspark_dynamic_kafka.sink.executor.task import WriteReport, WriteTask

__all__ = [
    "ProducerTransaction",
    "Transaction",
    "already_committed",
    "produce_transaction",
    "transaction_properties",
]

_LOG = logging.getLogger(__name__)


def transactional_id(task: WriteTask, partition: int) -> str:
    """``<sinkId>.<cluster>.<partition>``: fixed for every attempt of one Spark partition."""
    return f"{task.sink_id}.{task.route.cluster_id}.{partition}"


def transaction_properties(task: WriteTask, partition: int) -> dict[str, str]:
    """The producer properties of Spark partition ``partition``'s transactions."""
    properties = task.producer_properties()
    properties["transactional.id"] = transactional_id(task, partition)
    properties.setdefault("transaction.timeout.ms", str(max(task.flush_timeout_ms, 60_000)))
    return properties


def already_committed(
    task: WriteTask,
    batch_id: int,
    partition: int,
    query_id: str | None = None,
    lookup: OffsetLookup | None = None,
) -> tuple[WriteReport | None, str]:
    """Whether Spark partition ``partition`` of ``query_id``'s micro-batch ``batch_id`` is
    committed, by the markers on every cluster the stream lists (call it after
    ``init_transactions``: no older attempt can commit any more): the skip report (else
    ``None``) and the metadata of the marker this task commits. ``lookup`` (the transaction's
    producer's) asks the markers on the route's cluster when it can.

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
        for marker in committed_markers(
            cluster,
            sink_id,
            partition,
            task.flush_timeout_ms,
            lookup if cluster.cluster_id == task.route.cluster_id else None,
        )
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


class ProducerTransaction:
    """:class:`~pyspark_dynamic_kafka.engines.roles.Transaction` over the producer of the task's
    planned engine (:func:`~pyspark_dynamic_kafka.sink.executor.produce.open_producer`): a
    producer with Spark partition ``partition``'s ``transactional.id``, initialised, so an older
    producer with that id is fenced and its open transaction ended."""

    def __init__(self, task: WriteTask, partition: int, stamp: Stamp | None) -> None:
        self.task, self.partition = task, partition
        self.timeout = task.flush_timeout_ms
        properties = transaction_properties(task, partition)
        self.producer = open_producer(
            task, properties, stamp, "Cannot start a transaction on", self._lend
        )
        try:
            with producing(task, "Cannot start a transaction on"):
                self.producer.init_transactions(self.timeout)
        except BaseException:
            self.producer.close()  # not left reconnecting until the error's traceback is gone
            raise

    def _lend(self, group: str) -> Consumer:
        # The route's own client properties (registry keys left out, secret references
        # resolved): the consumer only lends the group's metadata to the transaction.
        route = self.task.route
        return marker_consumer(client_properties(route.properties, route.cluster_id), group)

    def begin(self) -> None:
        with producing(self.task, "Cannot start a transaction on"):
            self.producer.begin_transaction()

    def write(self, batches: Iterable[pa.RecordBatch]) -> WriteReport:
        return send_all(self.task, self.producer, batches)

    def commit(self, batch_id: int, metadata: str) -> None:
        task = self.task
        with producing(task, "Cannot commit the transaction on"):
            group = progress_group(task.sink_id or "", self.partition)
            for topic, partition in task.route.marker_places:  # one transaction: all or none
                marker = (topic, partition, batch_id)
                self.producer.send_offset(group, marker, metadata, self.timeout)
            self.producer.commit_transaction(self.timeout)

    def abort(self) -> None:
        with contextlib.suppress(ProduceFailure):
            self.producer.abort_transaction(self.timeout)

    def committed(self, group: str, places: list[tuple[str, int]]) -> list[CommittedOffset] | None:
        return self.producer.committed(group, places, self.timeout)

    def close(self) -> None:
        self.producer.close()


def produce_transaction(
    task: WriteTask,
    batches: Iterable[pa.RecordBatch],
    batch_id: int,
    partition: int,
    stamp: Stamp | None = None,
    query_id: str | None = None,
) -> WriteReport:
    """exactlyOnce: write Spark partition ``partition`` of streaming query ``query_id``'s
    micro-batch ``batch_id`` in one transaction with its progress marker (and ``stamp``'s
    headers, if any), or nothing when a marker of the query says it is committed (``None``: no
    query, every marker counts as its own), with the producer of the task's planned engine
    (:class:`ProducerTransaction`): initialise (fences older attempts), skip if marked, begin,
    write, commit; any error aborts the transaction before it is raised again.

    Raises
    ------
    WriteRouteError, WriteError
        As :func:`~pyspark_dynamic_kafka.sink.executor.produce.send_all`, after the transaction
        was aborted; a fenced attempt fails with a :class:`WriteError`.
    SinkIdInUseError
        When another query's marker is the newest (:func:`already_committed`).
    """
    transaction: Transaction[WriteReport] = ProducerTransaction(task, partition, stamp)
    try:
        skip, metadata = already_committed(
            task, batch_id, partition, query_id, transaction.committed
        )
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
