"""Test support: hypothesis strategies of Avro writer/reader schema pairs (a writer schema and a
reader schema evolved from it, compatibly or not) and of the values fastavro writes with the
writer schema, for the differential test of both Avro decoders against Apache Avro Java.

Writer schemas: records nested in records, arrays and maps; enums with and without a default;
fixed; unions (with and without ``null``, of primitives and of named types); every logical type
Spark reads; named types referred to again by name; aliases on writer fields and named types
(which Avro's resolution must ignore). Reader schemas: fields kept, dropped, reordered, renamed
(with the old name as a reader alias, or without), added with a default of any type or without
one; types promoted (int to long, float, double; long to float, double; float to double; string
to and from bytes) or changed to something else; enum symbols added, removed, reordered, with or
without a reader default; union branches reordered, added, removed, a type made a union and a
union a type; named types renamed with an alias or without; fixed sizes changed.
"""

from __future__ import annotations

import base64
import copy
from typing import Any

from hypothesis import strategies as st
from tests.unit.avro_defaults import misfits
from tests.unit.avro_schemas import LOGICAL_TYPES
from tests.unit.avro_values import avro_values

__all__ = ["Pair", "pairs"]

Pair = tuple[dict[str, Any], dict[str, Any], list[Any]]  # writer, reader, values
_NAMES = ["a", "b", "c", "d", "e"]
_SYMBOLS = ["A", "B", "C", "D", "E"]
_PRIMITIVES = ["boolean", "int", "long", "float", "double", "string", "bytes"]
_PROMOTIONS = {
    "int": ["long", "float", "double"],
    "long": ["float", "double"],
    "float": ["double"],
    "string": ["bytes"],
    "bytes": ["string"],
}


class _Names:
    """Fresh names of named types for one schema pair (a counter the strategies share)."""

    def __init__(self) -> None:
        self.count = 0
        self.writer_types: dict[str, Any] = {}

    def fresh(self, kind: str) -> str:
        self.count += 1
        return f"{kind}{self.count}"


def _kind(schema: Any) -> str:
    if isinstance(schema, list):
        return "union"
    if isinstance(schema, dict):
        if "logicalType" in schema:
            return f"{schema['type']}:{schema['logicalType']}"
        return str(schema["type"])
    return str(schema)


@st.composite
def _writer_type(draw: st.DrawFn, names: _Names, depth: int, defined: list[Any]) -> Any:
    """A writer type (``defined``: the named types defined so far, which may be named again)."""
    choices = ["primitive", "logical"]
    if depth > 0:
        choices += ["record", "enum", "fixed", "array", "map", "union", "union"]
    if defined:
        choices.append("by_name")
    choice = draw(st.sampled_from(choices))
    if choice == "primitive":
        return draw(st.sampled_from(_PRIMITIVES))
    if choice == "logical":
        return copy.deepcopy(draw(st.sampled_from(LOGICAL_TYPES)))
    if choice == "by_name":
        return _name(draw(st.sampled_from(defined)))
    if choice == "array":
        return {"type": "array", "items": draw(_writer_type(names, depth - 1, defined))}
    if choice == "map":
        return {"type": "map", "values": draw(_writer_type(names, depth - 1, defined))}
    if choice == "union":
        return draw(_writer_union(names, depth - 1, defined))
    return draw(_named(choice, names, depth - 1, defined))


