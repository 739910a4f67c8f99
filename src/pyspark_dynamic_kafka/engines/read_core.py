"""The compiled core's range reader: the core (``pyspark-dynamic-kafka-core``) reads a cluster's
ranges, Rust filling Arrow columns directly, so no Python object is made per record.

It reads with its direct fetch path or with librdkafka's consumer: which one (or the Python
reader, :mod:`.read_python`) the driver decided once per cluster (:mod:`.choice`), and the task
carries the engine's name: the executor never decides again nor re-parses options. A reader
planned on the direct path that hands its ranges to librdkafka's consumer (a broker error, a lost
connection) is logged once per cluster and reason (:func:`~.choice.report_handover`); each
request the direct path sent again on a new connection (its first one broke, or went unanswered
past the request timeout) is one INFO line, as the Java consumer logs a disconnection after
``request.timeout.ms``.

A read with Avro columns (a :class:`~.roles.RangeRead` with decoders) hands the core's reader
the core's decoder of each column the core decodes (:class:`~.decode_core.NativeDecoder`'s, holding
the reader schema and the writer schemas by id): the reader decodes each batch's columns in Rust
as it assembles the batch, before the batch reaches Python, and the column's decoder takes the
answer (:meth:`~.decode_core.NativeDecoder.finish`): its failures, its fallbacks to the Python
decoder, or the writer schemas the core lacks, which it fetches, hands over and decodes that
batch's column with again. A column whose decoder is the Python one is decoded after the read
(:mod:`.columns`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

import pyarrow as pa

from pyspark_dynamic_kafka.engines import core
from pyspark_dynamic_kafka.engines.choice import DIRECT, report_handover
from pyspark_dynamic_kafka.engines.roles import RangeRead
from pyspark_dynamic_kafka.errors import DataLossError, KafkaClientError, ReadError
from pyspark_dynamic_kafka.kafka.config import redact_secrets
from pyspark_dynamic_kafka.kafka.pool import ConsumerFactory, consumer_config

if TYPE_CHECKING:  # the Avro modules only where Avro columns are read
    from pyspark_dynamic_kafka.avro.decode import Decoded
    from pyspark_dynamic_kafka.engines.decode_core import NativeDecoder

__all__ = ["CoreRangeReader", "direct_consumer", "librdkafka_consumer", "native_factory"]

_log = logging.getLogger(__name__)


def _consumer(
    cluster_id: str, properties: Mapping[str, str], direct: bool
) -> core.compiled.Consumer:
    if not core.INSTALLED:
        raise ReadError(
            f"Cluster '{cluster_id}' was planned for the native reader, but this Python worker "
            "has no pyspark-dynamic-kafka-core: install it on the executors or set reader=python."
        )
    config = consumer_config(properties, cluster_id)
    try:
        return core.compiled.Consumer(sorted(config.items()), direct=direct)
    except core.compiled.ClientError as exc:
        detail = redact_secrets(str(exc), config)
        raise KafkaClientError(
            f"Cluster '{cluster_id}': could not create a consumer: {detail}. Check the "
            "cluster's client properties in the metadata and the query's kafka.* options."
        ) from None


def direct_consumer(cluster_id: str, properties: Mapping[str, str]) -> core.compiled.Consumer:
    """A consumer of the compiled core that reads with its direct fetch path, for a cluster's
    merged properties (a :data:`~pyspark_dynamic_kafka.kafka.pool.ConsumerFactory`: the pool
    keeps it across tasks).

    Raises
    ------
    ReadError
        This Python worker has no compiled core.
    KafkaClientError
        librdkafka refused the client properties.
    """
    return _consumer(cluster_id, properties, True)


def librdkafka_consumer(cluster_id: str, properties: Mapping[str, str]) -> core.compiled.Consumer:
    """As :func:`direct_consumer`, for a consumer that reads with librdkafka's consumer only."""
    return _consumer(cluster_id, properties, False)


def native_factory(engine: str) -> ConsumerFactory:
    """The pool's factory of the compiled core's consumers for a cluster planned on ``engine``
    (:data:`~.choice.DIRECT` or :data:`~.choice.LIBRDKAFKA`)."""
    return direct_consumer if engine == DIRECT else librdkafka_consumer


