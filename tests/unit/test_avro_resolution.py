"""Avro schema resolution as Apache Avro Java applies it (:mod:`pyspark_dynamic_kafka.avro.
resolution`), through both decoders: the Python decoder (fastavro) and the compiled core's
(``make_decoder``). What Java gives for each case was read from Java itself
(``tests/integration/test_avro_java_differential.py`` runs the same cases on Java's
``GenericDatumReader`` and on generated pairs). Writer schemas are handed to the decoders by their
``fetch`` callable (the registry is not what is tested here)."""

from __future__ import annotations

import datetime
import decimal
import io
import json
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from tests.engine_roles import DECODERS

from pyspark_dynamic_kafka.avro.decode import AvroDecodeError, Decoder
from pyspark_dynamic_kafka.avro.resolution import JAVA_UNION, resolve
from pyspark_dynamic_kafka.engines.decode_core import make_decoder
from pyspark_dynamic_kafka.registry.client import RegisteredSchema

WRITER_ID = 3


def _record(name: str, *fields: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": list(fields), **extra}


def decoded(writer: Any, reader: Any, values: list[Any], native: bool) -> list[Any]:
    """``values`` written with ``writer`` and read as ``reader``: each value, or "refused"."""
    prefix = b"\0" + WRITER_ID.to_bytes(4, "big")
    payloads = []
    for value in values:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, fastavro.parse_schema(writer), value)
        payloads.append(prefix + out.getvalue())

    def fetch(_: Any) -> RegisteredSchema:
        return RegisteredSchema(json.dumps(writer), schema_id=WRITER_ID)

    make = make_decoder if native else Decoder
    decoder = make(json.dumps(reader), fetch, permissive=True)
    got = decoder.decode_arrow(pa.array(payloads, pa.binary()), None, lambda i: f"record {i}")
    return [
        "refused" if bad is not None else value
        for value, bad in zip(got.values.to_pylist(), got.corrupt.to_pylist(), strict=True)
    ]


BOTH = DECODERS

# Issue 41, finding 2: the two cases. Java: -1 (writer aliases are not applied), and a refusal.
WRITER_ALIAS = (
    _record("R", {"name": "b", "type": "int", "aliases": ["a"]}),
    _record("R", {"name": "a", "type": "int", "default": -1}),
    [{"b": 7}],
    [{"a": -1}],
)
MISSING_NULLABLE = (
    _record("R", {"name": "a", "type": "int"}),
    _record("R", {"name": "a", "type": "int"}, {"name": "n", "type": ["null", "int"]}),
    [{"a": 1}],
    ["refused"],
)


@BOTH
def test_a_writer_fields_alias_is_not_applied(native: bool) -> None:
    writer, reader, values, java = WRITER_ALIAS
    assert decoded(writer, reader, values, native) == java


@BOTH
def test_a_reader_field_the_writer_lacks_without_default_is_refused_even_when_nullable(
    native: bool,
) -> None:
    writer, reader, values, java = MISSING_NULLABLE
    assert decoded(writer, reader, values, native) == java


