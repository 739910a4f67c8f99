"""The compiled core's Avro decoder (:mod:`pyspark_dynamic_kafka.engines.decode_core`) against the
Python decoder (:mod:`pyspark_dynamic_kafka.avro.decode`), the reference: the same batches
(records written by fastavro, hypothesis-generated, for every type the core decodes) give the
same Arrow arrays, schema ids, corrupt records and FAILFAST errors. Writer schemas come from the
testing kit's schema registry (a test double of its REST API) through the real registry client.
Skipped when the core is not installed."""

from __future__ import annotations

import datetime
import io
import json
import uuid
from collections.abc import Iterator
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from benchmarks.avro_records import SCHEMA as BENCHMARK
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.engine_roles import NO_CORE
from tests.unit.avro_schemas import TIME_FIELDS, Logical, record_schema, registry_fetch
from tests.unit.avro_values import avro_values

from pyspark_dynamic_kafka.avro.decode import Decoded, Decoder
from pyspark_dynamic_kafka.avro.spark_types import TIME_OF_DAY
from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.engines.decode_core import NativeDecoder, make_decoder
from pyspark_dynamic_kafka.testing.schema_registry import LocalSchemaRegistry

pytestmark = pytest.mark.skipif(core() is None, reason=NO_CORE)

UTC = datetime.timezone.utc


LOGICAL = record_schema(
    "Logical",
    *TIME_FIELDS,
    ("price", Logical.decimal(12, 3)),
    ("fixed_price", Logical.decimal(10, 2, fixed=("D", 8))),
    ("id", Logical.UUID),
)
NESTED = record_schema(
    "Outer",
    ("f", "float"),
    ("kind", {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]}),
    ("raw", {"type": "fixed", "name": "Raw", "size": 3}),
    ("tags", {"type": "array", "items": "string"}),
    ("maybe", {"type": "array", "items": ["null", "long"]}),
    ("attrs", {"type": "map", "values": ["double", "null"]}),
    ("inner", record_schema("Inner", ("k", "Kind"), ("n", ["null", "int"]))),
    ("again", ["null", "Inner"]),
    ("deep", {"type": "map", "values": {"type": "array", "items": "Raw"}}),
    namespace="shop",
)
UNIONS = record_schema(
    "Unions",
    ("a", ["int", "string"]),
    ("b", ["null", "int", "string"]),
    ("c", ["string", "null", {"type": "array", "items": "int"}]),
    ("d", ["int", "long"]),
    ("e", ["float", "null", "double"]),
    ("f", [record_schema("A", ("x", "int")), record_schema("B", ("y", "string"))]),
    ("g", {"type": "array", "items": ["null", record_schema("C", ("z", "B")), "boolean"]}),
)
PLAIN = ["string", "long", {"type": "map", "values": "int"}, ["null", "bytes"], ["long", "string"]]
SCHEMAS = [BENCHMARK, LOGICAL, NESTED, UNIONS, *PLAIN]


@pytest.fixture(scope="module")
def registry() -> Iterator[LocalSchemaRegistry]:
    with LocalSchemaRegistry(first_id=10) as started:
        yield started


def _register(registry: LocalSchemaRegistry, schema: Any) -> tuple[int, bytes]:
    """The id and GUID (16 bytes) ``schema`` is registered under."""
    answer = registry.answer("POST", "/subjects/s/versions", {"schema": json.dumps(schema)})
    return int(answer["id"]), uuid.UUID(answer["guid"]).bytes


def _body(schema: Any, value: Any) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), value)
    return out.getvalue()