@st.composite
def _named(draw: st.DrawFn, kind: str, names: _Names, depth: int, defined: list[Any]) -> Any:
    schema: dict[str, Any] = {"type": kind, "name": names.fresh(kind[0].upper())}
    if draw(st.integers(0, 5)) == 0:  # a writer alias: resolution ignores it
        schema["aliases"] = [names.fresh("X")]
    if kind == "enum":
        schema.update(draw(_symbols(4)))
    elif kind == "fixed":
        schema["size"] = draw(st.integers(1, 4))
        if draw(st.integers(0, 4)) == 0:
            schema.update(size=5, logicalType="decimal", precision=9, scale=2)
    else:
        count = draw(st.integers(0, 4))
        fields = []
        for name in draw(st.permutations(_NAMES))[:count]:
            field: dict[str, Any] = {"name": name, "type": None}
            field["type"] = draw(_writer_type(names, depth, defined))
            if draw(st.integers(0, 4)) == 0:  # a writer alias naming another field
                field["aliases"] = [draw(st.sampled_from([n for n in _NAMES if n != name]))]
            fields.append(field)
        schema["fields"] = fields
    defined.append(schema)
    return schema


@st.composite
def _symbols(draw: st.DrawFn, most: int) -> dict[str, Any]:
    """An enum's symbols (``most`` at the most) and, half the time, a default among them."""
    symbols = draw(st.lists(st.sampled_from(_SYMBOLS), min_size=1, max_size=most, unique=True))
    declared: dict[str, Any] = {"symbols": symbols}
    if draw(st.booleans()):
        declared["default"] = draw(st.sampled_from(symbols))
    return declared


@st.composite
def _writer_union(draw: st.DrawFn, names: _Names, depth: int, defined: list[Any]) -> Any:
    branches: list[Any] = []
    kinds: set[str] = set()
    for _ in range(draw(st.integers(1, 3))):
        branch = draw(
            st.one_of(
                st.sampled_from(["null", *_PRIMITIVES]),
                _writer_type(names, depth, defined).filter(lambda b: not isinstance(b, list)),
            )
        )
        kind = _base(branch)
        if kind in kinds:
            continue
        kinds.add(kind)
        branches.append(branch)
    return branches


def _base(schema: Any) -> str:
    """What makes union branches distinct: the name of a named type, else the type."""
    if isinstance(schema, dict):
        if schema["type"] in ("record", "enum", "fixed"):
            return str(schema["name"])
        return str(schema["type"])
    return str(schema)


def _name(schema: Any) -> Any:
    return schema["name"] if isinstance(schema, dict) and "name" in schema else schema


@st.composite
def _reader_of(draw: st.DrawFn, writer: Any, names: _Names, seen: dict[str, Any]) -> Any:
    """A reader type for values of ``writer`` (``seen``: writer names -> reader types made)."""
    if isinstance(writer, str) and writer in seen:
        return _name(seen[writer])
    if isinstance(writer, str) and writer in names.writer_types:  # not met yet in the reader
        return draw(_reader_of(names.writer_types[writer], names, seen))
    if draw(st.integers(0, 30)) == 0:  # anything: most often unreadable
        return draw(_writer_type(names, 1, []))
    if isinstance(writer, list):
        return draw(_reader_union(writer, names, seen))
    if draw(st.integers(0, 12)) == 0:  # a type made a union
        inner = draw(_reader_of(writer, names, seen))
        if not isinstance(inner, list):
            other = draw(st.sampled_from(["null", *_PRIMITIVES]))
            union = [inner] if _base(other) == _base(inner) else [inner, other]
            return draw(st.permutations(union))
    if isinstance(writer, str):
        promoted = _PROMOTIONS.get(writer, [])
        if promoted and draw(st.integers(0, 3)) == 0:
            return draw(st.sampled_from(promoted))
        return writer
    kind = writer["type"]
    if kind == "array":
        return {"type": "array", "items": draw(_reader_of(writer["items"], names, seen))}
    if kind == "map":
        return {"type": "map", "values": draw(_reader_of(writer["values"], names, seen))}
    if kind not in ("record", "enum", "fixed"):
        return copy.deepcopy(writer)  # a logical type
    reader: dict[str, Any] = {"type": kind, "name": writer["name"]}
    rename = draw(st.integers(0, 6))
    if rename == 0:
        reader["name"] = names.fresh("N")
        reader["aliases"] = [writer["name"]]
    elif rename == 1 and kind == "record":  # enums and fixed: see the known divergences
        reader["name"] = names.fresh("N")
    seen[writer["name"]] = reader
    if kind == "enum":
        reader.update(draw(_symbols(5)))
    elif kind == "fixed":
        reader.update({k: v for k, v in writer.items() if k not in ("name", "aliases")})
        if draw(st.integers(0, 6)) == 0:
            reader["size"] = writer["size"] + 1
    else:
        reader["fields"] = draw(_reader_fields(writer["fields"], names, seen))
    return reader