# More of Java's rules, each checked on Java by the differential test's named cases.
READER_FIELD_ALIAS = (
    _record("R", {"name": "b", "type": "int"}),
    _record("R", {"name": "a", "type": "long", "aliases": ["b"], "default": -1}),
    [{"b": 7}],
    [{"a": 7}],
)
RECORD_NAMES_IGNORED = (
    _record("Old", {"name": "a", "type": "int"}),
    _record("New", {"name": "a", "type": "int"}),
    [{"a": 7}],
    [{"a": 7}],
)
ENUM_READER_ALIAS = (
    _record("R", {"name": "e", "type": {"type": "enum", "name": "E1", "symbols": ["X", "Y"]}}),
    _record(
        "R",
        {
            "name": "e",
            "type": {
                "type": "enum",
                "name": "E2",
                "aliases": ["E1"],
                "symbols": ["Y", "Z"],
                "default": "Z",
            },
        },
    ),
    [{"e": "X"}, {"e": "Y"}],
    [{"e": "Z"}, {"e": "Y"}],
)
ENUM_WITHOUT_DEFAULT = (
    _record("R", {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y"]}}),
    _record("R", {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["Y"]}}),
    [{"e": "X"}, {"e": "Y"}],
    ["refused", {"e": "Y"}],
)
FIXED_OTHER_NAME = (
    _record("R", {"name": "f", "type": {"type": "fixed", "name": "F", "size": 2}}),
    _record("R", {"name": "f", "type": {"type": "fixed", "name": "G", "size": 2}}),
    [{"f": b"ab"}],
    ["refused"],
)
WRITER_UNION_BRANCHES = (
    _record("R", {"name": "u", "type": ["int", "string"]}),
    _record("R", {"name": "u", "type": "long"}),
    [{"u": 5}, {"u": "five"}],
    [{"u": 5}, "refused"],
)
ONE_BRANCH_UNION_PROMOTED = (  # the differential test's find: the core refused these records
    _record("R", {"name": "a", "type": ["int"]}),
    _record("R", {"name": "a", "type": ["long", "null"]}),
    [{"a": 312865915}, {"a": -554265}],
    [{"a": 312865915}, {"a": -554265}],
)
TIME_MILLIS_OUTSIDE_A_DAY = (  # the differential test's find: both decoders refused it
    _record("R", {"name": "t", "type": {"type": "int", "logicalType": "date"}}),
    _record("R", {"name": "t", "type": {"type": "int", "logicalType": "time-millis"}}),
    [{"t": -365}],
    [{"t": -365}],
)
_E = {"type": "enum", "name": "E", "symbols": ["A", "B"]}
ENUM_INTO_STRING_OR_ENUM = (  # the differential test's find: the Python decoder read member0
    _record("R", {"name": "e", "type": _E}),
    _record("R", {"name": "e", "type": ["string", _E]}),
    [{"e": "B"}],
    [{"e": {"member0": None, "member1": "B"}}],
)
_DECIMAL6 = {"type": "fixed", "name": "D", "size": 6, "logicalType": "decimal", "precision": 9}
FIXED_DEFAULT_IN_UNION = (  # the differential test's find: both decoders refused the default
    _record("R", {"name": "a", "type": "boolean"}),
    _record(
        "R", {"name": "b", "type": [{**_DECIMAL6, "scale": 2}, "boolean"], "default": "\0" * 6}
    ),
    [{"a": True}],
    [{"b": {"member0": decimal.Decimal("0.00"), "member1": None}}],
)
_R2 = _record("R2", {"name": "v", "type": "int"})
# The differential test's find: both decoders refused it (fastavro met the writer's definition of
# R2 against the reader union's reference to it). Its mirror, the writer's reference against the
# reader union's definition, failed the same way.
NAMED_TYPE_DEFINED_ELSEWHERE = (
    _record("R", {"name": "b", "type": _R2}, {"name": "a", "type": "R2"}),
    _record("R", {"name": "a", "type": ["string", _R2]}, {"name": "b", "type": ["R2", "bytes"]}),
    [{"b": {"v": 1}, "a": {"v": 2}}],
    [{"a": {"member0": None, "member1": {"v": 2}}, "b": {"member0": {"v": 1}, "member1": None}}],
)
NAMED_TYPE_DEFINED_ELSEWHERE_MIRRORED = (
    _record("R", {"name": "x", "type": _R2}, {"name": "y", "type": "R2"}),
    _record("R", {"name": "y", "type": ["null", _R2]}),
    [{"x": {"v": 1}, "y": {"v": 2}}],
    [{"y": {"v": 2}}],
)
_F3 = {"type": "fixed", "name": "F3", "size": 2}
NAMED_TYPE_IN_A_TOP_UNION = (  # a reader that is a union: its branches keep their definitions
    _record("R1", {"name": "a", "type": _F3}, {"name": "r", "type": _record("R2")}),
    [_record("N4", {"name": "a", "type": [_F3, "null"]}, aliases=["R1"]), "double"],
    [{"a": b"ab", "r": {}}],
    [{"member0": {"a": b"ab"}, "member1": None}],
)
INT_INTO_A_UNIONS_TIMESTAMP = (  # the differential test's find: the core refused these records
    _record("R", {"name": "a", "type": ["int", "string"]}),
    _record(
        "R", {"name": "a", "type": [{"type": "long", "logicalType": "timestamp-millis"}, "string"]}
    ),
    [{"a": 1500}],
    [
        {
            "a": {
                "member0": datetime.datetime(1970, 1, 1, 0, 0, 1, 500000, datetime.timezone.utc),
                "member1": None,
            }
        }
    ],
)
_INT4 = {"name": "c", "type": "int", "default": 4}
_R3 = _record("R3", {"name": "b", "type": "boolean"})
RECORD_REFERRED_TO_ELSEWHERE = (  # the differential test's find: the core read past the bytes
    _record("R1", {"name": "d", "type": _R3}, {"name": "c", "type": "R3"}),
    _record("R1", {"name": "c", "type": {**_R3, "fields": [*_R3["fields"], _INT4]}}),
    [{"d": {"b": False}, "c": {"b": True}}],
    [{"c": {"b": True, "c": 4}}],
)
UNION_NARROWED_TO_NULLABLE = (  # the differential test's find: the core refused these records
    _record("R", {"name": "c", "type": ["null", "bytes", "string"]}),
    _record("R", {"name": "c", "type": ["null", "string"]}),
    [{"c": "x"}, {"c": None}, {"c": b"ab"}],
    [{"c": "x"}, {"c": None}, {"c": "ab"}],
)
_E1 = {"type": "enum", "name": "E1", "symbols": ["C", "A"]}
NAMED_BY_A_TOP_UNIONS_BRANCH = (  # the differential test's find: both decoders refused it
    [_E1, {"type": "array", "items": "E1"}],
    [{"type": "array", "items": {**_E1, "symbols": ["A", "E"], "default": "E"}}, "E1"],
    ["C", ["A"]],
    [{"member0": None, "member1": "E"}, {"member0": ["A"], "member1": None}],
)
LONG_INTO_A_FLOAT_BEFORE_A_DOUBLE = (  # the differential test's find: the Python decoder kept it
    _record("R", {"name": "a", "type": "long"}),
    _record("R", {"name": "a", "type": ["float", "double"]}),
    [{"a": -678615655}, {"a": 16777217}],
    [{"a": -678615680.0}, {"a": 16777216.0}],  # rounded to a float, as Java reads it
)
BYTES_INTO_A_UNIONS_UUID = (  # the differential test's find: the core refused these records
    "bytes",
    [{"type": "string", "logicalType": "uuid"}, "double"],
    [b"", b"0"],
    [{"member0": "", "member1": None}, {"member0": "0", "member1": None}],
)
_F2 = {"type": "fixed", "name": "F2", "size": 2}
_LONG_E = {"name": "e", "type": "long"}
NAMED_IN_A_UNIONS_RECORD = (  # the differential test's find: the core refused these records
    _record(
        "R1",
        {"name": "a", "type": _F2},
        {
            "name": "c",
            "type": [
                "float",
                _record("R3", {"name": "e", "type": "long"}, {"name": "b", "type": "F2"}),
            ],
        },
    ),
    _record("R1", {"name": "c", "type": [_record("N5", {"name": "e", "type": "long"}), "float"]}),
    [{"a": b"ab", "c": {"e": 2, "b": b"cd"}}],
    [{"c": {"member0": {"e": 2}, "member1": None}}],
)
EMPTY_ARRAY_DEFAULT_OF_A_UNION = (  # the differential test's find: Java fails it, ours read it
    _record("R", {"name": "x", "type": "int"}),
    _record(
        "R",
        {"name": "x", "type": "int"},
        {"name": "b", "type": [{"type": "array", "items": "int"}, "null"], "default": []},
    ),
    [{"x": 1}],
    ["refused"],
)
_F5 = {
    "type": "fixed",
    "name": "F5",
    "size": 5,
    "logicalType": "decimal",
    "precision": 9,
    "scale": 2,
}
REFERENCE_INTO_A_UNION = (  # the differential test's find: the core misread the union
    _record(
        "R1",
        {"name": "b", "type": _record("R2", {"name": "c", "type": _F5})},
        {"name": "a", "type": "F5"},
    ),
    _record("R1", {"name": "a", "type": ["string", _F5]}),
    [{"b": {"c": decimal.Decimal("1.00")}, "a": decimal.Decimal("1000.00")}],
    [{"a": {"member0": None, "member1": decimal.Decimal("1000.00")}}],
)
_DECIMAL = {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}
BYTES_NOT_UTF8_AS_TEXT = (  # the differential test's find: both refused what Java reads
    _record(
        "R",
        {"name": "a", "type": "bytes"},
        {"name": "d", "type": {"type": "array", "items": [_DECIMAL, "string"]}},
    ),
    _record(
        "R",
        {"name": "a", "type": "string"},
        {"name": "d", "type": {"type": "array", "items": ["string"]}},
    ),
    [{"a": b"\xed\xa0\x80A\xe2\x82", "d": [decimal.Decimal("-1.27"), "x"]}],
    # Each malformed sequence one U+FFFD, as the JDK groups them (a surrogate's 3 bytes: one).
    [{"a": "\ufffdA\ufffd", "d": ["\ufffd", "x"]}],
)
_UUID = {"type": "string", "logicalType": "uuid"}
_MAP_LONG = {"type": "map", "values": "long"}
TEXT_AS_A_UUID = (  # the differential test's find: the core refused text that is no UUID
    _record(
        "R",
        {"name": "a", "type": {"type": "array", "items": "bytes"}},
        {"name": "b", "type": "string"},
    ),
    _record(
        "R",
        {"name": "a", "type": {"type": "array", "items": _UUID}},
        {"name": "b", "type": _UUID},
    ),
    [
        {"a": [b""], "b": "6F9619FF-8B86-D011-B42D-00C04FC964FF"},
        {"a": [b"not a uuid"], "b": "6f9619ff-8b86-d011-b42d-00c04fc964ff"},
    ],
    # Java reads a uuid as the text it is, upper case and all.
    [
        {"a": [""], "b": "6F9619FF-8B86-D011-B42D-00C04FC964FF"},
        {"a": ["not a uuid"], "b": "6f9619ff-8b86-d011-b42d-00c04fc964ff"},
    ],
)
_R2_DOUBLES = {"type": "map", "values": ["string", "double"]}
DEFAULT_OF_A_MARKED_UNION = (  # make fuzz's find: the default's text shaped as the double Java
    # reads the writer's long as (R2 is both read from the writer and from d's default)
    _record("R1", {"name": "e", "type": _record("R2", {"name": "e", "type": _MAP_LONG})}),
    _record(
        "R1",
        {
            "name": "d",
            "type": _record("R2", {"name": "e", "type": _R2_DOUBLES}),
            "default": {"e": {"k": "text"}},
        },
        {"name": "e", "type": "R2"},
    ),
    [{"e": {"e": {"k": 5}}}],
    [
        {
            "d": {"e": [("k", {"member0": "text", "member1": None})]},
            "e": {"e": [("k", {"member0": None, "member1": 5.0})]},
        }
    ],
)
_F3_DECIMAL = {"type": "fixed", "name": "F3", "size": 5, "logicalType": "decimal", "precision": 9}
FIXED_DEFAULT_BEFORE_A_STRING = (  # make fuzz's find: the default's text read as the string's
    _record("R1", {"name": "b", "type": "int"}),
    _record(
        "R1",
        {
            "name": "a",
            "type": [{**_F3_DECIMAL, "scale": 2}, "string"],
            "default": "\u00ff" * 4 + "\u00f1",
        },
        {"name": "b", "type": "int"},
    ),
    [{"b": 1}],
    [{"a": {"member0": decimal.Decimal("-0.15"), "member1": None}, "b": 1}],
)
RULES = [
    FIXED_DEFAULT_BEFORE_A_STRING,
    DEFAULT_OF_A_MARKED_UNION,
    TEXT_AS_A_UUID,
    BYTES_NOT_UTF8_AS_TEXT,
    REFERENCE_INTO_A_UNION,
    EMPTY_ARRAY_DEFAULT_OF_A_UNION,
    NAMED_IN_A_UNIONS_RECORD,
    BYTES_INTO_A_UNIONS_UUID,
    LONG_INTO_A_FLOAT_BEFORE_A_DOUBLE,
    NAMED_BY_A_TOP_UNIONS_BRANCH,
    UNION_NARROWED_TO_NULLABLE,
    RECORD_REFERRED_TO_ELSEWHERE,
    INT_INTO_A_UNIONS_TIMESTAMP,
    NAMED_TYPE_DEFINED_ELSEWHERE,
    NAMED_TYPE_DEFINED_ELSEWHERE_MIRRORED,
    NAMED_TYPE_IN_A_TOP_UNION,
    FIXED_DEFAULT_IN_UNION,
    ONE_BRANCH_UNION_PROMOTED,
    TIME_MILLIS_OUTSIDE_A_DAY,
    READER_FIELD_ALIAS,
    RECORD_NAMES_IGNORED,
    ENUM_READER_ALIAS,
    ENUM_WITHOUT_DEFAULT,
    FIXED_OTHER_NAME,
    WRITER_UNION_BRANCHES,
]
NAMED_CASES = [WRITER_ALIAS, MISSING_NULLABLE, ENUM_INTO_STRING_OR_ENUM, *RULES]


@BOTH
@pytest.mark.parametrize("case", RULES, ids=lambda c: json.dumps(c[1])[:50])
def test_javas_rules(native: bool, case: Any) -> None:
    writer, reader, values, java = case
    assert decoded(writer, reader, values, native) == java


@BOTH
def test_an_enum_read_into_a_union_of_a_string_and_it_is_the_enums(native: bool) -> None:
    # Java reads the enum's branch. fastavro tags a named type's value with its name only when
    # the writer's type is a union: the Python decoder put the untagged text in the string
    # branch. Now the union, which only the writer's enum reaches, is marked with Java's branch.
    writer, reader, values, java = ENUM_INTO_STRING_OR_ENUM
    resolution = resolve(writer, reader)
    assert resolution.unlike_fastavro == []
    marked = resolution.shaping["fields"][0]["type"]
    assert (marked["type"], marked["branch"]) == (JAVA_UNION, 1)
    assert decoded(writer, reader, values, native) == java
    # A writer's union of the enum: fastavro tags it, nothing is marked.
    tagged = _record("R", {"name": "e", "type": ["null", _E]})
    assert resolve(tagged, reader).shaping is None
    assert decoded(tagged, reader, values, native) == java


def test_a_union_reached_by_a_writers_union_too_is_not_marked() -> None:
    # The reader's record type is read twice: once from a writer's enum, once from a writer's
    # union of it. The union cannot be marked; fastavro's untagged text is refused.
    reader_r = _record("S", {"name": "e", "type": ["string", _E]})
    writer = _record(
        "R",
        {"name": "x", "type": _record("S", {"name": "e", "type": _E})},
        {"name": "y", "type": _record("T", {"name": "e", "type": ["E", "string"]})},
    )
    reader = _record("R", {"name": "x", "type": reader_r}, {"name": "y", "type": "S"})
    resolution = resolve(writer, reader)
    assert (resolution.shaping, resolution.errors) == (None, [])
    assert resolution.unlike_fastavro == [
        "an enum is read as branch 1 of the union [string, enum], which fastavro reads otherwise",
        # fastavro pairs records by name: the writer's T cannot be named S too
        "the writer's S and T are both read as S",
    ]
    assert decoded(writer, reader, [{"x": {"e": "B"}, "y": {"e": "A"}}], False) == ["refused"]


def test_a_union_read_branch_for_branch_where_fastavro_takes_a_promotion_is_refused() -> None:
    # The differential test's find: the Python decoder read branch 1's long as branch 0's double.
    # Java reads an equivalent writer union branch for branch (its unionEquiv); fastavro takes
    # the first branch it can promote to. Refused, never another value.
    union = ["double", {"type": "long", "logicalType": "local-timestamp-micros"}]
    writer = _record("R", {"name": "a", "type": union})
    reader = _record("R", {"name": "a", "type": union}, {"name": "b", "type": "int", "default": 1})
    assert resolve(writer, reader).unlike_fastavro == [
        "a long is read as branch 1 of the union [double, long], which fastavro reads otherwise"
    ]
    body = b"\x02" + b"\x0a"  # branch 1, the long 5 (fastavro would write 5 as the double)
    payload = b"\0" + WRITER_ID.to_bytes(4, "big") + body

    def fetch(_: Any) -> RegisteredSchema:
        return RegisteredSchema(json.dumps(writer), schema_id=WRITER_ID)

    decoder = Decoder(json.dumps(reader), fetch, permissive=True)
    got = decoder.decode_arrow(pa.array([payload], pa.binary()), None, lambda i: f"record {i}")
    assert (got.values.to_pylist(), got.corrupt.to_pylist()) == ([None], [payload])


def test_a_writer_record_read_as_two_reader_records_is_refused() -> None:
    # The differential test's find: Java reads the writer's R2 as R4 in one place and as R2 in
    # another (it does not compare records' names); fastavro pairs records by name, and the
    # writer's record has one. Refused, never another value.
    r2 = _record("R2", {"name": "x", "type": "int"})
    writer = _record("R", {"name": "a", "type": r2}, {"name": "b", "type": "R2"})
    reader = _record("R", {"name": "a", "type": _record("R4")}, {"name": "b", "type": r2})
    assert resolve(writer, reader).unlike_fastavro == [
        "the writer's record R2 is read as the records R2 and R4"
    ]
    assert decoded(writer, reader, [{"a": {"x": 1}, "b": {"x": 2}}], False) == ["refused"]


# make fuzz's find: Java reads both of the writer's union's empty records R6 and R8 as the
# reader's N13 (by structure); fastavro pairs N13 with one writer record by name, and the two
# renamed to it failed fastavro's parse ("redefined named type").
TWO_RECORDS_AS_ONE = (
    _record("R1", {"name": "e", "type": [_record("R6"), _record("R8"), "string"]}),
    _record("R1", {"name": "e", "type": [_record("N13"), "string"]}),
    [{"e": ("R6", {})}, {"e": ("R8", {})}, {"e": "s"}],
    [
        {"e": {"member0": {}, "member1": None}},
        {"e": {"member0": {}, "member1": None}},
        {"e": {"member0": None, "member1": "s"}},
    ],
)
NAMED_CASES.append(TWO_RECORDS_AS_ONE)  # not a rule both decoders follow: see the test below


# make fuzz's find: the writer's R10 is read as the reader's R8 (by structure, R10's field
# skipped) and the writer's own R8 as R8: fastavro cannot pair R10 with R8, the name is taken.
RECORD_READ_AS_ANOTHER_OF_THE_WRITER = (
    _record(
        "R1",
        {"name": "c", "type": [_record("R8"), _record("R10", {"name": "x", "type": "int"})]},
    ),
    _record("R1", {"name": "c", "type": [_record("R8"), "null"]}),
    [{"c": ("R8", {})}, {"c": ("R10", {"x": 3})}],
    [{"c": {}}, {"c": {}}],
)
NAMED_CASES.append(RECORD_READ_AS_ANOTHER_OF_THE_WRITER)


def test_two_writer_records_read_as_one_reader_record_are_refused_never_misread() -> None:
    """The Python decoder refuses the pair; the core reads what Java reads, or refuses R8's
    records. Never another value."""
    writer, reader, values, java = TWO_RECORDS_AS_ONE
    assert resolve(writer, reader).unlike_fastavro == [
        "the writer's R6 and R8 are both read as N13"
    ]
    assert decoded(writer, reader, values, False) == ["refused"] * 3
    core = decoded(writer, reader, values, True)
    assert all(got in ("refused", expected) for got, expected in zip(core, java, strict=True))


def test_resolution_renames_the_writer_as_java_pairs_it() -> None:
    writer, reader, _, _ = WRITER_ALIAS
    assert resolve(writer, reader).writer == _record(
        "R", {"name": "b", "type": "int"}, namespace=""
    )
    writer, reader, _, _ = READER_FIELD_ALIAS
    assert resolve(writer, reader).writer == _record(
        "R", {"name": "a", "type": "int"}, namespace=""
    )
    assert resolve(writer, reader).reader == _record(
        "R", {"name": "a", "type": "long", "default": -1}, namespace=""
    )
    writer, reader, _, _ = MISSING_NULLABLE
    assert resolve(writer, reader).errors == ["the writer's R has no field n"]
    spaced = {
        "type": "record",
        "name": "R",
        "namespace": "n",
        "fields": [
            {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X"]}},
            {"name": "again", "type": "E"},
        ],
    }
    assert resolve(spaced, spaced).writer["fields"][1]["type"] == "n.E"


@BOTH
def test_a_failfast_error_names_the_record_the_writer_schema_and_the_reader_schema(
    native: bool,
) -> None:
    writer, reader, values, _ = MISSING_NULLABLE
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(writer), values[0])
    payload = b"\0" + WRITER_ID.to_bytes(4, "big") + out.getvalue()

    def fetch(_: Any) -> RegisteredSchema:
        return RegisteredSchema(json.dumps(writer), schema_id=WRITER_ID)

    make = make_decoder if native else Decoder
    decoder = make(json.dumps(reader), fetch, False, False, "subject 'orders-value' version 4")
    with pytest.raises(AvroDecodeError) as failed:
        decoder.decode_arrow(pa.array([payload], pa.binary()), None, lambda i: "Record c/t/0 at 9")
    assert str(failed.value).startswith(
        "Record c/t/0 at 9 (schema id 3, reader schema: subject 'orders-value' version 4) "
        "cannot be decoded as Avro: "
    ), failed.value
    assert "field n" in str(failed.value)
