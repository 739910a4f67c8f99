"""The sink's Avro encoder (:mod:`pyspark_dynamic_kafka.avro.encode`): values of every Avro type,
as a Spark column of the schema's type holds them in Arrow, encoded and read back by the reader's
decoder (:class:`~pyspark_dynamic_kafka.avro.decode.Decoder`) into the very same values, the
schema id registered in the testing kit's registry (a test double of Confluent's REST API) by the
registry client, confluent-kafka's real AvroDeserializer reading the same payloads, and values
that do not fit refused naming the row and the field."""

from __future__ import annotations

import datetime
import decimal
import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from tests.unit.avro_schemas import TIME_FIELDS, Logical, record_schema

from pyspark_dynamic_kafka.avro.decode import Decoder
from pyspark_dynamic_kafka.avro.encode import AvroEncodeError, Encoder
from pyspark_dynamic_kafka.avro.framing import SchemaRef
from pyspark_dynamic_kafka.avro.spark_types import TIME_OF_DAY
from pyspark_dynamic_kafka.registry.client import RegisteredSchema, RegistryClient
from pyspark_dynamic_kafka.registry.endpoint import RegistryEndpoint
from pyspark_dynamic_kafka.testing.schema_registry import LocalSchemaRegistry

KIND = {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}
SHIP = record_schema("Ship", ("city", "string"))
RICH = record_schema(
    "Rich",
    ("flag", "boolean"),
    ("i", "int"),
    ("n", "long"),
    ("f", "float"),
    ("d", "double"),
    ("s", "string"),
    ("blob", "bytes"),
    ("kind", KIND),
    ("hash", {"type": "fixed", "name": "Hash", "size": 2}),
    *TIME_FIELDS,
    ("price", Logical.decimal(6, 2)),
    ("big", Logical.decimal(20, 3, fixed=("Big", 9))),
    ("ref", Logical.UUID),
    ("tags", {"type": "array", "items": "string"}),
    ("counts", {"type": "map", "values": ["null", "long"]}),
    ("ship", ["null", SHIP]),
    ("again", "Ship"),
    ("either", ["int", "string", "Kind", "Ship"]),
    ("maybe", ["null", "long", "string"]),
    ("wide", ["int", "long"]),
    ("real", ["float", "double"]),
    ("when", ["null", Logical.TIMESTAMP_MICROS]),
    ("nested", {"type": "array", "items": {"type": "map", "values": "Ship"}}),
    namespace="shop",
)
VALUE = SerializationContext("orders", MessageField.VALUE)
UTC = datetime.timezone.utc


@pytest.fixture
def registry() -> Iterator[LocalSchemaRegistry]:
    with LocalSchemaRegistry(first_id=70) as started:
        yield started


def _client(registry: LocalSchemaRegistry) -> RegistryClient:
    return RegistryClient(RegistryEndpoint((registry.url,)), "east", timeout_s=5)


def _decoder(registry: LocalSchemaRegistry, schema: dict[str, Any] | str) -> Decoder:
    client = _client(registry)

    def fetch(ref: SchemaRef) -> RegisteredSchema:
        assert ref.schema_id is not None
        return client.schema_by_id(ref.schema_id)

    return Decoder(json.dumps(schema), fetch)


def _row(i: int) -> dict[str, Any]:
    """A row as Spark's column of RICH's type holds it (what the decoder gives, too)."""
    either = [
        {"member0": -7, "member1": None, "member2": None, "member3": None},
        {"member0": None, "member1": "A", "member2": None, "member3": None},  # the string
        {"member0": None, "member1": None, "member2": "A", "member3": None},  # the enum
        {"member0": None, "member1": None, "member2": None, "member3": {"city": "Oslo"}},
    ][i % 4]
    return {
        "flag": i % 2 == 0,
        "i": -(2**31) + i,
        "n": 2**62 + i,
        "f": 1.5 + i,
        "d": -2.25e300,
        "s": f"naïve-{i}",
        "blob": bytes([0, i, 255]),
        "kind": "AB"[i % 2],
        "hash": b"ab",
        "day": datetime.date(1969, 12, 31) + datetime.timedelta(days=i),
        "at_ms": datetime.datetime(1969, 7, 20, 20, 17, 40, 123000, tzinfo=UTC),
        "at_us": datetime.datetime(2026, 11, 27, 1, 2, 3, 456789 - i, tzinfo=UTC),
        "local_ms": datetime.datetime(2026, 1, 2, 3, 4, 5, 6000),
        "local_us": datetime.datetime(1900, 1, 2, 3, 4, 5, 6 + i),
        "clock_ms": 3_723_004 + i,  # Spark's int for time-millis
        # a TimeType before PySpark 4.1 has none: the long of its micros, as spark-avro 4.0
        "clock_us": datetime.time(23, 59, 59, 999_999 - i) if TIME_OF_DAY else 86_399_999_999 - i,
        "price": decimal.Decimal("-1234.5") + i,
        "big": decimal.Decimal("12345678901234567.890"),
        "ref": "12345678-1234-5678-1234-56781234567" + str(i % 10),
        "tags": [] if i % 2 else ["x", "y"],
        "counts": [("a", 1), ("b", None)] if i % 2 else [],
        "ship": None if i % 2 else {"city": "Rome"},
        "again": {"city": "Bergen"},
        "either": either,
        "maybe": (None, {"member0": 5, "member1": None}, {"member0": None, "member1": "t"})[i % 3],
        "wide": 2**40 if i % 2 else -3,
        "real": 0.1,
        "when": None if i % 2 else datetime.datetime(2000, 2, 29, tzinfo=UTC),
        "nested": [[("k", {"city": "Oslo"})], []],
    }


