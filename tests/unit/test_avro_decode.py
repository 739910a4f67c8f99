"""The Python reader's Avro decoder (:mod:`pyspark_dynamic_kafka.avro.decode`): records written
by confluent-kafka's own AvroSerializer (a real serializer, against the testing kit's schema
registry, a test double of its REST API) decoded into the reader schema's Arrow column, writer
schemas resolved to the reader's, every Avro type shaped as Spark reads it, and FAILFAST and
PERMISSIVE on records that cannot be decoded."""

from __future__ import annotations

import datetime
import decimal
import io
import json
import uuid
from collections.abc import Iterator
from typing import Any

import fastavro
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient, header_schema_id_serializer
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from tests.unit.avro_schemas import ORDER_V1, Logical, record_schema, registry_fetch

from pyspark_dynamic_kafka.avro.decode import AvroDecodeError, Decoder
from pyspark_dynamic_kafka.avro.framing import SchemaRef
from pyspark_dynamic_kafka.errors import SchemaRegistryError
from pyspark_dynamic_kafka.registry.client import RegisteredSchema
from pyspark_dynamic_kafka.testing.schema_registry import LocalSchemaRegistry

V1 = ORDER_V1
V2 = {
    **V1,
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "qty", "type": "int", "default": 1},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}
VALUE = SerializationContext("orders", MessageField.VALUE)


@pytest.fixture
def registry() -> Iterator[LocalSchemaRegistry]:
    with LocalSchemaRegistry(first_id=40) as started:
        yield started


def test_writer_schemas_resolve_to_the_reader_schema(registry: LocalSchemaRegistry) -> None:
    serializer = AvroSerializer(SchemaRegistryClient({"url": registry.url}), json.dumps(V1))
    written = [serializer({"id": i, "item": f"i{i}"}, VALUE) for i in range(3)]
    v2 = AvroSerializer(SchemaRegistryClient({"url": registry.url}), json.dumps(V2))
    written.append(v2({"id": 9, "qty": 4, "note": "n"}, VALUE))
    decoder = Decoder(json.dumps(V2), registry_fetch(registry))
    decoded = decoder.decode([*written, None])
    assert decoded.values.to_pylist() == [
        {"id": 0, "qty": 1, "note": None},  # removed item, defaults for the added fields
        {"id": 1, "qty": 1, "note": None},
        {"id": 2, "qty": 1, "note": None},
        {"id": 9, "qty": 4, "note": "n"},
        None,  # a tombstone
    ]
    assert decoded.schema_ids.to_pylist() == [40, 40, 40, 41, None]
    assert decoded.corrupt.null_count == 5
    assert (
        str(decoded.values.type) == "struct<id: int64 not null, qty: int32 not null, note: string>"
    )


A_ONLY = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}
A_AND_B = {
    **A_ONLY,
    "fields": [{"name": "a", "type": "long"}, {"name": "b", "type": "string", "default": ""}],
}


@pytest.mark.parametrize("field", [MessageField.VALUE, MessageField.KEY])
def test_a_reserialized_record_is_read_with_its_last_schema_header(
    registry: LocalSchemaRegistry, field: str
) -> None:
    """A stream processor forwards its input's schema header and its serializer appends the
    output's: Schema Registry's Java deserializer reads the last one. Read with the first, the
    body written with ``A_AND_B`` would decode as ``A_ONLY``, and ``b`` take its default. A null
    schema header leaves the payload's prefix to name the schema (Java's and confluent-kafka's
    deserializers both)."""
    client = SchemaRegistryClient({"url": registry.url})
    by_header = {"schema.id.serializer": header_schema_id_serializer}
    headers: list[tuple[str, bytes | None]] = []
    AvroSerializer(client, json.dumps(A_ONLY), conf=by_header)(
        {"a": 7}, SerializationContext("t", field, headers)
    )
    body = AvroSerializer(client, json.dumps(A_AND_B), conf=by_header)(
        {"a": 7, "b": "payload-b"}, SerializationContext("t", field, headers)
    )
    plain = AvroSerializer(client, json.dumps(A_AND_B))(
        {"a": 8, "b": "prefixed"}, SerializationContext("u", field)
    )
    name = f"__{field}_schema_id"
    decoder = Decoder(json.dumps(A_AND_B), registry_fetch(registry), key=field == MessageField.KEY)
    reserialized = decoder.decode([body], [headers])
    assert reserialized.values.to_pylist() == [{"a": 7, "b": "payload-b"}]
    assert reserialized.schema_ids.to_pylist() == [None]  # named by a GUID
    null_headers = decoder.decode(
        [plain, plain], [[(name, None)], [*headers, ("other", b"x"), (name, None)]]
    )
    assert null_headers.values.to_pylist() == [{"a": 8, "b": "prefixed"}] * 2
    assert null_headers.schema_ids.to_pylist() == [int.from_bytes(plain[1:5], "big")] * 2


