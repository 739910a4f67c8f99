"""Named types by reference: the one form of a parsed schema that fastavro resolves alike at
every place.

fastavro (1.13) resolves a writer's named type against a reader's by what it finds at the two
places, and fails on two of the four mixes: a writer's inline definition against a reader union's
branch that names the type (``string indices must be integers``), and a writer's reference by
name against a reader union's branch that defines it inline (``unhashable type: 'dict'``). Java
reads both. Which mix a pair meets depends only on where each schema happens to define the type
first. :func:`by_reference` rewrites fastavro's parsed schema so that every named type is a
reference by its full name, its definition (itself by reference) kept in the parsed schema's
named schemas, where fastavro looks a reference up: writer and reader then always meet as two
names. fastavro keeps named schemas only beside a record, so the schema is wrapped as the one
field ``value`` of a record (:data:`TOP`), which Avro encodes as that field alone: the bytes are
the same, and the value read is the record's ``value``.
"""

from __future__ import annotations

from typing import Any

from pyspark_dynamic_kafka.avro.names import NAMED, with_children

__all__ = ["TOP", "by_reference"]

#: The wrapping record's full name.
TOP = "pyspark_dynamic_kafka.avro.Top"


def by_reference(parsed: Any) -> dict[str, Any]:
    """``parsed`` (:func:`fastavro.parse_schema`'s output, not changed) with every named type a
    reference by its full name, as the field ``value`` of the record :data:`TOP`."""
    named: dict[str, Any] = {}
    value = _reference(parsed, named)
    top = {"type": "record", "name": TOP, "fields": [{"name": "value", "type": value}]}
    # Marked parsed, the named schemas beside it (not inside them: fastavro compares the
    # writer and the reader schema with ==).
    return {**top, "__fastavro_parsed": True, "__named_schemas": named}


def _reference(schema: Any, named: dict[str, Any]) -> Any:
    """``schema`` with a named type's definition as its name (its definition in ``named``)."""
    if isinstance(schema, dict) and schema.get("type") in NAMED:
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
    schema = {key: value for key, value in schema.items() if not key.startswith("__")}
    if isinstance(schema.get("type"), dict | list):
        return {**schema, "type": _reference(schema["type"], named)}
    return with_children(schema, lambda child: _reference(child, named))