def _both(
    registry: LocalSchemaRegistry,
    reader: Any,
    payloads: list[bytes | None],
    headers: list[list[tuple[str, bytes | None]] | None] | None = None,
    permissive: bool = True,
    key: bool = False,
) -> tuple[Decoded, Decoded]:
    """The batch decoded by the Python decoder and by the core's, checked the same."""
    values = pa.array(payloads, pa.binary())
    header_type = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    arrow_headers = None
    if headers is not None:
        rows = [None if h is None else [{"key": k, "value": v} for k, v in h] for h in headers]
        arrow_headers = pa.array(rows, header_type)
    text, fetch = json.dumps(reader), registry_fetch(registry)
    python = Decoder(text, fetch, permissive, key)
    native = NativeDecoder(text, fetch, permissive, key)
    where = lambda i: f"record {i}"  # noqa: E731
    expected = python.decode_arrow(values, arrow_headers, where)
    got = native.decode_arrow(values, arrow_headers, where)
    got.values.validate(full=True)
    assert got.values.type == expected.values.type == python.arrow_type
    assert got.values.to_pylist() == expected.values.to_pylist()
    assert got.values.equals(expected.values)  # also what to_pylist rounds (nanoseconds)
    assert got.schema_ids.to_pylist() == expected.schema_ids.to_pylist()
    assert got.corrupt.to_pylist() == expected.corrupt.to_pylist()
    return expected, got


Headers = list[tuple[str, bytes | None]] | None


def _names(key: bool) -> tuple[str, str]:
    """The schema header of keys (``key``) or values, and the other side's."""
    keys, values = "__key_schema_id", "__value_schema_id"
    return (keys, values) if key else (values, keys)


def _framings(
    body: bytes, schema_id: int, guid: bytes, key: bool
) -> st.SearchStrategy[tuple[bytes, Headers]]:
    """``body`` framed as Confluent's serializers (and stream processors forwarding headers) may
    frame it: named by the record's last schema header (its id or GUID, and bytes Java does not
    look at), after other headers, schema headers among them, that do not count; or by the
    payload's prefix, no header of its name or the last one null."""
    name, other = _names(key)
    refs = st.sampled_from([b"\0" + schema_id.to_bytes(4, "big"), b"\1" + guid])
    junk = st.none() | st.binary(max_size=20)
    before = st.lists(st.tuples(st.sampled_from(["trace", other, name]), junk), max_size=3)
    after = st.lists(st.tuples(st.sampled_from(["trace", other]), junk), max_size=2)
    by_header = st.tuples(refs, st.binary(max_size=3), before, after).map(
        lambda t: (body, [*t[2], (name, t[0] + t[1]), *t[3]])
    )

    def prefixed(ref: bytes, first: Headers, null: bool, last: Headers) -> tuple[bytes, Headers]:
        named = null or any(h == name for h, _ in first or ())
        return ref + body, [*(first or ()), *([(name, None)] if named else []), *(last or ())]

    by_prefix = st.builds(prefixed, refs, before, st.booleans(), after)
    return by_header | by_prefix | refs.map(lambda ref: (ref + body, None))


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: json.dumps(s)[:40])
def test_every_supported_type_decodes_as_the_python_decoder_does(
    registry: LocalSchemaRegistry, schema: Any
) -> None:
    schema_id, guid = _register(registry, schema)

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.booleans(), st.lists(st.none() | avro_values(schema), max_size=12), st.data())
    def check(key: bool, values: list[Any], data: st.DataObject) -> None:
        payloads: list[bytes | None] = []
        headers: list[Headers] = []
        for value in values:
            if value is None:
                payloads.append(None)
                headers.append(data.draw(st.none() | st.just([(_names(key)[0], None)])))
                continue
            payload, named = data.draw(_framings(_body(schema, value), schema_id, guid, key))
            payloads.append(payload)
            headers.append(named)
        expected, _ = _both(registry, schema, payloads, headers, permissive=False, key=key)
        assert expected.corrupt.null_count == len(values)

    check()


V1 = record_schema("Order", ("id", "long"), ("item", "string"), ("n", "int"), ("f", "float"))
V2 = record_schema(
    "Order",
    ("id", "long"),
    ("qty", {"type": "int"}),
    ("note", ["null", "string"]),
    ("n", "double"),
    ("f", "double"),
)
V2["fields"][1]["default"] = 1
V2["fields"][2]["default"] = None
SWAPPED = record_schema("Pair", ("s", "string"), ("b", "bytes"), ("i", "int"), ("l", "long"))
SWAPPED_READER = record_schema(
    "Pair", ("s", "bytes"), ("b", "string"), ("i", "float"), ("l", "float")
)


