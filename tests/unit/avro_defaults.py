"""Whether a JSON default fits its schema, as Apache Avro Java's parser checks it (the generated
pairs of :mod:`tests.unit.avro_pairs` redraw a default that does not: evolving a schema can
replace the definition of a named type a default was drawn for)."""

from __future__ import annotations

from typing import Any

__all__ = ["fits", "misfits"]


def fits(value: Any, schema: Any, named: dict[str, Any]) -> bool:
    """Whether ``value`` is a valid default of ``schema`` (a union's: of its first branch)."""
    if isinstance(schema, str) and schema in named:
        schema = named[schema]
    if isinstance(schema, list):
        return bool(schema) and fits(value, schema[0], named)
    kind = schema["type"] if isinstance(schema, dict) else schema
    if isinstance(kind, list | dict):
        return fits(value, kind, named)
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind in ("int", "long"):
        return isinstance(value, int) and not isinstance(value, bool)
    if kind in ("float", "double"):
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind in ("string", "bytes", "fixed"):
        return isinstance(value, str)
    if kind == "enum":
        return value in schema["symbols"]
    if kind == "array":
        return isinstance(value, list) and all(fits(v, schema["items"], named) for v in value)
    if kind == "map":
        return isinstance(value, dict) and all(
            fits(v, schema["values"], named) for v in value.values()
        )
    if kind in ("record", "error"):
        return isinstance(value, dict) and all(
            f["name"] in value and fits(value[f["name"]], f["type"], named)
            for f in schema["fields"]
        )
    return kind in named and fits(value, named[kind], named)


def misfits(schema: Any, named: dict[str, Any]) -> list[dict[str, Any]]:
    """The fields of ``schema`` (and of the types in it) whose default does not fit their type."""
    found: list[dict[str, Any]] = []
    if isinstance(schema, list):
        for branch in schema:
            found += misfits(branch, named)
    elif isinstance(schema, dict):
        for f in schema.get("fields", []):
            if "default" in f and not fits(f["default"], f["type"], named):
                found.append(f)
            found += misfits(f["type"], named)
        for key in ("items", "values", "type"):
            if isinstance(schema.get(key), list | dict):
                found += misfits(schema[key], named)
    return found