@st.composite
def _reader_fields(
    draw: st.DrawFn, fields: list[dict[str, Any]], names: _Names, seen: dict[str, Any]
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    taken = {f["name"] for f in fields}
    for field in fields:
        fate = draw(st.integers(0, 9))
        if fate == 0:  # dropped
            continue
        made: dict[str, Any] = {"name": field["name"]}
        made["type"] = draw(_reader_of(field["type"], names, seen))
        free = [n for n in [*_NAMES, "f", "g", "h"] if n not in taken]
        if fate in (1, 2) and free:  # renamed, with the old name as an alias (1) or not (2)
            made["name"] = free[0]
            taken.add(free[0])
            if fate == 1:
                made["aliases"] = [field["name"]]
        if draw(st.integers(0, 3)) == 0:
            made["default"] = draw(default_of(made["type"], _defined(made["type"], seen)))
        out.append(made)
    for _ in range(draw(st.integers(0, 2))):  # added fields
        free = [n for n in [*_NAMES, "f", "g", "h"] if n not in taken]
        if not free:
            break
        taken.add(free[0])
        made = {"name": free[0], "type": draw(_writer_type(names, 1, []))}
        if draw(st.integers(0, 4)) != 0:
            made["default"] = draw(default_of(made["type"], _defined(made["type"], {})))
        out.append(made)
    return draw(st.permutations(out))


def _defined(schema: Any, seen: dict[str, Any]) -> dict[str, Any]:
    """The named types ``schema`` may refer to by name: those of the reader made so far."""
    named = {str(r["name"]): r for r in seen.values()}
    _collect(schema, named)
    return named


def _collect(schema: Any, named: dict[str, Any]) -> None:
    if isinstance(schema, list):
        for branch in schema:
            _collect(branch, named)
    elif isinstance(schema, dict):
        if schema["type"] in ("record", "enum", "fixed"):
            named[schema["name"]] = schema
        for field in schema.get("fields", []):
            _collect(field["type"], named)
        for key in ("items", "values"):
            if key in schema:
                _collect(schema[key], named)


@st.composite
def _reader_union(draw: st.DrawFn, writer: list[Any], names: _Names, seen: dict[str, Any]) -> Any:
    branches = [draw(_reader_of(b, names, seen)) for b in writer]
    branches = [b for b in branches if not isinstance(b, list)]
    if draw(st.integers(0, 3)) == 0 and branches:
        branches.pop(draw(st.integers(0, len(branches) - 1)))
    if draw(st.integers(0, 3)) == 0:
        branches.append(draw(st.sampled_from(["null", *_PRIMITIVES])))
    unique: list[Any] = []
    for branch in branches:
        if _base(branch) not in {_base(u) for u in unique}:
            unique.append(branch)
    if not unique:
        unique = [draw(st.sampled_from(["null", *_PRIMITIVES]))]
    if len(unique) == 1 and draw(st.booleans()):
        return unique[0]
    return draw(st.permutations(unique))


@st.composite
def default_of(draw: st.DrawFn, schema: Any, named: dict[str, Any]) -> Any:
    """A JSON default of ``schema`` (a union's is of its first branch)."""
    if isinstance(schema, str) and schema in named:
        schema = named[schema]
    if isinstance(schema, list):
        return draw(default_of(schema[0], named)) if schema else None
    if isinstance(schema, dict):
        kind = schema["type"]
        if kind == "record":
            return {f["name"]: draw(default_of(f["type"], named)) for f in schema.get("fields", [])}
        if kind == "enum":
            return draw(st.sampled_from(schema["symbols"]))
        if (
            schema.get("logicalType") == "decimal"
        ):  # within its precision (else Java alone reads it)
            unscaled = draw(st.integers(-(10**9) + 1, 10**9 - 1))
            size = schema.get("size", 5)
            return unscaled.to_bytes(size, "big", signed=True).decode("latin-1")
        if kind == "fixed":
            return draw(
                st.text(
                    st.characters(max_codepoint=255),
                    min_size=schema["size"],
                    max_size=schema["size"],
                )
            )
        if kind == "array":
            return draw(st.lists(default_of(schema["items"], named), max_size=2))
        if kind == "map":
            return draw(
                st.dictionaries(
                    st.text(max_size=3), default_of(schema["values"], named), max_size=2
                )
            )
        logical = schema.get("logicalType")
        if logical in ("date", "time-millis"):
            return draw(st.integers(0, 86_399_999 if logical == "time-millis" else 100_000))
        if logical == "time-micros":
            return draw(st.integers(0, 86_399_999_999))
        if logical and "timestamp" in logical:
            return draw(st.integers(-(2**40), 2**40))
        if logical == "uuid":
            return str(draw(st.uuids()))
        return draw(default_of(kind, named))
    return draw(_PRIMITIVE_DEFAULTS[schema])


_PRIMITIVE_DEFAULTS: dict[str, st.SearchStrategy[Any]] = {
    "null": st.none(),
    "boolean": st.booleans(),
    "int": st.integers(-(2**31), 2**31 - 1),
    "long": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(width=32, allow_nan=False, allow_infinity=False),
    "double": st.floats(allow_nan=False, allow_infinity=False),
    "string": st.text(max_size=5),
    "bytes": st.text(st.characters(max_codepoint=255), max_size=4),
}


@st.composite
def pairs(draw: st.DrawFn, records: int = 4) -> Pair:
    """A writer schema (a record, or sometimes any type), a reader schema evolved from it, and
    up to ``records`` values of the writer schema."""
    names = _Names()
    if draw(st.integers(0, 5)) == 0:
        writer = draw(_writer_type(names, 2, []))
    else:
        writer = draw(_named("record", names, 2, []))
    _collect(writer, names.writer_types)
    seen: dict[str, Any] = {}
    reader = draw(_reader_of(writer, names, seen))
    made = {str(r["name"]): r for r in seen.values()}
    _collect(reader, made)
    reader = _defined_first(reader, made, set())
    for f in misfits(reader, made):  # drawn for a definition the evolution replaced
        f["default"] = draw(default_of(f["type"], made))
    values = draw(st.lists(avro_values(writer), min_size=1, max_size=records))
    return writer, reader, values


def _defined_first(schema: Any, made: dict[str, Any], done: set[str]) -> Any:
    """``schema`` with each named type defined where it is first met (in Avro's parse order) and
    named by its name after: evolving fields and branches moves, drops and repeats them."""
    if isinstance(schema, str):
        if schema in made and schema not in done:
            return _defined_first(made[schema], made, done)
        return schema
    if isinstance(schema, list):
        return [_defined_first(b, made, done) for b in schema]
    schema = dict(schema)
    if schema["type"] in ("record", "enum", "fixed"):
        if schema["name"] in done:
            return schema["name"]
        done.add(schema["name"])
    if "fields" in schema:
        schema["fields"] = [
            {**f, "type": _defined_first(f["type"], made, done)} for f in schema["fields"]
        ]
    for key in ("items", "values"):
        if key in schema:
            schema[key] = _defined_first(schema[key], made, done)
    return schema


def b64(body: bytes) -> str:
    return base64.b64encode(body).decode()
