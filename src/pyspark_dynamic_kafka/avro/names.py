"""Avro schemas with every name a full name, for schema resolution (:mod:`.resolution`):
a named type's definition and every reference to it carry its full name (namespaces applied as
Avro's rules say), aliases are kept apart, and the result is given back with each full name as
a name and a namespace (arrow-avro needs both to find a type referred to by its full name).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

__all__ = [
    "NAMED",
    "apply_aliases",
    "kind_names",
    "kind_of",
    "plain",
    "plain_reader",
    "qualified",
    "rebuilt",
    "renamed",
    "with_article",
    "with_children",
]

_PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
NAMED = ("record", "error", "enum", "fixed")


def plain_reader(reader: Any) -> Any:
    """``reader`` (parsed JSON) as :func:`resolve` gives it: full names, no aliases."""
    return plain(qualified(reader)[0])


def qualified(schema: Any) -> tuple[Any, dict[str, Any]]:
    """``schema`` with every name a full name (no ``namespace``) and no aliases, and its named
    types by full name; the aliases are kept apart (``_aliases`` keys) for :func:`resolve`."""
    named: dict[str, Any] = {}
    return _qualify(copy.deepcopy(schema), None, named), named


def _full(name: str, space: str | None) -> str:
    return name if "." in name or not space else f"{space}.{name}"


def _qualify(schema: Any, space: str | None, named: dict[str, Any]) -> Any:
    if isinstance(schema, str):
        if schema in _PRIMITIVES or "." in schema:
            return schema
        local = _full(schema, space)
        return local if local in named else schema
    if isinstance(schema, list):
        return [_qualify(b, space, named) for b in schema]
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type")
    if isinstance(kind, list | dict):
        return _qualify(kind, space, named)
    if kind in NAMED:
        name = str(schema["name"])
        own = schema.pop("namespace", None)
        space = name.rpartition(".")[0] if "." in name else (own if own is not None else space)
        full = _full(name, space)
        schema["name"] = full
        schema["_aliases"] = [_full(a, space) for a in schema.pop("aliases", None) or []]
        named[full] = schema
    if kind in ("record", "error"):
        for f in schema["fields"]:
            f["_aliases"] = list(f.pop("aliases", None) or [])
            f["type"] = _qualify(f["type"], space, named)
    if kind == "array":
        schema["items"] = _qualify(schema["items"], space, named)
    if kind == "map":
        schema["values"] = _qualify(schema["values"], space, named)
    return schema


def apply_aliases(w_named: dict[str, Any], r_named: dict[str, Any]) -> None:
    """Java's ``Schema.applyAliases``: the writer's named types and fields renamed in place by the
    reader's aliases (the writer's definitions are renamed; references follow in :func:`renamed`
    through the names the walk records)."""
    aliases: dict[str, str] = {}
    fields: dict[str, dict[str, str]] = {}
    for full, schema in r_named.items():
        for alias in schema.get("_aliases", []):
            aliases[alias] = full
        if schema["type"] in ("record", "error"):
            own = {a: f["name"] for f in schema["fields"] for a in f.get("_aliases", [])}
            if own:
                fields.setdefault(full, {}).update(own)
                for alias in schema.get("_aliases", []):
                    fields[alias] = fields[full]
    for full, schema in w_named.items():
        name = aliases.get(full, full)
        schema["_java_name"] = name
        if schema["type"] in ("record", "error"):
            renames = fields.get(name, {})
            for f in schema["fields"]:
                f["name"] = renames.get(f["name"], f["name"])


def plain(schema: Any) -> Any:
    """``schema`` without the aliases kept apart."""
    if isinstance(schema, list):
        return [plain(b) for b in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items() if k != "_aliases"}
    if out.get("type") in NAMED:  # a full name as name and namespace (arrow-avro needs both)
        space, _, name = str(out["name"]).rpartition(".")
        out["name"], out["namespace"] = name, space
    if "fields" in out:
        out["fields"] = [
            {**{k: v for k, v in f.items() if k != "_aliases"}, "type": plain(f["type"])}
            for f in out["fields"]
        ]
    for key in ("items", "values"):
        if key in out:
            out[key] = plain(out[key])
    return out


def renamed(schema: Any, renames: dict[str, str]) -> Any:
    """``schema`` (qualified) with its named types' definitions and references renamed."""
    if isinstance(schema, str):
        return renames.get(schema, schema)
    if isinstance(schema, list):
        return [renamed(b, renames) for b in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items() if k != "_java_name"}
    if out.get("type") in NAMED:
        out["name"] = renames.get(out["name"], schema.get("_java_name", out["name"]))
    return with_children(out, lambda child: renamed(child, renames))


def with_children(schema: dict[str, Any], change: Any) -> dict[str, Any]:
    """``schema`` (a qualified complex type) with its fields' types, items and values changed
    by ``change``."""
    out = dict(schema)
    if "fields" in out:
        out["fields"] = [{**f, "type": change(f["type"])} for f in out["fields"]]
    for key in ("items", "values"):
        if key in out:
            out[key] = change(out[key])
    return out


def rebuilt(schema: Any, change: Callable[[Any], Any]) -> Any:
    """A copy of ``schema`` (as :func:`fastavro.parse_schema` gives it) without fastavro's marks
    (the keys starting ``__``), each schema right below it changed by ``change``: a union's
    branches, a type given as a schema, a complex type's fields' types, items and values."""
    if isinstance(schema, list):
        return [change(branch) for branch in schema]
    if not isinstance(schema, dict):
        return schema
    schema = {key: value for key, value in schema.items() if not key.startswith("__")}
    if isinstance(schema.get("type"), dict | list):
        return {**schema, "type": change(schema["type"])}
    return with_children(schema, change)


def kind_of(schema: Any) -> str:
    """The type of ``schema`` (parsed): a primitive's name, a complex type's, or "union"."""
    if isinstance(schema, list):
        return "union"
    if isinstance(schema, dict):
        kind = schema["type"]
        return "error" if kind == "error" else str(kind) if isinstance(kind, str) else kind_of(kind)
    return str(schema)


def with_article(kind: str) -> str:
    """``kind`` with its indefinite article: "an int", "a string"."""
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def kind_names(schema: list[Any]) -> str:
    """A union's branches by type: "[int, string]"."""
    return "[" + ", ".join(b if isinstance(b, str) else kind_of(b) for b in schema) + "]"
