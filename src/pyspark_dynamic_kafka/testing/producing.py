"""Sending records through a confluent-kafka ``Producer`` so that their offsets are exactly known.

This module knows producers and records, not clusters: :meth:`BaseKafkaCluster.produce` and
:meth:`BaseKafkaCluster.produce_bulk` create the producer, call :func:`send_each` or
:func:`send_bulk`, then wait until the high watermarks cover what was acknowledged.

Tansu's high watermark only covers the first record of the last batch of a partition, so the
helpers send one record per batch to Tansu (:data:`ONE_PER_BATCH`, a broker kind's
:attr:`~BaseKafkaCluster.produce_defaults`; Apache Kafka gets ordinary batches, :data:`BATCHED`)
and send each partition's last record as a batch of its own (:func:`send_bulk`).
"""

from __future__ import annotations

import contextlib
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaException

from pyspark_dynamic_kafka.testing.errors import ConfigValue, ProduceError, RecordLike, seconds_left

__all__ = [
    "BATCHED",
    "BULK",
    "ONE_PER_BATCH",
    "close_producer",
    "next_offsets",
    "send_bulk",
    "send_each",
]

_RECORD_KEYS = frozenset({"key", "value", "headers", "timestamp", "partition"})

BATCHED: dict[str, ConfigValue] = {
    "linger.ms": 5,
    "enable.idempotence": True,
    "allow.auto.create.topics": False,
}
"""Producer settings of :meth:`BaseKafkaCluster.produce` on a Kafka broker: ordinary batches."""

ONE_PER_BATCH: dict[str, ConfigValue] = {
    "batch.num.messages": 1,
    "linger.ms": 0,
    "enable.idempotence": True,
    "allow.auto.create.topics": False,
}
"""Producer settings of :meth:`BaseKafkaCluster.produce` on Tansu: one record per batch."""

BULK: dict[str, ConfigValue] = {
    "linger.ms": 20,
    "batch.size": 1_000_000,
    "batch.num.messages": 100_000,
    "queue.buffering.max.messages": 1_000_000,
    "queue.buffering.max.kbytes": 1_048_576,
    "enable.idempotence": True,
    "allow.auto.create.topics": False,
}
"""Producer settings of :meth:`BaseKafkaCluster.produce_bulk`: large batches."""


def send_each(
    producer: Any,
    topic: str,
    records: Iterable[RecordLike],
    partition: int | None,
    deadline: float,
    cluster: str,
) -> list[tuple[int, int]]:
    """Send every record, wait for every acknowledgement; ``(partition, offset)`` in input order.

    Raises
    ------
    ProduceError
        If a record failed or was not acknowledged by ``deadline``.
    """
    results: list[tuple[int, int] | None] = []
    errors: list[str] = []

    def delivered(index: int) -> Callable[[Any, Any], None]:
        def on_delivery(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(f"record #{index}: {err}")
            else:
                results[index] = (msg.partition(), msg.offset())

        return on_delivery

    for index, record in enumerate(records):
        results.append(None)
        _send(producer, topic, _produce_kwargs(record, partition), delivered(index), deadline)
        producer.poll(0)
    _flush(producer, deadline, cluster)
    missing = sum(r is None for r in results)
    _check(cluster, topic, errors, missing)
    return [r for r in results if r is not None]


def send_bulk(
    producer: Any,
    topic: str,
    records: Iterable[RecordLike],
    partitions: int,
    deadline: float,
    cluster: str,
) -> tuple[dict[int, int], dict[int, int]]:
    """Send records in large batches, each partition's last record alone after the rest.

    Records that name no partition go to ``crc32(key) % partitions`` when they have a key
    (librdkafka's default partitioner gives the same result) and round-robin otherwise.

    Returns
    -------
    tuple of dict
        ``{partition: records written}`` and ``{partition: next offset}``.

    Raises
    ------
    ProduceError
        If a record names a partition the topic lacks, failed, or was not acknowledged.
    """
    errors: list[str] = []
    acked = [0]
    last_offset: dict[int, int] = {}

    def on_delivery(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))
            return
        acked[0] += 1
        p, offset = msg.partition(), msg.offset()
        if offset > last_offset.get(p, -1):
            last_offset[p] = offset

    held: dict[int, dict[str, Any]] = {}
    counts: dict[int, int] = {}
    round_robin = 0
    for n, record in enumerate(records):
        kwargs = _produce_kwargs(record, None)
        p = kwargs.get("partition")
        if p is None:
            key = kwargs.get("key")
            if key is not None:
                p = zlib.crc32(key) % partitions
            else:
                p = round_robin
                round_robin = (round_robin + 1) % partitions
            kwargs["partition"] = p
        elif not 0 <= p < partitions:
            raise ProduceError(f"record #{n} names partition {p}, topic {topic!r} has {partitions}")
        counts[p] = counts.get(p, 0) + 1
        previous = held.get(p)
        held[p] = kwargs
        if previous is not None:
            _send(producer, topic, previous, on_delivery, deadline)
        if n % 1000 == 0:
            producer.poll(0)
            if errors:
                break
    _flush(producer, deadline, cluster)
    if not errors:
        for kwargs in held.values():
            _send(producer, topic, kwargs, on_delivery, deadline)
        _flush(producer, deadline, cluster)
    _check(cluster, topic, errors, sum(counts.values()) - acked[0])
    return dict(sorted(counts.items())), {p: o + 1 for p, o in last_offset.items()}