@pytest.mark.parametrize("key", [False, True])
def test_writer_schemas_resolve_in_all_framings_and_change_mid_batch(
    registry: LocalSchemaRegistry, key: bool
) -> None:
    v1_id, _ = _register(registry, V1)
    v2_id, v2_guid = _register(registry, V2)
    header = "__key_schema_id" if key else "__value_schema_id"
    old = _body(V1, {"id": 1, "item": "a", "n": 3, "f": 1.5})
    new = _body(V2, {"id": 2, "qty": 5, "note": "x", "n": 2.5, "f": 0.25})
    payloads = [
        b"\0" + v1_id.to_bytes(4, "big") + old,
        b"\1" + v2_guid + new,
        None,
        new,  # named by its header
        b"\0" + v1_id.to_bytes(4, "big") + old + b"trailing",
        b"\0" + v2_id.to_bytes(4, "big") + new,
        old,  # its last header wins over the prefix-looking body
    ]
    headers: list[list[tuple[str, bytes | None]] | None] = [
        None,
        [],
        None,
        [("other", b"x"), (header, b"\1" + v2_guid)],
        None,
        None,
        [(header, b"junk"), (header, b"\0" + v1_id.to_bytes(4, "big"))],
    ]
    expected, _ = _both(registry, V2, payloads, headers, permissive=False, key=key)
    assert expected.schema_ids.to_pylist() == [v1_id, None, None, None, v1_id, v2_id, v1_id]
    assert expected.values.to_pylist()[0] == {"id": 1, "qty": 1, "note": None, "n": 3.0, "f": 1.5}
    pair_id, _ = _register(registry, SWAPPED)
    swapped = b"\0" + pair_id.to_bytes(4, "big")
    body = _body(SWAPPED, {"s": "é", "b": b"x", "i": -3, "l": 2**40})
    expected, _ = _both(registry, SWAPPED_READER, [swapped + body], permissive=False, key=key)
    assert expected.values.to_pylist() == [{"s": "é".encode(), "b": "x", "i": -3.0, "l": 2.0**40}]


A_ONLY = record_schema("AB", ("a", "long"))
A_AND_B = record_schema("AB", ("a", "long"), ("b", "string"))
A_AND_B["fields"][1]["default"] = ""


@pytest.mark.parametrize("key", [False, True])
def test_the_last_schema_header_wins_and_a_null_one_leaves_the_prefix(
    registry: LocalSchemaRegistry, key: bool
) -> None:
    """Schema Registry's Java deserializer (``DualSchemaIdDeserializer``) reads a record's last
    schema header: a record a stream processor re-serialized carries its input's, then its
    output's. A null header leaves the prefix to name the schema."""
    v1_id, v1_guid = _register(registry, A_ONLY)
    v2_id, v2_guid = _register(registry, A_AND_B)
    name, other = _names(key)
    by_id = {v: b"\0" + i.to_bytes(4, "big") for v, i in ((1, v1_id), (2, v2_id))}
    by_guid = {1: b"\1" + v1_guid, 2: b"\1" + v2_guid}
    payloads: list[bytes | None] = [
        _body(A_AND_B, {"a": 7, "b": "payload-b"}),
        _body(A_AND_B, {"a": 7, "b": "payload-b"}),
        by_id[2] + _body(A_AND_B, {"a": 8, "b": "eight"}),
        by_id[1] + _body(A_ONLY, {"a": 9}),
        _body(A_AND_B, {"a": 10, "b": "ten"}),
        by_guid[1] + _body(A_ONLY, {"a": 11}),
    ]
    headers: list[Headers] = [
        [(name, by_guid[1]), (name, by_guid[2])],
        [(name, by_id[1]), ("trace", b"t"), (name, by_id[2])],
        [(name, None)],
        [(name, by_guid[2]), (other, by_id[2]), (name, None)],
        [(name, by_id[2]), (other, by_id[1])],
        [(other, by_id[2])],
    ]
    expected, _ = _both(registry, A_AND_B, payloads, headers, permissive=False, key=key)
    assert expected.values.to_pylist() == [
        {"a": 7, "b": "payload-b"},
        {"a": 7, "b": "payload-b"},
        {"a": 8, "b": "eight"},
        {"a": 9, "b": ""},
        {"a": 10, "b": "ten"},
        {"a": 11, "b": ""},
    ]
    assert expected.schema_ids.to_pylist() == [None, v2_id, v2_id, v1_id, v2_id, None]


