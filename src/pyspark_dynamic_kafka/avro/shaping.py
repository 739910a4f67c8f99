"""fastavro's values of a reader schema into what Arrow takes for the schema's Spark type
(:mod:`.spark_types`), for the Python decoder (:mod:`.decode`): the values fastavro gives
unchanged where Arrow takes them (no copy), logical types from their base values
(:mod:`.logical`), a ``fixed`` default's text as Java's bytes of it, and a union of several
types as a struct with the branch that was read set (``member0``, ``member1``, ...); a named
type's value comes tagged with its name when the writer's type is a union of it, and a union
only non-union writer types reach is marked with the branch Java reads (:mod:`.resolution`).
A ``logicalType`` on an enum, array or map is ignored, as Avro ignores it. The schema is walked
by :mod:`.walker`.
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pyspark_dynamic_kafka.avro.logical import logical_shaper
from pyspark_dynamic_kafka.avro.spark_types import spark_number
from pyspark_dynamic_kafka.avro.walker import Member, SchemaWalk

__all__ = ["Shaper", "shaper", "tags_named"]

Shaper = Callable[[Any], Any]


def shaper(schema: Any, untag: bool = False) -> Shaper:
    """What turns fastavro's value of ``schema`` (parsed JSON, read without logical types) into
    what Arrow takes for its Spark type; with ``untag``, named types' values may come tagged
    with their names (the writer's type is a union of them where the reader's is not)."""
    return _Shaping(untag).walk(schema)


class _Shaping(SchemaWalk[Shaper]):
    """What turns fastavro's value of each node into what Arrow takes for its type."""

    marks = True

    def __init__(self, untag: bool) -> None:
        super().__init__()
        self.untag = untag

    def _maybe_tagged(self, shape: Shaper) -> Shaper:
        return _untagged(shape) if self.untag else shape

    def primitive(self, name: str, node: Mapping[str, Any] | None, path: str) -> Shaper:
        return (logical_shaper(node) if node is not None else None) or _same

    def record(
        self, node: Mapping[str, Any], fields: Sequence[tuple[str, Shaper]], path: str
    ) -> Shaper:
        if all(shape is _same for _, shape in fields):
            return self._maybe_tagged(_same)  # fastavro's dict is Arrow's: no copy
        return self._maybe_tagged(lambda v: {name: shape(v[name]) for name, shape in fields})

    def enum(self, node: Mapping[str, Any], path: str) -> Shaper:
        return self._maybe_tagged(_same)

    def fixed(self, node: Mapping[str, Any], path: str) -> Shaper:
        return self._maybe_tagged(logical_shaper(node) or _latin1)

    def array(self, node: Mapping[str, Any], items: Shaper, path: str) -> Shaper:
        return _same if items is _same else lambda v: [items(x) for x in v]

    def map(self, node: Mapping[str, Any], values: Shaper, path: str) -> Shaper:
        if values is _same:
            return _same
        return lambda v: {k: values(x) for k, x in v.items()}  # Arrow takes a dict for a map

    def union(self, members: Sequence[Member[Shaper]], path: str) -> Shaper:
        rest = [m for m in members if m.schema != "null"]
        if len(rest) == 1:  # a named type's value comes tagged with its name: untag it
            only = rest[0].walked
            if only is _same and rest[0].name is None:
                return _same
            return lambda v: None if v is None else only(v[1] if isinstance(v, tuple) else v)
        kinds = {spark_number(m.schema) for m in rest}
        if kinds in ({"int", "long"}, {"float", "double"}) and len(rest) == 2:
            return lambda v: v
        shapes = [(m.kind, m.name, m.walked) for m in rest]

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
            raise TypeError(
                f"a value of type {type(value).__name__} matches no branch of its union"
            )

        return member

    def marked_union(
        self, node: Mapping[str, Any], members: Sequence[Member[Shaper]], path: str
    ) -> Shaper:
        """A union that only non-union writer types reach (:attr:`.resolution.Resolution.
        shaping`): every value goes to its ``branch``, the one Java reads, whatever its Python
        type."""
        chosen = members[node["branch"]]
        rest = [m for m in members if m.schema != "null"]
        if {spark_number(m.schema) for m in rest} == {"float", "double"} and len(rest) == 2:
            if chosen.kind != "float":  # Spark's double: no members
                return _same
            return lambda v: None if v is None else _FLOAT.unpack(_FLOAT.pack(v))[0]
        at = [m.schema for m in rest].index(chosen.schema)
        shape = _untagged(rest[at].walked)
        return lambda v: None if v is None else _member(at, len(rest), shape(v))


_FLOAT = struct.Struct("<f")  # Java's float, which an int or long read into one is rounded to


def _member(i: int, members: int, value: Any) -> dict[str, Any]:
    """A union's struct of ``members`` members with ``value`` in member ``i``."""
    return {f"member{j}": value if j == i else None for j in range(members)}


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


def _same(value: Any) -> Any:
    return value
