"""Both Avro encoders against Apache Avro Java (``GenericDatumReader``, the avro 1.12 jar PySpark
ships, run in the suite's Spark JVM: :mod:`tests.integration.avro_java`).

Generated schemas and values (the writer schemas of :mod:`tests.unit.avro_pairs`, with
:mod:`tests.unit.avro_values`' values: records, nested records, arrays, maps, unions, enums,
fixed, decimals, dates, timestamps, nulls) are made the column Spark hands the sink (the values
written by fastavro and read by the Python decoder into the schema's Spark type), then encoded by
the Python encoder (fastavro) and by the compiled core's (``make_encoder``: the core, or the
Python encoder where the core hands the schema, the column or the batch over). Both give the same
payloads byte for byte (Avro's binary encoding is canonical for the values a Spark column holds),
or both fail at the same row with the same reason; Java reads each payload's body back as the
very value of the column (floats compared as their IEEE bits). ``AVRO_JAVA_ENCODE_CASES`` schemas
(1,000 by default), their aliases dropped (a reader's, nothing a writer writes); the core writes
more than 95% of the columns itself. The record of every type of the unit tests
(:mod:`tests.unit.test_avro_encode`) is written by the core alone.
"""

from __future__ import annotations

import io
import json
import os
from collections import Counter
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from tests.integration.avro_java import JavaAvro, check_generated, comparable, spark_value
from tests.unit.avro_pairs import Pair
from tests.unit.test_avro_encode import RICH, _row

from pyspark_dynamic_kafka.avro.decode import Decoder
from pyspark_dynamic_kafka.avro.spark_types import AvroSchemaError, spark_type
from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.engines.encode_core import NativeColumnEncoder, make_encoder
from pyspark_dynamic_kafka.engines.encode_python import PythonColumnEncoder
from pyspark_dynamic_kafka.engines.roles import ColumnEncoder, EncodeFailure

CASES = int(os.environ.get("AVRO_JAVA_ENCODE_CASES", "1000"))
SCHEMA_ID = 9
STATS: Counter[str] = Counter()

pytestmark = pytest.mark.skipif(core() is None, reason="the compiled core is not installed")


@pytest.fixture(scope="module")
def java(spark: Any) -> JavaAvro:
    return JavaAvro(spark)


def _column(schema: Any, values: list[Any]) -> pa.Array | None:
    """The column Spark hands the sink for ``values`` (fastavro's values of ``schema``): written
    by fastavro, read by the Python decoder; ``None`` when nothing of it is written."""
    parsed, payloads = fastavro.parse_schema(schema), []
    for value in values:
        out = io.BytesIO()
        try:
            fastavro.schemaless_writer(out, parsed, value)
        except Exception:
            continue
        payloads.append(b"\0" + SCHEMA_ID.to_bytes(4, "big") + out.getvalue())
    if not payloads:
        return None
    text = json.dumps(schema)
    decoder = Decoder(text, lambda ref: _registered(text), permissive=True)
    decoded = decoder.decode_arrow(pa.array(payloads, pa.binary()), None, str)
    good = pa.array([bad is None for bad in decoded.corrupt.to_pylist()])
    return decoded.values.filter(good)


def _registered(text: str) -> Any:
    from pyspark_dynamic_kafka.registry.client import RegisteredSchema

    return RegisteredSchema(text, schema_id=SCHEMA_ID)


def _without_aliases(schema: Any) -> Any:
    """``schema`` without aliases: they are the reader's (the Python decoder that makes the
    column would apply a field's alias naming another field), nothing a writer writes."""
    if isinstance(schema, list):
        return [_without_aliases(b) for b in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _without_aliases(v) for k, v in schema.items() if k != "aliases"}
    if "fields" in out:
        out["fields"] = [_without_aliases(f) for f in out["fields"]]
    return out


def _encoded(encoder: ColumnEncoder, column: pa.Array) -> list[Any] | tuple[int, str]:
    try:
        return encoder.encode_arrow(column, SCHEMA_ID).to_pylist()
    except EncodeFailure as failure:
        return failure.row, failure.reason


def check_schemas(java: JavaAvro, batch: list[Pair]) -> None:
    """Each writer schema of ``batch`` with its values: both encoders alike, Java reading them
    back as the column's values."""
    STATS["schemas"] += len(batch)
    cases = []
    for writer, _, values in batch:
        schema = _without_aliases(writer)
        try:
            spark_type(schema)
        except AvroSchemaError:
            STATS["schemas without a Spark type"] += 1
            continue
        column = _column(schema, values)
        if column is None or len(column) == 0:
            continue
        text = json.dumps(schema)
        python = _encoded(PythonColumnEncoder(text), column)
        encoder = make_encoder(text)
        native = _encoded(encoder, column)
        by_core = isinstance(encoder, NativeColumnEncoder) and encoder._python is None
        STATS[f"columns written by the {'core' if by_core else 'Python encoder'}"] += 1
        STATS["columns"] += 1
        assert native == python, (schema, column.to_pylist())
        if isinstance(python, tuple):
            STATS["columns both refuse"] += 1
            continue
        cases.append((schema, column, python))
    asked = [
        (json.dumps(schema), json.dumps(schema), [p[5:] for p in payloads if p is not None])
        for schema, _, payloads in cases
    ]
    answers = java.decode(asked)
    for (schema, column, payloads), answer in zip(cases, answers, strict=True):
        check_read(schema, column, payloads, answer)


def check_read(schema: Any, column: pa.Array, payloads: list[Any], answer: Any) -> None:
    """Java's reading (``answer``) of ``payloads`` is ``column``'s values, tombstones apart."""
    assert "schema_error" not in answer, (schema, answer)
    read = iter(answer)
    for value, payload in zip(column.to_pylist(), payloads, strict=True):
        STATS["values"] += 1
        if payload is None:
            assert value is None  # a tombstone
            continue
        javas = next(read)
        assert "error" not in javas, (schema, value, javas)
        mine = comparable(value, column.type)
        theirs = comparable(spark_value(schema, javas["value"]), column.type)
        assert theirs == mine, f"{json.dumps(schema)}\n{value}\n{javas}"


@pytest.mark.avro_java_pairs
def test_generated_values_encode_as_java_reads_them(java: JavaAvro) -> None:
    check_generated(java, check_schemas, CASES, STATS, "schemas")
    # The Python encoder writes only where a value does not fit (both fail) or fastavro writes
    # what no Spark column holds (a null where the schema has none, kept by the Python decoder).
    assert STATS["columns written by the core"] > 0.95 * STATS["columns"]


def test_every_type_encodes_as_java_reads_it(java: JavaAvro) -> None:
    """The sink's Avro unit test's record of every type (logical types, unions of each kind,
    named types by name, nested arrays and maps), written by the core alone."""
    text = json.dumps(RICH)
    arrow_type = Decoder(text, lambda ref: _registered(text)).arrow_type
    column = pa.array([_row(i) for i in range(8)] + [None], arrow_type)
    encoder = make_encoder(text)
    payloads = _encoded(encoder, column)
    assert isinstance(encoder, NativeColumnEncoder) and encoder._python is None
    assert payloads == _encoded(PythonColumnEncoder(text), column)
    assert isinstance(payloads, list)
    bodies = [p[5:] for p in payloads if p is not None]
    (answer,) = java.decode([(text, text, bodies)])
    check_read(RICH, column, payloads, answer)
