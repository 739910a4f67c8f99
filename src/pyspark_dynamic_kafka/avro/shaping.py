"""fastavro's values of a reader schema into what Arrow takes for the schema's Spark type
(:mod:`.spark_types`), for the Python decoder (:mod:`.decode`): the values fastavro gives
unchanged where Arrow takes them (no copy), logical types from their base values
(:mod:`.logical`), a ``fixed`` default's text as Java's bytes of it, and a union of several
types as a struct with the branch that was read set (``member0``, ``member1``, ...); a named
type's value comes tagged with its name when the writer's type is a union of it, and a union
only non-union writer types reach is marked with the branch Java reads (:mod:`.resolution`).
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Callable, Mapping
from typing import Any

from pyspark_dynamic_kafka.avro.logical import logical_shaper
from pyspark_dynamic_kafka.avro.resolution import JAVA_UNION
from pyspark_dynamic_kafka.avro.spark_types import spark_number

__all__ = ["Shaper", "shaper", "tags_named"]

Shaper = Callable[[Any], Any]


def shaper(schema: Any, untag: bool = False) -> Shaper:
    """What turns fastavro's value of ``schema`` (parsed JSON, read without logical types) into
    what Arrow takes for its Spark type; with ``untag``, named types' values may come tagged
    with their names (the writer's type is a union of them where the reader's is not)."""
    return _shaper(schema, {}, untag)


def _shaper(schema: Any, named: dict[str, Any], untag: bool = False) -> Shaper:
    """What turns fastavro's value of ``schema`` (parsed) into what Arrow takes for its type."""
    if isinstance(schema, str):
        return _shaper(named[schema], named, untag) if schema in named else _same
    if isinstance(schema, list):
        return _union(schema, named, untag)
    if schema["type"] == JAVA_UNION:
        return _java_union(schema["branches"], schema["branch"], named, untag)
    kind, logical = schema["type"], schema.get("logicalType")
    if kind in ("record", "error"):
        named[_full_name(schema)] = schema
        fields = [(f["name"], _shaper(f["type"], named, untag)) for f in schema["fields"]]
        if all(shape is _same for _, shape in fields):
            return _untagged(_same) if untag else _same  # fastavro's dict is Arrow's: no copy
        record = lambda v: {name: shape(v[name]) for name, shape in fields}  # noqa: E731
        return _untagged(record) if untag else record
    if kind in ("enum", "fixed"):
        named[_full_name(schema)] = schema
    if logical is not None and isinstance(kind, str):
        shape = logical_shaper(schema) or (_latin1 if kind == "fixed" else _same)
        return _untagged(shape) if untag and kind == "fixed" else shape
    if kind in ("enum", "fixed"):
        shape = _latin1 if kind == "fixed" else _same
        return _untagged(shape) if untag else shape
    if kind == "array":
        items = _shaper(schema["items"], named, untag)
        return _same if items is _same else lambda v: [items(x) for x in v]
    if kind == "map":  # Arrow takes a dict for a map
        values = _shaper(schema["values"], named, untag)
        return _same if values is _same else lambda v: {k: values(x) for k, x in v.items()}
    return _shaper(kind, named, untag) if isinstance(kind, list | dict) else _same


def _union(branches: list[Any], named: dict[str, Any], untag: bool) -> Shaper:
    rest = [b for b in branches if b != "null"]
    if len(rest) == 1:  # a named type's value comes tagged with its name: untag it
        only = _shaper(rest[0], named, untag)
        if only is _same and _name(rest[0], named) is None:
            return _same
        return lambda v: None if v is None else only(v[1] if isinstance(v, tuple) else v)
    kinds = {spark_number(b) for b in rest}
    if kinds in ({"int", "long"}, {"float", "double"}) and len(rest) == 2:
        return lambda v: v
    shapes = [(_kind(b, named), _name(b, named), _shaper(b, named, untag)) for b in rest]

    def member(v: Any) -> Any:
        if v is None:
            return None
        name, value = v if isinstance(v, tuple) else (None, v)
        for i, (kind, branch_name, shape) in enumerate(shapes):
            # fastavro names a named type's value only when the writer's type is a union too
            if (name is not None and name == branch_name) or (
                name is None and _matches(kind, value)
            ):
                return _member(i, len(rest), shape(value))
        if isinstance(value, str) and shapes[0][0] in ("bytes", "fixed"):
            # A field's default, of the union's first branch: fastavro keeps its text, Java's
            # bytes of it are ISO-8859-1's (a read value of a bytes or fixed is bytes).
            return _member(0, len(rest), shapes[0][2](_latin1(value)))
        raise TypeError(f"a value of type {type(value).__name__} matches no branch of its union")

    return member