def next_offsets(sent: Iterable[tuple[int, int]]) -> dict[int, int]:
    """``{partition: last offset + 1}`` of ``(partition, offset)`` pairs."""
    ends: dict[int, int] = {}
    for p, offset in sent:
        ends[p] = max(offset + 1, ends.get(p, 0))
    return ends


def close_producer(producer: Any) -> None:
    """Close a producer (``close()`` exists since confluent-kafka 2.11; else drop it)."""
    close = getattr(producer, "close", None)
    if close is not None:
        with contextlib.suppress(KafkaException, RuntimeError):
            close()


def _check(cluster: str, topic: str, errors: list[str], missing: int) -> None:
    if errors or missing:
        raise ProduceError(
            f"cluster {cluster!r}, topic {topic!r}: {len(errors)} record(s) failed, "
            f"{missing} not acknowledged; first errors: {errors[:5]}"
        )


def _encode(value: Any, what: str) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"record {what} must be str, bytes or None, got {type(value).__name__}")


def _produce_kwargs(record: RecordLike, partition: int | None) -> dict[str, Any]:
    if isinstance(record, tuple):
        if len(record) != 2:
            raise TypeError(f"a record tuple must be (key, value), got {len(record)} items")
        kwargs: dict[str, Any] = {
            "key": _encode(record[0], "key"),
            "value": _encode(record[1], "value"),
        }
        if partition is not None:
            kwargs["partition"] = partition
        return kwargs
    if isinstance(record, Mapping):
        unknown = set(record) - _RECORD_KEYS
        if unknown:
            raise TypeError(
                f"unknown record keys {sorted(unknown)}; allowed: {sorted(_RECORD_KEYS)}"
            )
        kwargs = {
            "key": _encode(record.get("key"), "key"),
            "value": _encode(record.get("value"), "value"),
        }
        p = record.get("partition", partition)
        if p is not None:
            kwargs["partition"] = int(p)
        if record.get("timestamp") is not None:
            kwargs["timestamp"] = int(record["timestamp"])
        headers = record.get("headers")
        if headers:
            items = headers.items() if isinstance(headers, Mapping) else headers
            kwargs["headers"] = [(str(k), _encode(v, "header value")) for k, v in items]
        return kwargs
    raise TypeError(
        f"a record must be a (key, value) tuple or a mapping, got {type(record).__name__}"
    )


def _send(
    producer: Any,
    topic: str,
    kwargs: Mapping[str, Any],
    on_delivery: Callable[[Any, Any], None],
    deadline: float,
) -> None:
    while True:
        try:
            producer.produce(topic, on_delivery=on_delivery, **kwargs)
            break
        except BufferError:
            # The local queue is full: serve delivery reports until there is room.
            if time.monotonic() >= deadline:
                raise ProduceError(f"timed out producing to {topic!r}: queue stays full") from None
            producer.poll(0.05)


def _flush(producer: Any, deadline: float, cluster: str) -> None:
    left = producer.flush(seconds_left(deadline))
    if left:
        raise ProduceError(f"cluster {cluster!r}: {left} record(s) still unacknowledged at timeout")
