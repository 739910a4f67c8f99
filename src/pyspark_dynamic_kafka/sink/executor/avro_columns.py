"""``valueFormat=avro`` / ``keyFormat=avro`` on the executor: a task's ``value`` (``key``) column
replaced by its Avro payloads before the batch is produced, by either producer.

The driver resolved, on the registry of the batch's cluster, each topic's writer schema and its
id there (:mod:`~pyspark_dynamic_kafka.sink.driver.schemas`); the task carries them
(:class:`~pyspark_dynamic_kafka.sink.executor.task.AvroTarget`), so an executor neither reads
metadata nor asks a registry. The rows of each topic are encoded with the schema and id of that
topic, by the column encoder of the cluster's engine
(:func:`~pyspark_dynamic_kafka.engines.implementations.column_encoder`: the compiled core's, or
fastavro's in :mod:`pyspark_dynamic_kafka.avro.encode`, the same bytes); the column becomes a
binary column of Confluent-framed payloads, null where the value was null.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator

import pyarrow as pa

from pyspark_dynamic_kafka.avro.encode import AvroEncodeError
from pyspark_dynamic_kafka.engines.choice import on_core
from pyspark_dynamic_kafka.engines.implementations import column_encoder
from pyspark_dynamic_kafka.engines.roles import ColumnEncoder, EncodeFailure
from pyspark_dynamic_kafka.sink.executor.task import AvroTarget, WriteTask

__all__ = ["encode_columns"]

#: The rows of a batch going to each topic (``None``: all of them), in first-appearance order.
Groups = list[tuple[str, pa.Array | None]]


@functools.lru_cache(maxsize=32)
def _encoder(core: bool, schema: str, key: bool) -> ColumnEncoder:
    return column_encoder(core, schema, key)


def _groups(task: WriteTask, batch: pa.RecordBatch) -> Groups:
    """Each topic's rows (as the producers decide a row's topic: the ``topic`` option, the
    ``topic`` column, else the route's only topic), checked against the route."""
    route = task.route
    if task.topic is not None:
        return [(route.topic_of(task.topic), None)]
    index = batch.schema.get_field_index("topic")
    if index < 0:
        return [(route.topic_of(None), None)]
    column = batch.column(index)
    known = {t: route.topic_of(t) for t in column.unique().to_pylist()}
    topics = list(dict.fromkeys(known.values()))
    if len(topics) == 1:
        return [(topics[0], None)]
    import pyarrow.compute as pc  # only batches of several topics pay for it

    rows = pa.array(range(batch.num_rows), pa.int64())
    groups: Groups = []
    for topic in topics:
        given = pa.array([t for t, to in known.items() if to == topic], column.type)
        groups.append((topic, rows.filter(pc.is_in(column, value_set=given, skip_nulls=False))))
    return groups


def _encode(
    task: WriteTask, target: AvroTarget, column: pa.Array, groups: Groups, first: int
) -> pa.Array:
    core = on_core(task.engine)
    parts: list[pa.Array] = []
    failures: list[tuple[int, str, EncodeFailure]] = []
    for topic, rows in groups:
        schema = target.of(topic)
        encoder = _encoder(core, schema.schema, target.side == "key")
        values = column if rows is None else column.take(rows)
        try:
            parts.append(encoder.encode_arrow(values, schema.schema_id))
        except EncodeFailure as refused:
            at = refused.row if rows is None else rows[refused.row].as_py()
            failures.append((at, topic, refused))
    if failures:  # the first row that does not fit, as row by row in one pass
        row, topic, failure = min(failures, key=lambda f: f[0])
        schema = target.of(topic)
        raise AvroEncodeError(
            f"The {target.side} of row {first + row} of the task (topic {topic!r} on cluster "
            f"{task.route.cluster_id!r}, {target.side}Format=avro, subject "
            f"{schema.subject!r}, schema id {schema.schema_id} of registry "
            f"{target.registry}) cannot be written: {failure.reason}. Make the column's values "
            "fit the schema."
        )
    if len(parts) == 1:
        return parts[0]
    import pyarrow.compute as pc

    # Back in row order: the k-th row of the concatenated parts is row order[k].
    order = pa.concat_arrays([rows for _, rows in groups if rows is not None])
    return pa.concat_arrays(parts).take(pc.sort_indices(order))


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
        groups = _groups(task, batch)
        columns = list(batch.columns)
        fields = list(batch.schema)
        for target in targets:
            index = batch.schema.get_field_index(target.side)
            if index < 0:
                continue  # no key column: records without a key
            columns[index] = _encode(task, target, batch.column(index), groups, first)
            fields[index] = pa.field(target.side, pa.binary())
        first += batch.num_rows
        yield pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))
