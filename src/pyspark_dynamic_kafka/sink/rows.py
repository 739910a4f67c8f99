"""The stream writer's base class: PySpark 4.1's Arrow stream writer, or on PySpark 4.0 (which
hands a Python stream writer Spark's rows) the row writer, with the rows made into the same
Arrow batches the sink writes (:mod:`~pyspark_dynamic_kafka.spark_versions`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import chain, islice
from typing import Any

import pyarrow as pa
from pyspark.sql.types import Row, StructType

from pyspark_dynamic_kafka.spark_versions import arrow_schema

__all__ = ["ROWS_PER_BATCH", "StreamWriterBase", "as_batches"]

try:
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as StreamWriterBase
except ImportError:  # PySpark 4.0
    from pyspark.sql.datasource import (  # type: ignore[assignment]
        DataSourceStreamWriter as StreamWriterBase,
    )

#: Rows per Arrow batch made from Spark's rows.
ROWS_PER_BATCH = 10_000


def as_batches(items: Iterable[Any], schema: StructType) -> Iterator[pa.RecordBatch]:
    """``items``, Arrow batches as they are or Spark's rows (of ``schema``) made into batches."""
    items = iter(items)
    first = next(items, None)
    if first is None:
        return
    if not isinstance(first, Row):
        yield first
        yield from items
        return
    arrow = arrow_schema(schema)
    rows = chain([first], items)
    while chunk := list(islice(rows, ROWS_PER_BATCH)):
        yield pa.RecordBatch.from_pylist([r.asDict(recursive=True) for r in chunk], arrow)