def test_every_type_round_trips_through_the_readers_decoder(
    registry: LocalSchemaRegistry,
) -> None:
    schema = json.dumps(RICH)
    registered = _client(registry).register("rich-value", schema)
    assert registered.schema_id == 70
    decoder = _decoder(registry, RICH)
    rows = [_row(i) for i in range(8)] + [None]
    column = pa.array(rows, type=decoder.arrow_type)  # what Spark hands the writer
    payloads = Encoder(schema).encode(column.to_pylist(), 70)
    assert payloads[-1] is None  # a null value is a tombstone
    assert all(p is not None and p[:5] == b"\x00\x00\x00\x00\x46" for p in payloads[:-1])
    decoded = decoder.decode(payloads)
    assert decoded.values.to_pylist() == column.to_pylist()
    assert decoded.schema_ids.to_pylist() == [70] * 8 + [None]
    # The enum branch and the string branch of "either" stay apart.
    assert [r["either"]["member1"] for r in decoded.values.to_pylist()[:4]] == [
        None,
        "A",
        None,
        None,
    ]


def test_confluents_own_deserializer_reads_the_payloads(registry: LocalSchemaRegistry) -> None:
    schema = json.dumps(RICH)
    schema_id = _client(registry).register("orders-value", schema).schema_id
    assert schema_id is not None
    column = pa.array([_row(0)], type=_decoder(registry, RICH).arrow_type)
    (payload,) = Encoder(schema).encode(column.to_pylist(), schema_id)
    read = AvroDeserializer(SchemaRegistryClient({"url": registry.url}))(payload, VALUE)
    assert read["i"] == -(2**31) and read["kind"] == "A" and read["either"] == -7
    assert read["at_ms"] == datetime.datetime(1969, 7, 20, 20, 17, 40, 123000, tzinfo=UTC)
    assert read["counts"] == {} and read["ship"] == {"city": "Rome"}
    assert read["price"] == decimal.Decimal("-1234.50")


def test_timestamps_in_any_zone_are_their_instant(registry: LocalSchemaRegistry) -> None:
    schema = {"type": "long", "logicalType": "timestamp-micros"}
    schema_id = registry.register("t-value", json.dumps(schema))
    instant = datetime.datetime(2026, 3, 29, 1, 30, tzinfo=UTC)
    column = pa.array([instant], pa.timestamp("us", tz="Europe/Oslo"))
    # a ZoneInfo, or a pytz zone (pyarrow 18 with pytz installed)
    assert str(column.to_pylist()[0].tzinfo) == "Europe/Oslo"
    payloads = Encoder(json.dumps(schema)).encode(column.to_pylist(), schema_id)
    assert _decoder(registry, schema).decode(payloads).values.to_pylist() == [instant]


@pytest.mark.parametrize(
    ("schema", "values"),
    [
        ("string", ["a", "", None]),
        ("long", [0, -1, 2**63 - 1]),
        ({"type": "array", "items": "int"}, [[1, 2], []]),
        (["null", "string"], ["x", None]),
        ({"type": "map", "values": "string"}, [[("k", "v")]]),
    ],
)
def test_a_value_need_not_be_a_record(
    registry: LocalSchemaRegistry, schema: Any, values: list[Any]
) -> None:
    schema_id = registry.register("p-value", json.dumps(schema))
    decoder = _decoder(registry, schema)
    column = pa.array(values, type=decoder.arrow_type)
    payloads = Encoder(json.dumps(schema)).encode(column.to_pylist(), schema_id)
    assert decoder.decode(payloads).values.to_pylist() == column.to_pylist()


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ({"id": None, "kind": "A"}, "Field(Order.id) is None expected long"),
        ({"id": 1, "kind": "Z"}, "Order.kind is <Z> of type <class 'str'> expected"),
        (
            {"id": 2**63, "kind": "A"},
            "Order.id is <9223372036854775808> of type <class 'int'> expected long",
        ),
    ],
)
def test_a_value_that_does_not_fit_names_the_row_and_the_field(value: Any, said: str) -> None:
    schema = record_schema("Order", ("id", "long"), ("kind", KIND))
    encoder = Encoder(json.dumps(schema))
    with pytest.raises(AvroEncodeError) as refused:
        encoder.encode([{"id": 1, "kind": "B"}, value], 3, lambda i: f"row {i} of topic 'orders'")
    text = str(refused.value)
    assert text.startswith("row 1 of topic 'orders': the value does not fit its Avro schema: ")
    assert said in text


def test_a_union_struct_with_no_member_set_is_refused() -> None:
    encoder = Encoder(json.dumps(["int", "string"]))
    with pytest.raises(AvroEncodeError, match="no member set"):
        encoder.encode([{"member0": None, "member1": None}], 1)
    assert Encoder(json.dumps(["null", "int", "string"])).encode(
        [{"member0": None, "member1": None}], 1
    ) == [b"\x00\x00\x00\x00\x01\x00"]