def _java_union(branches: list[Any], branch: int, named: dict[str, Any], untag: bool) -> Shaper:
    """A union that only non-union writer types reach (:attr:`.resolution.Resolution.shaping`):
    every value goes to ``branch``, the one Java reads, whatever its Python type."""
    rest = [b for b in branches if b != "null"]
    if {spark_number(b) for b in rest} == {"float", "double"} and len(rest) == 2:
        if _kind(branches[branch], named) != "float":  # Spark's double: no members
            return _same
        return lambda v: None if v is None else _FLOAT.unpack(_FLOAT.pack(v))[0]
    shapes = [_shaper(b, named, untag) for b in rest]
    at = rest.index(branches[branch])
    shape = _untagged(shapes[at])
    return lambda v: None if v is None else _member(at, len(rest), shape(v))


_FLOAT = struct.Struct("<f")  # Java's float, which an int or long read into one is rounded to


def _member(i: int, members: int, value: Any) -> dict[str, Any]:
    """A union's struct of ``members`` members with ``value`` in member ``i``."""
    return {f"member{j}": value if j == i else None for j in range(members)}


def _kind(schema: Any, named: Mapping[str, Any]) -> str:
    if isinstance(schema, str):
        return str(named[schema]["type"]) if schema in named else schema
    return str(schema["type"]) if isinstance(schema["type"], str) else "union"


def _name(schema: Any, named: Mapping[str, Any]) -> str | None:
    """The full name of a named type (what fastavro tags a union's value with), else None."""
    if isinstance(schema, dict) and schema.get("type") in ("record", "error", "enum", "fixed"):
        return _full_name(schema)
    return schema if isinstance(schema, str) and schema in named else None


_PYTHON = {
    "boolean": (bool,),
    "int": (int, datetime.date, datetime.time),
    "long": (int, datetime.datetime, datetime.time),
    "float": (float,),
    "double": (float,),
    "string": (str,),
    "bytes": (bytes,),
    "array": (list,),
    "map": (dict,),
    "record": (dict,),
    "error": (dict,),
    "enum": (str,),
    "fixed": (bytes,),
}


def _matches(kind: str, value: Any) -> bool:
    types = _PYTHON.get(kind, ())
    return isinstance(value, types) and not (kind != "boolean" and isinstance(value, bool))


def _untagged(shape: Shaper) -> Shaper:
    """``shape`` of a named type's value, which fastavro tags with the type's name when the
    writer's type is a union of it and the reader's is not."""
    return lambda v: shape(v[1] if isinstance(v, tuple) else v)


def _latin1(value: Any) -> Any:
    """A ``fixed`` value; its default is text (fastavro keeps it so), Java's bytes of it are
    ISO-8859-1's."""
    return value.encode("latin-1") if isinstance(value, str) else value


def tags_named(schema: Any) -> bool:
    """Whether ``schema`` (parsed JSON) has a union with a named type as a branch."""
    if isinstance(schema, list):
        return any(
            (isinstance(b, str) and b not in _PYTHON and b != "null")
            or (isinstance(b, dict) and b.get("type") in ("record", "error", "enum", "fixed"))
            or tags_named(b)
            for b in schema
        )
    if isinstance(schema, dict):
        inner = [schema.get(k) for k in ("type", "items", "values")]
        inner += [f["type"] for f in schema.get("fields", [])]
        return any(isinstance(i, list | dict) and tags_named(i) for i in inner)
    return False


def _full_name(schema: dict[str, Any]) -> str:
    """A named type's full name (the reader is given with name and namespace apart)."""
    name, space = str(schema["name"]), schema.get("namespace")
    return f"{space}.{name}" if space and "." not in name else name


def _same(value: Any) -> Any:
    return value
