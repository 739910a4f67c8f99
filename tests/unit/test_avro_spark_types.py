"""The Spark type of an Avro schema, as spark-avro's ``from_avro`` gives it (its default
options): primitives, logical types, named types used again by name, unions, nullability, and
the schemas Spark has no type for."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import types as T
from tests.unit.avro_schemas import record_schema

from pyspark_dynamic_kafka.avro.spark_types import (
    TIME_OF_DAY,
    AvroSchemaError,
    SparkType,
    spark_type,
)

#: (Avro schema, Spark type) of schemas whose values are never null.
TYPED: list[tuple[Any, T.DataType]] = [
    ("boolean", T.BooleanType()),
    ("int", T.IntegerType()),
    ("long", T.LongType()),
    ("float", T.FloatType()),
    ("double", T.DoubleType()),
    ("string", T.StringType()),
    ("bytes", T.BinaryType()),
    ({"type": "string", "logicalType": "uuid"}, T.StringType()),
    ({"type": "enum", "name": "E", "symbols": ["A", "B"]}, T.StringType()),
    ({"type": "fixed", "name": "F", "size": 16}, T.BinaryType()),
    ({"type": "int", "logicalType": "date"}, T.DateType()),
    ({"type": "int", "logicalType": "time-millis"}, T.IntegerType()),
    (
        {"type": "long", "logicalType": "time-micros"},
        T.TimeType(6) if TIME_OF_DAY else T.LongType(),
    ),
    ({"type": "long", "logicalType": "timestamp-millis"}, T.TimestampType()),
    ({"type": "long", "logicalType": "timestamp-micros"}, T.TimestampType()),
    ({"type": "long", "logicalType": "local-timestamp-millis"}, T.TimestampNTZType()),
    ({"type": "long", "logicalType": "local-timestamp-micros"}, T.TimestampNTZType()),
    ({"type": "string", "logicalType": "date"}, T.StringType()),  # not on its base: ignored
    (
        {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
        T.DecimalType(9, 2),
    ),
    ({"type": "bytes", "logicalType": "decimal", "precision": 5}, T.DecimalType(5, 0)),
    (
        {"type": "fixed", "name": "D", "size": 8, "logicalType": "decimal", "precision": 18},
        T.DecimalType(18, 0),
    ),
    # 8 bytes hold 18 digits, not 19: Avro ignores the logical type, Spark reads bytes.
    (
        {"type": "fixed", "name": "D", "size": 8, "logicalType": "decimal", "precision": 19},
        T.BinaryType(),
    ),
    ({"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 5}, T.BinaryType()),
    ({"type": "array", "items": "long"}, T.ArrayType(T.LongType(), False)),
    ({"type": "array", "items": ["null", "long"]}, T.ArrayType(T.LongType(), True)),
    ({"type": "map", "values": "string"}, T.MapType(T.StringType(), T.StringType(), False)),
    (
        {"type": "map", "values": ["string", "null"]},
        T.MapType(T.StringType(), T.StringType(), True),
    ),
    (["int", "long"], T.LongType()),
    (["double", "float"], T.DoubleType()),
    (["string"], T.StringType()),
    ([], T.StructType([])),
    (
        ["int", "string", {"type": "array", "items": "int"}],
        T.StructType(
            [
                T.StructField("member0", T.IntegerType(), True),
                T.StructField("member1", T.StringType(), True),
                T.StructField("member2", T.ArrayType(T.IntegerType(), False), True),
            ]
        ),
    ),
]


@pytest.mark.parametrize(("schema", "expected"), TYPED)
def test_each_avro_type_has_from_avros_spark_type(schema: Any, expected: T.DataType) -> None:
    assert spark_type(schema) == SparkType(expected, False)


#: (Avro schema, Spark type) of schemas whose values may be null.
NULLABLE: list[tuple[Any, T.DataType]] = [
    ("null", T.NullType()),
    (["null"], T.StructType([])),
    (["null", "string"], T.StringType()),
    (["long", "null"], T.LongType()),
    (["null", "int", "long"], T.LongType()),
    (
        ["null", "int", "string"],
        T.StructType(
            [
                T.StructField("member0", T.IntegerType(), True),
                T.StructField("member1", T.StringType()),
            ]
        ),
    ),
]


@pytest.mark.parametrize(("schema", "expected"), NULLABLE)
def test_a_union_with_null_is_nullable_and_the_rest_decides(
    schema: Any, expected: T.DataType
) -> None:
    assert spark_type(schema) == SparkType(expected, True)


#: A record with nested, optional and reused named types.
ORDER = record_schema(
    "Order",
    ("id", "long"),
    {"name": "note", "type": ["null", "string"], "default": None},
    (
        "ship",
        record_schema(
            "Address",
            ("city", "string"),
            ("kind", {"type": "enum", "name": "K", "symbols": ["A"]}),
        ),
    ),
    ("bill", ["null", "Address"]),
    ("bill_kind", "shop.K"),
    ("tags", {"type": "map", "values": "Address"}),
    namespace="shop",
)


def test_records_nest_and_named_types_are_used_again_by_name_in_their_namespace() -> None:
    schema = ORDER
    address = T.StructType(
        [T.StructField("city", T.StringType(), False), T.StructField("kind", T.StringType(), False)]
    )
    assert spark_type(schema) == SparkType(
        T.StructType(
            [
                T.StructField("id", T.LongType(), False),
                T.StructField("note", T.StringType(), True),
                T.StructField("ship", address, False),
                T.StructField("bill", address, True),
                T.StructField("bill_kind", T.StringType(), False),
                T.StructField("tags", T.MapType(T.StringType(), address, False), False),
            ]
        ),
        False,
    )


#: (Avro schema, what the refusal says) of schemas with no Spark type.
REFUSED: list[tuple[Any, str]] = [
    (
        {
            "type": "record",
            "name": "Node",
            "fields": [{"name": "next", "type": ["null", "Node"]}],
        },
        "$.fields[0].type[1]: record 'Node' contains itself",
    ),
    (
        {"type": "record", "name": "R", "fields": [{"name": "x", "type": "Missing"}]},
        "$.fields[0].type: unknown type 'Missing'",
    ),
    ({"type": "record", "name": "R"}, "$: record 'R' needs 'fields'"),
    ({"type": "record", "fields": []}, "$: a record needs a 'name'"),
    (42, "$: expected a type name"),
    (
        {"type": "bytes", "logicalType": "decimal", "precision": 40},
        "exceeds Spark's largest decimal precision, 38",
    ),
]


#: Schemas spark-avro types with types PySpark cannot represent: refused, saying what to do.
UNREPRESENTABLE: list[Any] = [
    {"type": "long", "logicalType": "timestamp-nanos"},
    {"type": "long", "logicalType": "local-timestamp-nanos"},
]
REFUSED += [(schema, "give a reader schema (valueSchema)") for schema in UNREPRESENTABLE]


@pytest.mark.parametrize(("schema", "said"), REFUSED)
def test_schemas_without_a_spark_type_are_refused_naming_where(schema: Any, said: str) -> None:
    with pytest.raises(AvroSchemaError) as refused:
        spark_type(schema)
    assert said in str(refused.value)
