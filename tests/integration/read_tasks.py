"""Read tasks of the executor read path without Spark, on either reader (test_read.py,
test_native_read.py, test_native_security.py).

A task is built the way the driver builds one (pickled and unpickled, as Spark ships it) and read
through :func:`~pyspark_dynamic_kafka.source.executor.read.read_task`: with ``reader="native"``
the driver's decision (:func:`~pyspark_dynamic_kafka.engines.choice.read_engine`) plans the
compiled core's direct fetch path or librdkafka's consumer for the cluster, as its client
properties allow, in ``ReadSettings.engines``; with ``reader="python"`` the Python reader reads.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from pyspark_dynamic_kafka.engines.choice import read_engine
from pyspark_dynamic_kafka.frozen import FrozenMapping
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.source.executor.read import read_task
from pyspark_dynamic_kafka.source.executor.task import OffsetRange, ReadSettings, ReadTask
from pyspark_dynamic_kafka.source.schema import spark_schema
from pyspark_dynamic_kafka.spark_versions import arrow_schema as spark_arrow_schema

#: The two readers of a task.
READERS = ("python", "native")


def make_task(
    cluster: Any,
    reader: str,
    *ranges: tuple[str, int, int, int],
    poll_timeout_ms: int = 30_000,
    fail_on_data_loss: bool = True,
    include_headers: bool = False,
    properties: Mapping[str, str] | None = None,
    **props: str,
) -> ReadTask:
    """A task reading ``ranges`` ``(topic, partition, start, end)`` of ``cluster`` with
    ``reader``; its client properties are the cluster's connection properties, or ``properties``
    (e.g. a SASL listener's, replacing them), then ``props``."""
    base = cluster.connection_properties() if properties is None else properties
    client = {**base, **props}
    engines = {cluster.name: read_engine(reader, cluster.name, client).name}
    settings = ReadSettings(
        poll_timeout_ms,
        60_000,
        frozenset({cluster.name}),
        fail_on_data_loss=fail_on_data_loss,
        include_headers=include_headers,
        engines=FrozenMapping(engines),
    )
    spans = tuple(OffsetRange(cluster.name, t, p, s, e) for t, p, s, e in ranges)
    task = ReadTask(spans, {cluster.name: FrozenProperties(client)}, settings)
    return pickle.loads(pickle.dumps(task))  # type: ignore[no-any-return]


def arrow_schema(include_headers: bool) -> pa.Schema:
    """The Arrow schema Spark checks a Python data source's batches against."""
    return spark_arrow_schema(spark_schema(include_headers))


def read_table(task: ReadTask) -> pa.Table:
    """Every batch of ``task``, each checked against Spark's schema, as one table."""
    schema = arrow_schema(task.settings.include_headers)
    batches = list(read_task(task))
    assert all(b.schema == schema for b in batches), [b.schema for b in batches]
    return pa.Table.from_batches(batches, schema=schema)