KINDS = {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}
UNION_RESOLUTIONS = [
    ("int", ["null", "long"], [1, -2]),
    (["int", "string"], ["string", "int"], [1, "a"]),
    (["int", "string"], ["null", "string", "long"], [1, "a"]),
    ("string", ["int", "string"], ["a"]),
    (["null", "int"], ["null", "long", "string"], [None, 5]),
    (KINDS, KINDS | {"symbols": ["C", "A", "B"]}, ["B", "C"]),
]


@pytest.mark.parametrize(("writer", "reader", "values"), UNION_RESOLUTIONS)
def test_unions_and_enums_resolve_as_in_the_python_decoder(
    registry: LocalSchemaRegistry, writer: Any, reader: Any, values: list[Any]
) -> None:
    writer_id, _ = _register(registry, writer)
    prefix = b"\0" + writer_id.to_bytes(4, "big")
    expected, _ = _both(registry, reader, [prefix + _body(writer, v) for v in values])
    assert expected.corrupt.null_count == len(values)


def _failures(registry: LocalSchemaRegistry) -> tuple[list[bytes | None], list[Any]]:
    v1_id, _ = _register(registry, V1)
    good = b"\0" + v1_id.to_bytes(4, "big") + _body(V1, {"id": 7, "item": "abc", "n": 1, "f": 2.0})
    unresolvable, _ = _register(registry, record_schema("Order", ("id", "string")))
    payloads: list[bytes | None] = [
        good,
        good[:-3],  # truncated inside the float
        b"",
        b"\7abc",
        b"\0\0\0",
        good,
        b"\0" + (99999).to_bytes(4, "big") + b"\2",  # an id the registry does not hold
        good[:6] + b"\x7f" + good[7:],  # damaged: a string length past the end
        b"\0" + unresolvable.to_bytes(4, "big") + b"\2a",
        None,
        good[:7],  # truncated inside the string
        good,
    ]
    return payloads, [0, 5, 11]


def test_permissive_flags_the_same_records_corrupt(registry: LocalSchemaRegistry) -> None:
    payloads, good = _failures(registry)
    _, got = _both(registry, V1, payloads, permissive=True)
    assert [i for i, v in enumerate(got.values.to_pylist()) if v is not None] == good
    assert got.corrupt.null_count == len(good) + 1  # the tombstone is not corrupt


@pytest.mark.parametrize("first", range(1, 9))
def test_failfast_raises_the_python_decoders_error(
    registry: LocalSchemaRegistry, first: int
) -> None:
    payloads, _ = _failures(registry)
    values = pa.array(payloads[0:1] + payloads[first:], pa.binary())
    fetch, text = registry_fetch(registry), json.dumps(V1)
    errors = []
    for decoder in (Decoder(text, fetch), NativeDecoder(text, fetch)):
        with pytest.raises(Exception) as raised:
            decoder.decode_arrow(values, None, lambda i: f"record {i}")
        errors.append(raised.value)
    assert type(errors[1]) is type(errors[0])
    if first == 8:  # the reason after the schemas' names is each library's
        cut = str(errors[0]).index("the reader schema Order: ") + len("the reader schema Order: ")
        assert str(errors[1])[:cut] == str(errors[0])[:cut]
    else:
        assert str(errors[1]) == str(errors[0])