#: Every kind of Avro type, written and read with one schema.
RICH = record_schema(
    "Rich",
    ("flag", "boolean"),
    ("f", "float"),
    ("blob", "bytes"),
    ("kind", {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}),
    ("hash", {"type": "fixed", "name": "Hash", "size": 2}),
    ("day", Logical.DATE),
    ("at", Logical.TIMESTAMP_MILLIS),
    ("local", Logical.LOCAL_TIMESTAMP_MICROS),
    ("clock", Logical.TIME_MILLIS),
    ("price", Logical.decimal(6, 2)),
    ("ref", Logical.UUID),
    ("tags", {"type": "array", "items": "string"}),
    ("counts", {"type": "map", "values": ["null", "long"]}),
    ("either", ["int", "string", "Kind"]),
    ("ship", ["null", record_schema("Addr", ("city", "string"))]),
    namespace="shop",
)


def test_every_avro_type_is_shaped_as_spark_reads_it(registry: LocalSchemaRegistry) -> None:
    schema_id = registry.register("rich-value", json.dumps(RICH))
    at = datetime.datetime(2026, 11, 27, 1, 2, 3, 4000, tzinfo=datetime.timezone.utc)
    ref = uuid.UUID("12345678-1234-5678-1234-567812345678")
    base = {
        "flag": True, "f": 1.5, "blob": b"\x00\x01", "kind": "B", "hash": b"ab",
        "day": datetime.date(2026, 11, 27), "at": at,
        "local": datetime.datetime(2026, 11, 27, 1, 2, 3, 5),
        "clock": datetime.time(1, 2, 3, 4000), "price": decimal.Decimal("12.34"), "ref": ref,
        "tags": ["x", "y"], "counts": {"a": 1, "b": None}, "ship": {"city": "Oslo"},
    }  # fmt: skip
    records = [
        {**base, "either": 7},
        {**base, "either": "s", "ship": None},
        {**base, "either": "A"},
    ]
    parsed = fastavro.parse_schema(RICH)
    payloads = []
    for record in records:
        body = io.BytesIO()
        fastavro.schemaless_writer(body, parsed, record)
        payloads.append(b"\x00" + schema_id.to_bytes(4, "big") + body.getvalue())
    # The enum branch of "either" is written as an enum: tell it from the string "A".
    body = io.BytesIO()
    fastavro.schemaless_writer(body, parsed, {**base, "either": ("shop.Kind", "A")})
    payloads[2] = b"\x00" + schema_id.to_bytes(4, "big") + body.getvalue()
    rows = Decoder(json.dumps(RICH), registry_fetch(registry)).decode(payloads).values.to_pylist()
    expected = {
        **base,
        "kind": "B",
        "clock": 3_723_004,  # Spark reads time-millis as an int
        "ref": str(ref),
        "counts": [("a", 1), ("b", None)],
    }
    assert rows[0] == {**expected, "either": {"member0": 7, "member1": None, "member2": None}}
    assert rows[1] == {
        **expected,
        "either": {"member0": None, "member1": "s", "member2": None},
        "ship": None,
    }
    assert rows[2]["either"] == {"member0": None, "member1": None, "member2": "A"}


