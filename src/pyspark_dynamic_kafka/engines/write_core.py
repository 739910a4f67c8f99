"""The compiled core's producer: the sink's Arrow batches handed to the core's ``Producer`` (the
sink's columns read straight from the batches, the dedupe headers stamped and the deliveries
counted in Rust: no Python object per record), and exactlyOnce's transactions.

:class:`CoreProducer` is the :class:`~.roles.BatchProducer` of a cluster planned on the core:
``direct`` (the core's own idempotent producer writing Produce requests, and its own
transactions) or ``librdkafka`` (librdkafka's producer), the core's exception turned into the
engine-neutral :class:`~.roles.ProduceFailure` (:mod:`.write_python`'s ``PythonProducer`` is
confluent-kafka's). The sink writes, both guarantees, through the one path over any of them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

import pyarrow as pa

from pyspark_dynamic_kafka.engines import core
from pyspark_dynamic_kafka.engines.roles import (
    FLUSH_MARGIN_MS,
    CommittedOffset,
    ProduceFailure,
    TopicRoutes,
)

__all__ = ["CoreProducer"]


@contextlib.contextmanager
def _failing() -> Iterator[None]:
    try:
        yield
    except core.compiled.WriteFailure as exc:
        topic, reason = exc.args
        raise ProduceFailure(topic, reason) from None


class CoreProducer:
    """The compiled core's producer of one cluster, from the parameters
    :func:`~.implementations.batch_producer` takes (``config``: the full producer configuration;
    ``stamp``: every record carries the stamp's headers) and the engine (``direct``: the direct
    produce path, which ``direct_problem`` of ``config`` said serves it; else librdkafka's
    producer). Its transactions commit a transaction's offsets by the group's name.

    Raises
    ------
    CoreMissingError
        The compiled core is not installed.
    ProduceFailure
        The engine refused the configuration (no topic).
    """

    def __init__(
        self, config: Mapping[str, str], stamp: tuple[str, str, int] | None, direct: bool = False
    ) -> None:
        core.require()
        with _failing():
            self._producer = core.compiled.Producer(sorted(config.items()), stamp, direct)

    def send(
        self, batch: pa.RecordBatch, topic: str | None = None, topics: TopicRoutes = ()
    ) -> None:
        """Write every row of ``batch``: to ``topic`` when given, else to the topic ``topics``
        routes the row's ``topic`` value to; stops early once a record failed."""
        with _failing():
            self._producer.send(batch, topic, topics)

    def failed(self) -> bool:
        """Whether a record failed (a delivery report, or a batch of the direct path)."""
        with _failing():
            return self._producer.failed()

    def flush(self, timeout_ms: int) -> int:
        """Send everything and wait for the acknowledgements up to ``timeout_ms`` and
        :data:`~.roles.FLUSH_MARGIN_MS` more: the records still waiting."""
        with _failing():
            return self._producer.flush(timeout_ms + FLUSH_MARGIN_MS)

    def deliveries(self) -> tuple[dict[str, int], dict[str, int], tuple[str, str] | None]:
        """Records and key+value bytes per topic acknowledged so far, and the first failure as
        (topic, reason) or ``None``."""
        with _failing():
            return self._producer.deliveries()

    def init_transactions(self, timeout_ms: int) -> None:
        """Fence older producers of the configured ``transactional.id``, ending their
        transaction."""
        with _failing():
            self._producer.init_transactions(timeout_ms)

    def begin_transaction(self) -> None:
        """Begin a transaction."""
        with _failing():
            self._producer.begin_transaction()

    def send_offset(
        self, group: str, place: tuple[str, int, int], metadata: str, timeout_ms: int
    ) -> None:
        """Commit offset ``place[2]`` of (topic, partition) ``place[:2]`` with ``metadata`` for
        ``group`` inside the open transaction."""
        topic, partition, offset = place
        with _failing():
            self._producer.send_offset(group, topic, partition, offset, metadata, timeout_ms)

    def commit_transaction(self, timeout_ms: int) -> None:
        """Commit the open transaction (on the direct path, after every batch is sent and
        acknowledged: nothing is committed when a batch failed or was not acknowledged in
        time)."""
        with _failing():
            self._producer.commit_transaction(timeout_ms)

    def abort_transaction(self, timeout_ms: int) -> None:
        """Abort the open transaction (on the direct path, batches not yet sent are dropped)."""
        with _failing():
            self._producer.abort_transaction(timeout_ms)

    def committed(
        self, group: str, places: list[tuple[str, int]], timeout_ms: int
    ) -> list[CommittedOffset] | None:
        """The stable offsets ``group`` committed on ``places``, asked of the group's coordinator
        over the producer's connections (OffsetFetch v7) by the direct path's transactional
        producer; ``None`` for librdkafka's, or a broker before Kafka 2.5."""
        with _failing():
            return self._producer.committed(group, places, timeout_ms)

    def close(self) -> None:
        """Drop the producer without waiting (records not yet acknowledged are dropped)."""
        self._producer.close()
