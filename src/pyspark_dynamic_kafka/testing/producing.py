"""Producing records whose offsets are exactly known (the bodies of the clusters' produce methods).

Tansu's high watermark only covers the first record of the last batch of a partition, so the
helpers either send one record per batch or send each partition's last record as a batch of its
own; both check the high watermarks before returning.
"""

from __future__ import annotations

import contextlib
import logging
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaException, Producer

from pyspark_dynamic_kafka.testing.common import ConfigValue, ProduceError, RecordLike, seconds_left

if TYPE_CHECKING:
    from pyspark_dynamic_kafka.testing.base import BaseKafkaCluster

__all__ = ["produce_in_bulk", "produce_one_per_batch"]

_log = logging.getLogger(__name__)

_RECORD_KEYS = frozenset({"key", "value", "headers", "timestamp", "partition"})

# One record per batch: with Tansu the high watermark only covers the first record of the last
# batch of a partition, so one record per batch keeps every record visible.
_PRODUCE_DEFAULTS: dict[str, ConfigValue] = {
    "batch.num.messages": 1,
    "linger.ms": 0,
    "enable.idempotence": True,
    "allow.auto.create.topics": False,
}

# Large batches for fast loading; produce_bulk sends the last record of each partition alone.
_BULK_DEFAULTS: dict[str, ConfigValue] = {
    "linger.ms": 20,
    "batch.size": 1_000_000,
    "batch.num.messages": 100_000,
    "queue.buffering.max.messages": 1_000_000,
    "queue.buffering.max.kbytes": 1_048_576,
    "enable.idempotence": True,
    "allow.auto.create.topics": False,
}


def produce_one_per_batch(
    cluster: BaseKafkaCluster,
    topic: str,
    records: Iterable[RecordLike],
    partition: int | None,
    config: Mapping[str, ConfigValue] | None,
    timeout: float,
) -> list[tuple[int, int]]:
    """:meth:`BaseKafkaCluster.produce` (documented there)."""
    deadline = time.monotonic() + timeout
    cluster._partition_count(topic, timeout)  # fail fast on a missing topic
    producer = Producer(
        {**cluster.client_properties(**_PRODUCE_DEFAULTS), **(config or {}), "logger": _log}
    )
    results: list[tuple[int, int] | None] = []
    errors: list[str] = []

    def delivered(index: int) -> Callable[[Any, Any], None]:
        def on_delivery(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(f"record #{index}: {err}")
            else:
                results[index] = (msg.partition(), msg.offset())

        return on_delivery

    try:
        for index, record in enumerate(records):
            results.append(None)
            kwargs = _produce_kwargs(record, partition)
            _produce_one(producer, topic, kwargs, delivered(index), deadline)
            producer.poll(0)
        _flush(producer, deadline, cluster.name)
    finally:
        _close_producer(producer)
    missing = [i for i, r in enumerate(results) if r is None]
    if errors or missing:
        raise ProduceError(
            f"cluster {cluster.name!r}, topic {topic!r}: {len(errors)} record(s) failed, "
            f"{len(missing)} not acknowledged; first errors: {errors[:5]}"
        )
    done = [r for r in results if r is not None]
    last: dict[int, int] = {}
    for p, offset in done:
        last[p] = max(offset, last.get(p, -1))
    cluster._wait_visible(topic, {p: o + 1 for p, o in last.items()}, deadline)
    return done


def produce_in_bulk(
    cluster: BaseKafkaCluster,
    topic: str,
    records: Iterable[RecordLike],
    config: Mapping[str, ConfigValue] | None,
    timeout: float,
) -> dict[int, int]:
    """:meth:`BaseKafkaCluster.produce_bulk` (documented there)."""
    deadline = time.monotonic() + timeout
    partitions = cluster._partition_count(topic, timeout)
    producer = Producer(
        {**cluster.client_properties(**_BULK_DEFAULTS), **(config or {}), "logger": _log}
    )
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
    try:
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
                raise ProduceError(
                    f"record #{n} names partition {p}, topic {topic!r} has {partitions}"
                )
            counts[p] = counts.get(p, 0) + 1
            previous = held.get(p)
            held[p] = kwargs
            if previous is not None:
                _produce_one(producer, topic, previous, on_delivery, deadline)
            if n % 1000 == 0:
                producer.poll(0)
                if errors:
                    break
        _flush(producer, deadline, cluster.name)
        if not errors:
            for kwargs in held.values():
                _produce_one(producer, topic, kwargs, on_delivery, deadline)
            _flush(producer, deadline, cluster.name)
    finally:
        _close_producer(producer)
    total = sum(counts.values())
    if errors or acked[0] != total:
        raise ProduceError(
            f"cluster {cluster.name!r}, topic {topic!r}: {len(errors)} record(s) failed, "
            f"{total - acked[0]} not acknowledged; first errors: {errors[:5]}"
        )
    cluster._wait_visible(topic, {p: o + 1 for p, o in last_offset.items()}, deadline)
    return dict(sorted(counts.items()))


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


def _produce_one(
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


def _close_producer(producer: Any) -> None:
    # Producer.close() exists since confluent-kafka 2.11; dropping the reference is the fallback.
    close = getattr(producer, "close", None)
    if close is not None:
        with contextlib.suppress(KafkaException, RuntimeError):
            close()
