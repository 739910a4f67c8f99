"""A batch's Avro columns decoded by their :class:`~.roles.ColumnDecoder`\\ s, each with the
batch's ``headers``: what :meth:`.roles.RangeReader.read` does with a column its engine did not
decode as it read (every column of the Python reader's batches; on the compiled core's, a column
whose decoder is the Python one). A record that fails is named by its cluster, topic, partition
and offset (:func:`record_name`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import pyarrow as pa

from pyspark_dynamic_kafka.engines.roles import ColumnDecoder

if TYPE_CHECKING:  # the Avro modules only where Avro columns are read
    from pyspark_dynamic_kafka.avro.decode import Decoded

__all__ = ["decode_column", "decode_columns", "record_name"]


def record_name(batch: pa.RecordBatch, cluster_id: str) -> Callable[[int], str]:
    """Names record ``i`` of ``batch`` (read from ``cluster_id``) in a message: asked only for a
    record that failed."""

    def where(i: int) -> str:
        topic = batch.column("topic")[i].as_py()
        partition = batch.column("partition")[i].as_py()
        offset = batch.column("offset")[i].as_py()
        return f"Record {cluster_id}/{topic}/{partition} at offset {offset}"

    return where


def decode_column(
    batch: pa.RecordBatch, name: str, decoder: ColumnDecoder, cluster_id: str
) -> Decoded:
    """Column ``name`` of ``batch`` (read from ``cluster_id``) decoded by ``decoder``.

    Raises
    ------
    AvroDecodeError
        ``FAILFAST``: a record cannot be decoded.
    SchemaRegistryError
        ``FAILFAST``: a record's schema could not be fetched.
    """
    where = record_name(batch, cluster_id)
    return decoder.decode_arrow(batch.column(name), batch.column("headers"), where)


def decode_columns(
    batch: pa.RecordBatch, decoders: Mapping[str, ColumnDecoder], cluster_id: str
) -> dict[str, Decoded]:
    """Each column of ``decoders`` (in its order) decoded, raising as :func:`decode_column`."""
    return {n: decode_column(batch, n, decoder, cluster_id) for n, decoder in decoders.items()}
