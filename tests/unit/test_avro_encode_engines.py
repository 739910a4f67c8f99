"""The Avro column encoder with either engine (``engines.implementations.column_encoder``): the
same payloads, tombstones and failures from the Python encoder (fastavro) and the compiled core's,
and the core handing a schema, a column type or a batch to the Python encoder where it does not
write what that encoder writes, saying why."""

from __future__ import annotations

import datetime
import decimal
import json
import logging
from typing import Any

import pyarrow as pa
import pytest
from tests.engine_roles import ENCODERS, skip_without_core
from tests.unit.avro_schemas import record_schema
from tests.unit.test_avro_encode import KIND, RICH, _row

from pyspark_dynamic_kafka.avro.decode import Decoder
from pyspark_dynamic_kafka.engines.encode_python import PythonColumnEncoder
from pyspark_dynamic_kafka.engines.implementations import column_encoder
from pyspark_dynamic_kafka.engines.roles import ColumnEncoder, EncodeFailure

UTC = datetime.timezone.utc


def _encoder(native: bool, schema: Any) -> ColumnEncoder:
    skip_without_core(native)
    return column_encoder(native, json.dumps(schema))


def _column(schema: Any, values: list[Any]) -> pa.Array:
    """``values`` as Spark's column of the schema's type holds them."""
    arrow_type = Decoder(json.dumps(schema), lambda ref: None).arrow_type  # type: ignore[arg-type,return-value]
    return pa.array(values, type=arrow_type)


def _python(schema: Any, column: pa.Array, schema_id: int = 70) -> list[Any]:
    return PythonColumnEncoder(json.dumps(schema)).encode_arrow(column, schema_id).to_pylist()


def _by_the_core(encoder: ColumnEncoder, native: bool) -> None:
    """With the core, the core wrote the column (no Python encoder was needed)."""
    if native:
        assert type(encoder).__name__ == "NativeColumnEncoder"
        assert encoder._python is None  # type: ignore[attr-defined]


@ENCODERS
def test_every_type_is_written_as_the_python_encoder_writes_it(native: bool) -> None:
    encoder = _encoder(native, RICH)
    column = _column(RICH, [_row(i) for i in range(8)] + [None])
    payloads = encoder.encode_arrow(column, 70)
    assert payloads.type == pa.binary()
    assert payloads.to_pylist() == _python(RICH, column)
    assert payloads.to_pylist()[-1] is None  # a tombstone
    _by_the_core(encoder, native)
    sliced = column.slice(3, 4)  # an offset into the buffers
    assert encoder.encode_arrow(sliced, 70).to_pylist() == _python(RICH, sliced)


@ENCODERS
@pytest.mark.parametrize(
    ("schema", "values"),
    [
        ("string", ["a", "", None, "naïve"]),
        ("long", [0, -1, 2**63 - 1, -(2**63)]),
        ("null", [None]),
        ({"type": "array", "items": "int"}, [[1, 2], [], None]),
        (["null", "string"], ["x", None]),
        (["int", "long"], [1, 2**40, -(2**31), -(2**31) - 1]),
        (["long", "int"], [1, 2**40]),
        (["double", "null", "float"], [0.1, 1e300, None]),
        ({"type": "map", "values": "string"}, [[("k", "v"), ("j", "")], []]),
        ({"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 0},
         [0, 1, -1, 127, 128, -128, -129, 10**38 - 1, -(10**38) + 1]),
        ({"type": "fixed", "name": "D", "size": 16, "logicalType": "decimal",
          "precision": 38, "scale": 0}, [0, -1, 10**38 - 1, -(10**38) + 1]),
        ({"type": "fixed", "name": "W", "size": 20, "logicalType": "decimal",
          "precision": 38, "scale": 0}, [0, -1, 10**38 - 1, -(10**38) + 1]),
        ({"type": "int", "logicalType": "date"},
         [datetime.date(1, 1, 1), datetime.date(9999, 12, 31), datetime.date(1969, 12, 31)]),
        ({"type": "long", "logicalType": "timestamp-millis"},
         [datetime.datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
          datetime.datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=UTC)]),
        ({"type": "long", "logicalType": "local-timestamp-millis"},
         [datetime.datetime(1800, 1, 1, 0, 0, 0, 999)]),
        (record_schema("N", ("a", ["null"]), ("b", "int")), [{"a": None, "b": 1}, None]),
    ],
)  # fmt: skip
def test_a_value_need_not_be_a_record(native: bool, schema: Any, values: list[Any]) -> None:
    if isinstance(schema, dict) and schema.get("logicalType") == "decimal":
        values = [None if v is None else decimal.Decimal(v) for v in values]
    encoder = _encoder(native, schema)
    column = _column(schema, values)
    assert encoder.encode_arrow(column, 3).to_pylist() == _python(schema, column, 3)
    _by_the_core(encoder, native)