def test_failfast_names_the_record_permissive_keeps_its_bytes(
    registry: LocalSchemaRegistry,
) -> None:
    good = AvroSerializer(SchemaRegistryClient({"url": registry.url}), json.dumps(V1))(
        {"id": 1, "item": "pen"}, VALUE
    )
    bad = {
        "no magic byte": (b'{"id": 1}', "not a magic byte"),
        "truncated": (good[:-2], "its bytes end before the schema's values do"),
        "unknown id": (b"\x00\x00\x00\x03\xe7" + good[5:], "does not hold schema id 999"),
    }
    where = "cluster east, orders/0 offset 7"
    for name, (payload, said) in bad.items():
        failfast = Decoder(json.dumps(V1), registry_fetch(registry))
        with pytest.raises((AvroDecodeError, SchemaRegistryError)) as failed:
            failfast.decode([good, payload], where=lambda i: where)
        assert str(failed.value).startswith(where) and said in str(failed.value), name
    permissive = Decoder(json.dumps(V1), registry_fetch(registry), permissive=True)
    payloads = [good, *(p for p, _ in bad.values())]
    decoded = permissive.decode(payloads)
    assert decoded.values.to_pylist() == [{"id": 1, "item": "pen"}, None, None, None]
    assert decoded.corrupt.to_pylist() == [None, *payloads[1:]]
    assert decoded.schema_ids.to_pylist() == [40, None, None, None]

    # A registry that is down: FAILFAST fails naming the record and the registry; PERMISSIVE
    # reads on and picks the registry up when it is back. (Writer schemas are cached for the
    # process, so the outage is met before any read of id 41 succeeds.)
    v2_bytes = AvroSerializer(SchemaRegistryClient({"url": registry.url}), json.dumps(V2))(
        {"id": 2, "qty": 3, "note": None}, VALUE
    )
    with registry.down(), pytest.raises(SchemaRegistryError) as outage:
        Decoder(json.dumps(V2), registry_fetch(registry)).decode([v2_bytes], where=lambda i: where)
    assert str(outage.value).startswith(f"{where}: Cluster 'east': schema registry")
    assert "could not be reached for schema id 41" in str(outage.value)
    reader = Decoder(json.dumps(V2), registry_fetch(registry), permissive=True)
    with registry.down():
        down = reader.decode([v2_bytes])
    assert down.values.to_pylist() == [None] and down.corrupt.to_pylist() == [v2_bytes]
    back = reader.decode([v2_bytes])
    assert back.values.to_pylist() == [{"id": 2, "qty": 3, "note": None}]


def test_a_value_arrow_does_not_take_fails_its_record_not_the_batch() -> None:
    # A stand-in shaper (the one mock here): no known schema pair makes the real shaping give a
    # value Arrow refuses any more (make fuzz found one), so one is made: record 1's id as text.
    def fetch(_: SchemaRef) -> RegisteredSchema:
        return RegisteredSchema(json.dumps(V1), schema_id=5)

    payloads = []
    for i in range(3):
        out = io.BytesIO()
        fastavro.schemaless_writer(out, fastavro.parse_schema(V1), {"id": i, "item": "pen"})
        payloads.append(b"\0\0\0\0\5" + out.getvalue())

    def misshaped(value: Any) -> Any:
        return {**value, "id": "one"} if value["id"] == 1 else value

    permissive = Decoder(json.dumps(V1), fetch, permissive=True)
    permissive._shape = misshaped
    decoded = permissive.decode(payloads)
    assert decoded.values.to_pylist() == [{"id": 0, "item": "pen"}, None, {"id": 2, "item": "pen"}]
    assert decoded.corrupt.to_pylist() == [None, payloads[1], None]
    assert decoded.schema_ids.to_pylist() == [5, None, 5]
    failfast = Decoder(json.dumps(V1), fetch)
    failfast._shape = misshaped
    with pytest.raises(AvroDecodeError, match="orders/0 offset 1 cannot be decoded as Avro: its "):
        failfast.decode(payloads, where=lambda i: f"orders/0 offset {i}")


#: A ``logicalType`` where Avro has none (on an enum, an array, a map), which Java ignores.
IGNORED_LOGICAL = {
    "type": "record",
    "name": "R",
    "fields": [
        {
            "name": "at",
            "type": {
                "type": "array",
                "logicalType": "x",
                "items": {"type": "long", "logicalType": "timestamp-millis"},
            },
        },
        {"name": "by", "type": {"type": "map", "logicalType": "x", "values": ["int", "string"]}},
        {
            "name": "e",
            "type": {"type": "enum", "name": "E", "symbols": ["A", "B"], "logicalType": "x"},
        },
    ],
}


def test_a_logical_type_where_avro_has_none_is_ignored() -> None:
    writer = {
        **IGNORED_LOGICAL,
        "fields": [
            *IGNORED_LOGICAL["fields"][:2],
            {"name": "e", "type": ["null", {"type": "enum", "name": "E", "symbols": ["A", "B"]}]},
        ],
    }
    body = io.BytesIO()
    fastavro.schemaless_writer(
        body, fastavro.parse_schema(writer), {"at": [1000], "by": {"k": 1, "j": "s"}, "e": "B"}
    )
    fetch = lambda ref: RegisteredSchema(json.dumps(writer))  # noqa: E731
    decoded = Decoder(json.dumps(IGNORED_LOGICAL), fetch).decode([b"\0\0\0\0\7" + body.getvalue()])
    at = datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=datetime.timezone.utc)
    [value] = decoded.values.to_pylist()
    assert value["at"] == [at]
    assert dict(value["by"]) == {
        "k": {"member0": 1, "member1": None},
        "j": {"member0": None, "member1": "s"},
    }
    assert value["e"] == "B"
