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

from pyspark_dynamic_kafka.avro.names import NAMED, rebuilt

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
    """``schema`` with every named type's definition, its own and those below it, as its name
    (its definition in ``named``)."""
    below = rebuilt(schema, lambda child: _reference(child, named))
    if isinstance(schema, dict) and schema.get("type") in NAMED:
        named[schema["name"]] = below
        return schema["name"]
    return below
