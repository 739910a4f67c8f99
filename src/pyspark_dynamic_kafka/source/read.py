"""Executor side: read exact offset ranges with a pooled consumer, emit Arrow batches.

Reading stops at each range's end even when more data exists, and does not hang when the last
offsets of a range never arrive as records (transaction markers, compaction gaps): a partition is
done when a record at or past its end arrives, or when the consumer reports partition EOF or a
position at or past the end.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from pyspark_dynamic_kafka.errors import DataLossError, ReadError
from pyspark_dynamic_kafka.kafka.pool import consumer_pool
from pyspark_dynamic_kafka.source.arrow import BatchBuilder
from pyspark_dynamic_kafka.source.planning import OffsetRange, ReadSettings, ReadTask

__all__ = ["read_task"]

_log = logging.getLogger(__name__)

_CONSUME_BATCH = 10000
_CONSUME_TIMEOUT_S = 0.2
_EOF = KafkaError._PARTITION_EOF
_OUT_OF_RANGE = (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE)


def read_task(task: ReadTask) -> Iterator[pa.RecordBatch]:
    """Read every range of a task, cluster by cluster, as Arrow record batches."""
    pool = consumer_pool()
    settings = task.settings
    pool.retire_clusters_except(settings.live_clusters)
    for cluster_id, ranges in task.by_cluster().items():
        properties = task.properties[cluster_id]
        consumer = pool.acquire(cluster_id, properties)
        reusable = False
        try:
            yield from _read_cluster(consumer, cluster_id, ranges, settings)
            reusable = True
        finally:
            pool.release(cluster_id, properties, consumer, reusable, settings.cache_timeout_ms)


def _read_cluster(
    consumer: Any, cluster_id: str, ranges: list[OffsetRange], settings: ReadSettings
) -> Iterator[pa.RecordBatch]:
    pending = {(r.topic, r.partition): r for r in ranges if r.size > 0}
    if not pending:
        return
    assignment = [TopicPartition(t, p, r.start) for (t, p), r in pending.items()]
    consumer.assign(assignment)
    # librdkafka keeps a partition's pause flag across unassign()/assign(): a pooled consumer
    # that paused this partition at the end of an earlier range would never fetch it again.
    consumer.resume(assignment)
    builder = BatchBuilder(cluster_id)
    deadline_s = settings.poll_timeout_ms / 1000.0
    last_progress = time.monotonic()
    try:
        while pending:
            messages = consumer.consume(num_messages=_CONSUME_BATCH, timeout=_CONSUME_TIMEOUT_S)
            if messages:
                last_progress = time.monotonic()
                keep = _accept(consumer, cluster_id, messages, pending)
                if keep:
                    builder.add(keep)
                if builder.due:
                    yield builder.flush()
                continue
            _finish_by_position(consumer, pending)
            if pending and time.monotonic() - last_progress > deadline_s:
                raise ReadError(_stuck_message(consumer, cluster_id, pending, settings))
        if len(builder):
            yield builder.flush()
    finally:
        try:
            consumer.unassign()
        except KafkaException as exc:  # the consumer is closed by the pool if it misbehaves
            _log.debug("unassign failed: %s", exc)


def _accept(
    consumer: Any,
    cluster_id: str,
    messages: list[Any],
    pending: dict[tuple[str, int], OffsetRange],
) -> list[Any]:
    """Return the data messages inside their ranges; retire partitions that reached their end."""
    first, last = messages[0], messages[-1]
    if (
        first.error() is None
        and last.error() is None
        and first.topic() == last.topic()
        and first.partition() == last.partition()
    ):
        # Fast path: one partition, no events. Offsets ascend, so only the tail can overshoot.
        r = pending.get((first.topic(), first.partition()))
        if r is not None and all(m.error() is None for m in messages):
            if last.offset() + 1 < r.end:
                return messages
            keep = [m for m in messages if m.offset() < r.end]
            _done(consumer, pending, r)
            return keep
    keep = []
    for m in messages:
        error = m.error()
        key = (m.topic(), m.partition())
        r = pending.get(key)
        if error is not None:
            code = error.code()
            if code == _EOF:
                if r is not None and m.offset() >= r.end:
                    _done(consumer, pending, r)
                continue
            if code in _OUT_OF_RANGE:
                where = f"{cluster_id}/{key[0]}/{key[1]}"
                span = f"[{r.start}, {r.end})" if r else ""
                raise DataLossError(
                    f"Offsets {span} of {where} are no longer available (removed by retention or "
                    f"the topic was recreated): {error.str()}"
                )
            if error.fatal() or not error.retriable():
                raise ReadError(f"Reading from cluster '{cluster_id}' failed: {error.str()}")
            _log.warning("Retriable error from cluster %r: %s", cluster_id, error.str())
            continue
        if r is None:
            continue
        offset = m.offset()
        if offset >= r.end:
            _done(consumer, pending, r)
            continue
        keep.append(m)
        if offset + 1 >= r.end:
            _done(consumer, pending, r)
    return keep


def _done(consumer: Any, pending: dict[tuple[str, int], OffsetRange], r: OffsetRange) -> None:
    if pending.pop((r.topic, r.partition), None) is not None:
        consumer.pause([TopicPartition(r.topic, r.partition)])


def _finish_by_position(consumer: Any, pending: dict[tuple[str, int], OffsetRange]) -> None:
    positions = consumer.position([TopicPartition(t, p) for t, p in pending])
    for tp in positions:
        r = pending.get((tp.topic, tp.partition))
        if r is not None and tp.offset >= r.end:
            _done(consumer, pending, r)


def _stuck_message(
    consumer: Any,
    cluster_id: str,
    pending: dict[tuple[str, int], OffsetRange],
    settings: ReadSettings,
) -> str:
    parts = []
    for tp in consumer.position([TopicPartition(t, p) for t, p in pending]):
        r = pending[(tp.topic, tp.partition)]
        parts.append(
            f"{cluster_id}/{r.topic}/{r.partition} range [{r.start}, {r.end}) stuck at "
            f"position {tp.offset}"
        )
    return (
        f"No progress for kafkaConsumer.pollTimeoutMs={settings.poll_timeout_ms} ms: "
        + "; ".join(parts)
        + ". The cluster may be unreachable or the records may have been deleted."
    )