@ENCODERS
@pytest.mark.parametrize(
    ("value", "said"),
    [
        ({"id": None, "kind": "A"}, "Field(Order.id) is None expected long"),
        ({"id": 1, "kind": "Z"}, "Order.kind is <Z> of type <class 'str'> expected"),
    ],
)
def test_a_value_that_does_not_fit_fails_with_the_python_encoders_reason(
    native: bool, value: Any, said: str
) -> None:
    schema = record_schema("Order", ("id", "long"), ("kind", KIND))
    # Spark's column may be nullable where the schema is not (the driver allows it).
    nullable = pa.struct([pa.field("id", pa.int64()), pa.field("kind", pa.string())])
    column = pa.array([{"id": 1, "kind": "B"}, None, value, value], nullable)
    with pytest.raises(EncodeFailure) as refused:
        _encoder(native, schema).encode_arrow(column, 3)
    assert refused.value.row == 2
    assert refused.value.reason.startswith("the value does not fit its Avro schema: ")
    assert said in refused.value.reason


@ENCODERS
def test_a_union_struct_with_no_member_set(native: bool) -> None:
    column = pa.array([{"member0": None, "member1": None}], _column(["int", "string"], []).type)
    with pytest.raises(EncodeFailure, match="no member set"):
        _encoder(native, ["int", "string"]).encode_arrow(column, 1)
    written = _encoder(native, ["null", "int", "string"]).encode_arrow(column, 1)
    assert written.to_pylist() == [b"\x00\x00\x00\x00\x01\x00"]


def test_the_core_hands_what_it_does_not_write_to_the_python_encoder(
    caplog: pytest.LogCaptureFixture,
) -> None:
    skip_without_core(True)
    caplog.set_level(logging.INFO, "pyspark_dynamic_kafka.engines.encode_core")
    uuid_fixed = {"type": "fixed", "name": "U", "size": 16, "logicalType": "uuid"}
    assert type(column_encoder(True, json.dumps(uuid_fixed))) is PythonColumnEncoder
    assert 'the logical type "uuid" on fixed' in caplog.text
    # A map with a key twice: the Python encoder's answer (the last value where the key is first).
    schema = {"type": "map", "values": "long"}
    column = pa.array([[("a", 1), ("b", 2), ("a", 3)]], pa.map_(pa.string(), pa.int64()))
    encoder = column_encoder(True, json.dumps(schema))
    assert encoder.encode_arrow(column, 1).to_pylist() == _python(schema, column, 1)
    # A timestamp without time zone in a zone: the Python encoder reads its wall time.
    local = {"type": "long", "logicalType": "local-timestamp-micros"}
    at = datetime.datetime(2026, 3, 29, 1, 30, tzinfo=UTC)
    column = pa.array([at], pa.timestamp("us", tz="Europe/Oslo"))
    encoder = column_encoder(True, json.dumps(local))
    assert encoder.encode_arrow(column, 1).to_pylist() == _python(local, column, 1)
    assert "of type timestamp[us, tz=Europe/Oslo]" in caplog.text
    # A null in a non-nullable field of a valid struct (no Spark column holds one): Arrow's Rust
    # validation refuses the batch, the Python encoder fails the row.
    order = record_schema("Order", ("id", "long"))
    column = _column(order, [{"id": 1}, {"id": None}])
    with pytest.raises(EncodeFailure) as refused:
        column_encoder(True, json.dumps(order)).encode_arrow(column, 1)
    assert refused.value.row == 1
    assert "Field(Order.id) is None expected long" in refused.value.reason
    assert "The Python encoder writes this batch's Avro values" in caplog.text


@ENCODERS
def test_timestamps_in_any_zone_are_their_instant(native: bool) -> None:
    schema = {"type": "long", "logicalType": "timestamp-micros"}
    column = pa.array(
        [datetime.datetime(2026, 3, 29, 1, 30, tzinfo=UTC)], pa.timestamp("us", tz="Europe/Oslo")
    )
    encoder = _encoder(native, schema)
    assert encoder.encode_arrow(column, 9).to_pylist() == _python(schema, column, 9)
    _by_the_core(encoder, native)
