"""Named types by reference: the one form of a parsed schema that fastavro resolves alike at
every place.

fastavro (1.13) resolves a writer's named type against a reader's by what it finds at the two
places, and fails on two of the four mixes: a writer's inline definition against a reader union's
branch that names the type (``string indices must be integers``), and a writer's reference by
name against a reader union's branch that defines it inline (``unhashable type: 'dict'``). Java
reads both. Which mix a pair meets depends only on where each schema happens to define the type
first. :func:`by_reference` rewrites fastavro's parsed schema so that every named type below the
top is a reference by its full name, its definition (itself by reference) kept in the parsed
schema's named schemas, where fastavro looks a reference up: writer and reader then always meet
as two names.
"""

from __future__ import annotations

from typing import Any

__all__ = ["by_reference"]

_NAMED = ("record", "error", "enum", "fixed")


def by_reference(parsed: Any) -> Any:
    """``parsed`` (:func:`fastavro.parse_schema`'s output, not changed) with each named type
    below the top a reference by its full name. A top that is a union keeps its branches'
    definitions in place, each marked parsed with the named schemas beside it (fastavro keeps no
    named schemas beside a list: it looks into its branches); a primitive is returned as it is."""
    named: dict[str, Any] = {}
    if isinstance(parsed, list):
        return [_top(branch, named) if isinstance(branch, dict) else branch for branch in parsed]
    if isinstance(parsed, dict):
        return _top(parsed, named)
    return parsed


def _top(schema: dict[str, Any], named: dict[str, Any]) -> dict[str, Any]:
    """A definition at the top (or a top union's branch), its children by reference, marked
    parsed with ``named`` beside it (not inside itself: fastavro compares the writer and the
    reader schema with ``==``)."""
    top = _below({key: value for key, value in schema.items() if not key.startswith("__")}, named)
    if top.get("type") in _NAMED:
        named[top["name"]] = top
    return {**top, "__fastavro_parsed": True, "__named_schemas": named}


def _reference(schema: Any, named: dict[str, Any]) -> Any:
    """``schema`` at a place below the top: a named type's definition becomes its name."""
    if isinstance(schema, dict) and schema.get("type") in _NAMED:
        name = schema["name"]
        named[name] = _below(schema, named)
        return name
    return _below(schema, named)


def _below(schema: Any, named: dict[str, Any]) -> Any:
    """A copy of ``schema`` whose children are references (:func:`_reference`)."""
    if isinstance(schema, list):
        return [_reference(branch, named) for branch in schema]
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type")
    if kind in ("record", "error"):
        fields = [{**f, "type": _reference(f["type"], named)} for f in schema["fields"]]
        return {**schema, "fields": fields}
    if kind == "array":
        return {**schema, "items": _reference(schema["items"], named)}
    if kind == "map":
        return {**schema, "values": _reference(schema["values"], named)}
    if isinstance(kind, dict | list):
        return {**schema, "type": _reference(kind, named)}
    return schema
