"""``valueFormat=avro`` / ``keyFormat=avro`` on the executor: a task's ``value`` (``key``) column
replaced by its Avro payloads before the batch is produced, by either producer.

The driver resolved, on the registry of the batch's cluster, each topic's writer schema and its
id there (:mod:`~pyspark_dynamic_kafka.sink.driver.schemas`); the task carries them
(:class:`~pyspark_dynamic_kafka.sink.executor.task.AvroTarget`), so an executor neither reads
metadata nor asks a registry. Each row is encoded with the schema and id of its topic
(:mod:`pyspark_dynamic_kafka.avro.encode`); the column becomes a binary column of
Confluent-framed payloads, null where the value was null.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator

import pyarrow as pa

from pyspark_dynamic_kafka.avro.encode import AvroEncodeError, Encoder
from pyspark_dynamic_kafka.avro.framing import id_prefix
from pyspark_dynamic_kafka.sink.executor.task import AvroTarget, TopicSchema, WriteTask

__all__ = ["encode_columns"]


@functools.lru_cache(maxsize=32)
def _encoder(schema: str) -> Encoder:
    return Encoder(schema)


def _topics(task: WriteTask, batch: pa.RecordBatch) -> list[str]:
    """Each row's topic (as the producers decide it: the ``topic`` option, the ``topic`` column,
    else the route's only topic), checked against the route."""
    route = task.route
    if task.topic is not None:
        return [route.topic_of(task.topic)] * batch.num_rows
    index = batch.schema.get_field_index("topic")
    if index < 0:
        return [route.topic_of(None)] * batch.num_rows
    given = batch.column(index).to_pylist()
    known = {t: route.topic_of(t) for t in set(given)}
    return [known[t] for t in given]


def _encode(
    task: WriteTask, target: AvroTarget, column: pa.Array, topics: list[str], first: int
) -> pa.Array:
    payloads: list[bytes | None] = []
    writers: dict[str, tuple[TopicSchema, Encoder, bytes]] = {}
    for i, value in enumerate(column.to_pylist()):
        if value is None:
            payloads.append(None)
            continue
        topic = topics[i]
        writer = writers.get(topic)
        if writer is None:
            schema = target.of(topic)
            writer = schema, _encoder(schema.schema), id_prefix(schema.schema_id)
            writers[topic] = writer
        schema, encoder, prefix = writer
        try:
            payloads.append(prefix + encoder.body(value))
        except AvroEncodeError as exc:
            raise AvroEncodeError(
                f"The {target.side} of row {first + i} of the task (topic {topic!r} on cluster "
                f"{task.route.cluster_id!r}, {target.side}Format=avro, subject "
                f"{schema.subject!r}, schema id {schema.schema_id} of registry "
                f"{target.registry}) cannot be written: {exc}. Make the column's values fit "
                "the schema."
            ) from None
    return pa.array(payloads, type=pa.binary())


def encode_columns(task: WriteTask, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``batches`` with the task's Avro columns encoded (unchanged when it has none).

    Raises
    ------
    WriteRouteError
        When a row's ``topic`` is outside the route.
    AvroEncodeError
        When a value does not fit its schema, naming the row, topic, cluster, subject and id.
    """
    targets = [t for t in (task.value_avro, task.key_avro) if t is not None]
    first = 0
    for batch in batches:
        if not targets:
            yield batch
            continue
        topics = _topics(task, batch)
        columns = list(batch.columns)
        fields = list(batch.schema)
        for target in targets:
            index = batch.schema.get_field_index(target.side)
            if index < 0:
                continue  # no key column: records without a key
            columns[index] = _encode(task, target, batch.column(index), topics, first)
            fields[index] = pa.field(target.side, pa.binary())
        first += batch.num_rows
        yield pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))