class CoreRangeReader:
    """The :class:`~.roles.RangeReader` of the compiled core, for a cluster planned on
    ``engine`` (:data:`~.choice.DIRECT` or :data:`~.choice.LIBRDKAFKA`): the Python reader's
    batches, exactly."""

    def __init__(self, engine: str) -> None:
        self.engine = engine

    @property
    def factory(self) -> ConsumerFactory:
        """The pool's factory of the core's consumers for the planned engine."""
        return native_factory(self.engine)

    def read(
        self, consumer: core.compiled.Consumer, request: RangeRead
    ) -> Iterator[tuple[pa.RecordBatch, dict[str, Decoded]]]:
        """Read with a consumer of :attr:`factory`, lent to the core's reader while it reads and
        unassigned when it is given back (also when reading fails or stops early); the core
        decodes each batch's Avro columns as it reads them where the column's decoder is the
        core's. Raises as :meth:`.roles.RangeReader.read` says."""
        if not request.decoders:
            for batch, _ in self._read(consumer, request, {}):
                yield batch, {}
            return
        from pyspark_dynamic_kafka.engines.columns import decode_column, record_name
        from pyspark_dynamic_kafka.engines.decode_core import NativeDecoder

        decoders, cluster_id = request.decoders, request.cluster_id
        natives = {n: d for n, d in decoders.items() if isinstance(d, NativeDecoder)}
        for batch, reader in self._read(consumer, request, natives):
            answers = reader.take_decoded()
            decoded: dict[str, Decoded] = {}
            for name, decoder in decoders.items():  # in their order: key first
                native = natives.get(name)
                if native is None or name not in answers:
                    decoded[name] = decode_column(batch, name, decoder, cluster_id)
                    continue
                values, headers = batch.column(name), batch.column("headers")
                where = record_name(batch, cluster_id)
                decoded[name] = native.finish(values, headers, where, answers[name])
                if native.core_decoder is None:  # the Python decoder's from now on
                    reader.stop_decoding(name)
            yield batch, decoded

    def _read(
        self,
        consumer: core.compiled.Consumer,
        request: RangeRead,
        natives: Mapping[str, NativeDecoder],
    ) -> Iterator[tuple[pa.RecordBatch, core.compiled.Reader]]:
        """Each batch, with the core's reader, which decoded the batch's column of each of
        ``natives`` that the core decodes (:meth:`~core.compiled.Reader.take_decoded`)."""
        cluster_id, options, properties = request.cluster_id, request.options, request.properties
        if not core.INSTALLED:  # the consumer came from the core
            raise ReadError(f"Cluster '{cluster_id}': the compiled core is gone")
        on_core = [(n, d.core_decoder) for n, d in natives.items()]
        reader = core.compiled.Reader(
            cluster_id,
            consumer,
            [(r.topic, r.partition, r.start, r.end) for r in request.ranges],
            options.poll_timeout_ms,
            options.include_headers,
            options.fail_on_data_loss,
            decoders=[(name, decoder) for name, decoder in on_core if decoder is not None],
        )
        try:
            for batch in _batches(reader):
                yield batch, reader
        finally:
            reader.close()
            for reconnect in reader.reconnects():
                reason = redact_secrets(reconnect, properties)
                _log.info(
                    "Cluster '%s': the direct fetch path sent a request again on a new "
                    "connection: %s",
                    cluster_id,
                    reason,
                )
            handover = reader.fallback()
            if handover is not None and self.engine == DIRECT:
                report_handover(cluster_id, handover, properties)


def _batches(reader: core.compiled.Reader) -> Iterator[pa.RecordBatch]:
    while True:
        try:
            batch = next(reader, None)
        except core.compiled.DataLossError as exc:
            raise DataLossError(str(exc)) from None
        except core.compiled.ReadError as exc:
            raise ReadError(str(exc)) from None
        finally:
            for warning in reader.take_warnings():
                _log.warning("%s", warning)
        if batch is None:
            return
        yield batch