def test_a_schema_the_core_cannot_give_falls_back_to_the_python_decoder(
    registry: LocalSchemaRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    duration = {"type": "fixed", "name": "D", "size": 12, "logicalType": "duration"}
    union = json.dumps(record_schema("U", ("v", duration)))
    with pytest.raises(ValueError, match="the reader schema U: arrow-avro reads it as Interval"):
        NativeDecoder(union, registry_fetch(registry))
    with caplog.at_level("INFO"):
        assert type(make_decoder(union, registry_fetch(registry))) is Decoder
    assert "the compiled core cannot" in caplog.text
    assert type(make_decoder(json.dumps(V1), registry_fetch(registry))) is NativeDecoder


def test_a_union_naming_a_type_by_name_is_read_by_the_python_decoder(
    registry: LocalSchemaRegistry,
) -> None:
    kind = {"type": "enum", "name": "Kind", "symbols": ["P", "Q"]}
    by_name = record_schema("W", ("k", kind), ("v", ["int", "Kind"]))
    with pytest.raises(ValueError, match=r'the union \["int","Kind"\] has the named type Kind'):
        NativeDecoder(json.dumps(by_name), registry_fetch(registry))
    # Kind defined in the union: the core reads it
    reader = record_schema("W", ("v", ["int", kind]))
    writer_id, _ = _register(registry, by_name)
    payload = b"\0" + writer_id.to_bytes(4, "big") + _body(by_name, {"k": "P", "v": "Q"})
    native = NativeDecoder(json.dumps(reader), registry_fetch(registry), permissive=True)
    decoded = native.decode_arrow(pa.array([payload]), None, str)
    assert native._python is not None  # handed over at the writer schema
    python = Decoder(json.dumps(reader), registry_fetch(registry), permissive=True)
    assert decoded.values.equals(python.decode_arrow(pa.array([payload]), None, str).values)


LAST_MS, FIRST_MS = 253_402_300_799_999, -62_135_596_800_000
EDGES = [
    ("timestamp-millis", "long", [FIRST_MS, LAST_MS], [FIRST_MS - 1, LAST_MS + 1, 2**62]),
    ("local-timestamp-millis", "long", [FIRST_MS, LAST_MS], [LAST_MS + 1]),
    ("timestamp-micros", "long", [FIRST_MS * 1000, LAST_MS * 1000 + 999], [LAST_MS * 1000 + 1000]),
    ("date", "int", [-719_162, 2_932_896], [-719_163, 2_932_897]),
    # A time of day past a day's end; before PySpark 4.1 (no TimeType) any long, as spark-avro.
    ("time-micros", "long", [0, 86_399_999_999], [86_400_000_000])
    if TIME_OF_DAY
    else ("time-micros", "long", [0, 86_400_000_000], []),
]


def test_a_time_millis_outside_a_day_is_its_int_in_both(registry: LocalSchemaRegistry) -> None:
    # Spark reads time-millis as an int; Java and spark-avro give any int as it is (issue 41:
    # both decoders refused -365, which Java's GenericDatumReader reads).
    schema = {"type": "int", "logicalType": "time-millis"}
    schema_id, _ = _register(registry, schema)
    prefix = b"\0" + schema_id.to_bytes(4, "big")
    values = [-365, 0, 86_399_999, 86_400_000, 2**31 - 1, -(2**31)]
    _, got = _both(registry, schema, [prefix + _body("int", v) for v in values])
    assert got.corrupt.to_pylist() == [None] * len(values)
    assert got.values.to_pylist() == values


@pytest.mark.parametrize(("logical", "base", "inside", "outside"), EDGES)
def test_values_past_what_python_holds_are_corrupt_in_both(
    registry: LocalSchemaRegistry, logical: str, base: str, inside: list[int], outside: list[int]
) -> None:
    schema = {"type": base, "logicalType": logical}
    schema_id, _ = _register(registry, schema)
    prefix = b"\0" + schema_id.to_bytes(4, "big")
    payloads = [prefix + _body(base, v) for v in [*inside, *outside, *inside]]
    _, got = _both(registry, schema, list(payloads))
    corrupt = [None] * len(inside) + payloads[len(inside) : -len(inside)] + [None] * len(inside)
    assert got.corrupt.to_pylist() == corrupt
