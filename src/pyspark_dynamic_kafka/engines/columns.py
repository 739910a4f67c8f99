"""A batch's Avro columns decoded by their :class:`~.roles.ColumnDecoder`\\ s, each with the
batch's ``headers``: what :meth:`.roles.RangeReader.read_decoded` does with a column its engine
did not decode as it read (every column of the Python reader's batches; on the compiled core's,
a column whose decoder is the Python one).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import pyarrow as pa

from pyspark_dynamic_kafka.engines.roles import ColumnDecoder

if TYPE_CHECKING:  # the Avro modules only where Avro columns are read
    from pyspark_dynamic_kafka.avro.decode import Decoded

__all__ = ["decode_column", "decode_columns"]


def decode_column(
    batch: pa.RecordBatch, name: str, decoder: ColumnDecoder, where: Callable[[int], str]
) -> Decoded:
    """Column ``name`` of ``batch`` decoded by ``decoder`` (``where(i)`` names record ``i``).

    Raises
    ------
    AvroDecodeError
        ``FAILFAST``: a record cannot be decoded.
    SchemaRegistryError
        ``FAILFAST``: a record's schema could not be fetched.
    """
    return decoder.decode_arrow(batch.column(name), batch.column("headers"), where)


def decode_columns(
    batch: pa.RecordBatch, decoders: Mapping[str, ColumnDecoder], where: Callable[[int], str]
) -> dict[str, Decoded]:
    """Each column of ``decoders`` (in its order) decoded, raising as :func:`decode_column`."""
    return {name: decode_column(batch, name, decoder, where) for name, decoder in decoders.items()}
