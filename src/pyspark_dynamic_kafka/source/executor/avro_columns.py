"""Executor side: the key and value columns of a batch read from one cluster, decoded as Avro
(``keyFormat``/``valueFormat=avro``), whichever reader read the batch.

Each record's writer schema comes from the registry of the cluster it was read from: the task
carries that cluster's client properties, whose ``schema.registry.*`` keys name it
(:class:`~pyspark_dynamic_kafka.registry.endpoint.RegistryEndpoint`); no metadata is read here.
A decoder is kept per (registry, cluster, column, reader schema, mode, engine) for the life of
the Python worker, so a writer schema is fetched and parsed once per worker. A cluster the driver
planned for the compiled core is decoded by the core too
(:func:`~pyspark_dynamic_kafka.engines.implementations.column_decoder`: arrow-avro into Arrow,
where it gives the reader schema's type), inside the core's read: the range reader is handed
the decoders (:func:`column_decoders`, in a
:class:`~pyspark_dynamic_kafka.engines.roles.RangeRead`); a cluster read by the Python reader,
with fastavro (:class:`~pyspark_dynamic_kafka.avro.decode.Decoder`).

The batch keeps its columns, with the decoded struct in place of the bytes, then
``keySchemaId``/``valueSchemaId`` and, in ``PERMISSIVE`` mode, ``_corrupt_key``/
``_corrupt_value`` (:mod:`~pyspark_dynamic_kafka.source.schema`; :func:`assemble`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from pyspark_dynamic_kafka.avro.framing import SchemaRef
from pyspark_dynamic_kafka.engines.columns import decode_columns
from pyspark_dynamic_kafka.engines.implementations import column_decoder
from pyspark_dynamic_kafka.engines.roles import ColumnDecoder
from pyspark_dynamic_kafka.errors import ReadError
from pyspark_dynamic_kafka.registry.client import RegisteredSchema, RegistryClient
from pyspark_dynamic_kafka.registry.endpoint import URL, RegistryEndpoint
from pyspark_dynamic_kafka.source.schema import AvroColumn, AvroColumns, arrow_schema

if TYPE_CHECKING:
    from pyspark_dynamic_kafka.avro.decode import Decoded

__all__ = ["assemble", "column_decoders", "decode_avro"]

_DECODERS: dict[tuple[Any, ...], ColumnDecoder] = {}
_LOCK = threading.Lock()


def decode_avro(
    batch: pa.RecordBatch,
    cluster_id: str,
    properties: Mapping[str, str],
    avro: AvroColumns,
    native: bool = False,
) -> pa.RecordBatch:
    """``batch`` (read from ``cluster_id``, whose client ``properties`` the task carries) with
    its Avro columns decoded, by the compiled core when ``native`` (the cluster's planned engine
    is the core's) and the core is installed.

    Raises
    ------
    AvroDecodeError
        ``FAILFAST``: a record cannot be decoded (naming cluster, topic, partition, offset,
        schema).
    SchemaRegistryError
        ``FAILFAST``: the record's schema could not be fetched (naming the registry).
    ReadError
        The cluster's metadata names no registry.
    """
    decoders = column_decoders(cluster_id, properties, avro, native)
    if decoders is None:
        raise ReadError(
            f"Cluster '{cluster_id}' is read with Avro columns but its metadata names no schema "
            f"registry: add '{URL}' to its entry."
        )
    return assemble(batch, decode_columns(batch, decoders, cluster_id), avro)


def column_decoders(
    cluster_id: str, properties: Mapping[str, str], avro: AvroColumns, native: bool = False
) -> dict[str, ColumnDecoder] | None:
    """The decoder of each Avro column of ``avro`` (key first) for batches read from
    ``cluster_id``, kept for the life of the Python worker, or ``None`` when the cluster's
    metadata names no registry."""
    endpoint = RegistryEndpoint.of(properties)
    if endpoint is None:
        return None
    return {
        name: _decoder(endpoint, cluster_id, name, column, native)
        for name, column in avro.decoded()
    }


def assemble(
    batch: pa.RecordBatch, decoded: Mapping[str, Decoded], avro: AvroColumns
) -> pa.RecordBatch:
    """``batch`` with each Avro column's ``decoded`` struct in place of its bytes, then
    ``keySchemaId``/``valueSchemaId`` and, in ``PERMISSIVE`` mode, ``_corrupt_key``/
    ``_corrupt_value``; ``headers`` only when the rows keep them."""
    columns = dict(zip(batch.schema.names, batch.columns, strict=True))
    extra: dict[str, pa.Array] = {}
    corrupt: dict[str, pa.Array] = {}
    for name, column in avro.decoded():
        columns[name] = decoded[name].values
        extra[f"{name}SchemaId"] = decoded[name].schema_ids
        if column.permissive:
            corrupt[f"_corrupt_{name}"] = decoded[name].corrupt
    if not avro.include_headers:
        del columns["headers"]
    return pa.RecordBatch.from_arrays(
        [*columns.values(), *extra.values(), *corrupt.values()],
        schema=arrow_schema(avro.include_headers, avro),
    )


def _decoder(
    endpoint: RegistryEndpoint, cluster_id: str, name: str, column: AvroColumn, native: bool
) -> ColumnDecoder:
    key = (endpoint, cluster_id, name, column, native)
    with _LOCK:
        decoder = _DECODERS.get(key)
    if decoder is None:
        fetch = _fetcher(RegistryClient(endpoint, cluster_id))
        decoder = column_decoder(
            native,
            column.reader_schema,
            fetch,
            column.permissive,
            name == "key",
            column.reader_name,
        )
        with _LOCK:
            decoder = _DECODERS.setdefault(key, decoder)
    return decoder


def _fetcher(client: RegistryClient) -> Callable[[SchemaRef], RegisteredSchema]:
    def fetch(ref: SchemaRef) -> RegisteredSchema:
        if ref.guid is not None:
            return client.schema_by_guid(ref.guid)
        return client.schema_by_id(int(ref.schema_id or 0))

    return fetch
