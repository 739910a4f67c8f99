"""The implementation of each role (:mod:`.roles`) for the engine the driver planned
(:mod:`.choice`): what the source and the sink ask for, so that they never branch on an engine.

The implementations' modules are imported when first asked for: a process that reads with the
Python reader never imports the compiled core's reader, and one that reads with the core never
imports the Python reader's Arrow builders.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from pyspark_dynamic_kafka.engines.choice import DIRECT, on_core
from pyspark_dynamic_kafka.engines.roles import (
    BatchProducer,
    ColumnDecoder,
    ColumnEncoder,
    CoreMissingError,
    GroupLender,
    RangeReader,
)

if TYPE_CHECKING:  # the Avro and registry modules only where Avro columns are read
    from pyspark_dynamic_kafka.avro.framing import SchemaRef
    from pyspark_dynamic_kafka.registry.client import RegisteredSchema

__all__ = [
    "CoreMissingError",
    "batch_producer",
    "column_decoder",
    "column_encoder",
    "range_reader",
]


def range_reader(engine: str) -> RangeReader:
    """The range reader of a cluster planned on ``engine`` (``direct``, ``librdkafka`` or
    ``python``)."""
    if on_core(engine):
        from pyspark_dynamic_kafka.engines.read_core import CoreRangeReader

        return CoreRangeReader(engine)
    from pyspark_dynamic_kafka.engines.read_python import PythonRangeReader

    return PythonRangeReader()


def column_decoder(
    core: bool,
    reader_schema: str,
    fetch: Callable[[SchemaRef], RegisteredSchema],
    permissive: bool = False,
    key: bool = False,
    reader_name: str | None = None,
) -> ColumnDecoder:
    """The Avro decoder of a column (parameters as
    :class:`~pyspark_dynamic_kafka.avro.decode.Decoder`'s): with ``core`` (the cluster is read
    by the compiled core), the core's where it is installed and gives the reader schema's type
    (:func:`~.decode_core.make_decoder`), else the Python decoder."""
    if core:
        from pyspark_dynamic_kafka.engines.decode_core import make_decoder

        return make_decoder(reader_schema, fetch, permissive, key, reader_name)
    from pyspark_dynamic_kafka.engines.decode_python import Decoder

    return Decoder(reader_schema, fetch, permissive, key, reader_name)


def column_encoder(core: bool, schema: str, key: bool = False) -> ColumnEncoder:
    """The Avro encoder of the sink's ``value`` (``key`` with ``key``) column of writer
    ``schema`` (Avro JSON): with ``core`` (the cluster is written by the compiled core), the
    core's where it is installed and encodes the schema as the Python encoder does
    (:func:`~.encode_core.make_encoder`), else the Python encoder."""
    if core:
        from pyspark_dynamic_kafka.engines.encode_core import make_encoder

        return make_encoder(schema, key)
    from pyspark_dynamic_kafka.engines.encode_python import PythonColumnEncoder

    return PythonColumnEncoder(schema)


def batch_producer(
    engine: str,
    config: Mapping[str, str],
    stamp: tuple[str, str, int] | None,
    lender: GroupLender | None = None,
) -> BatchProducer:
    """The producer of a cluster planned on ``engine`` (``direct``: the compiled core's direct
    produce path, and ``librdkafka``: the compiled core's librdkafka producer, each a
    :class:`~.write_core.CoreProducer`; ``python``: confluent-kafka's,
    :class:`~.write_python.PythonProducer`), given the full producer configuration and the
    dedupe stamp (sink id, batch, Spark partition) or ``None``. ``lender`` makes the consumer
    that lends a group's metadata to a transaction's offset commit (confluent-kafka's producer
    needs one; the core's commits offsets by the group's name).

    Raises
    ------
    CoreMissingError
        The engine is the compiled core's and it is not installed.
    ProduceFailure
        librdkafka refused the configuration.
    """
    if on_core(engine):
        from pyspark_dynamic_kafka.engines.write_core import CoreProducer

        return CoreProducer(config, stamp, direct=engine == DIRECT)
    from pyspark_dynamic_kafka.engines.write_python import PythonProducer

    return PythonProducer(config, stamp, lender)
