"""The one walk over an Avro schema (:mod:`pyspark_dynamic_kafka.avro.walker`) that the Spark
types, the decoder's shaping and the encoder's shaping state their nodes on: which method each
node reaches, in what order, with what; named types used again by name in their namespace; the
branches of a union as members; marked unions only where asked for; and the schemas it refuses,
naming where."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from pyspark_dynamic_kafka.avro.union_marks import JAVA_UNION
from pyspark_dynamic_kafka.avro.walker import AvroSchemaError, Member, SchemaWalk


class _Outline(SchemaWalk[str]):
    """Each node as a short text, children inside: the walk's order and what it hands over."""

    def primitive(self, name: str, node: Mapping[str, Any] | None, path: str) -> str:
        logical = node.get("logicalType") if node is not None else None
        return f"{name}/{logical}" if logical else name

    def record(self, node: Mapping[str, Any], fields: Sequence[tuple[str, str]], path: str) -> str:
        return f"{node['name']}{{{', '.join(f'{n}: {t}' for n, t in fields)}}}"

    def enum(self, node: Mapping[str, Any], path: str) -> str:
        return f"enum {node['name']}"

    def fixed(self, node: Mapping[str, Any], path: str) -> str:
        return f"fixed {node['name']}"

    def array(self, node: Mapping[str, Any], items: str, path: str) -> str:
        return f"[{items}]"

    def map(self, node: Mapping[str, Any], values: str, path: str) -> str:
        return f"map<{values}>"

    def union(self, members: Sequence[Member[str]], path: str) -> str:
        return " | ".join(f"{m.walked} ({m.kind}, {m.name})" for m in members)

    def wrapped(self, node: Mapping[str, Any], inner: str, path: str) -> str:
        return f"<{inner}>"


class _Marked(_Outline):
    marks = True

    def marked_union(
        self, node: Mapping[str, Any], members: Sequence[Member[str]], path: str
    ) -> str:
        return f"java {node['branch']}: " + " | ".join(m.walked for m in members)


ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {
            "name": "ship",
            "type": {
                "type": "record",
                "name": "Address",
                "fields": [
                    {"name": "kind", "type": {"type": "enum", "name": "K", "symbols": ["A"]}}
                ],
            },
        },
        {"name": "bill", "type": ["null", "Address", "shop.K"]},
        {"name": "tags", "type": {"type": "map", "values": {"type": "array", "items": "K"}}},
        {"name": "raw", "type": {"type": "fixed", "name": "Raw", "namespace": "", "size": 2}},
        {"name": "again", "type": "Raw"},
    ],
}


def test_each_node_reaches_its_kinds_method_and_names_resolve_in_their_namespace() -> None:
    assert _Outline().walk(ORDER) == (
        "Order{id: long/timestamp-millis, ship: Address{kind: enum K}, bill: null (null, None) "
        "| Address{kind: enum K} (record, shop.Address) | enum K (enum, shop.K), tags: "
        "map<[enum K]>, raw: fixed Raw, again: fixed Raw}"
    )


def test_an_object_whose_type_is_a_type_is_wrapped_and_marks_are_read_only_when_asked() -> None:
    assert _Outline().walk({"type": ["null", "int"]}) == "<null (null, None) | int (int, None)>"
    marked = {"type": JAVA_UNION, "branches": ["null", "int", "string"], "branch": 2}
    assert _Marked().walk(marked) == "java 2: null | int | string"
    with pytest.raises(AvroSchemaError, match="unknown type '_java_union'"):
        _Outline().walk(marked)


@pytest.mark.parametrize(
    ("schema", "said"),
    [
        (42, "at $: expected a type name"),
        ({"type": "enum", "symbols": []}, "at $: a enum needs a 'name'"),
        ({"type": "record", "name": "R", "fields": [{"type": "int"}]}, "$.fields[0]: a field"),
        (["null", "int", {"type": "array", "items": "Nope"}], "$[2].items: unknown type 'Nope'"),
        ({"type": "map", "values": {"x": 1}}, "at $.values: expected a type name"),
        (
            {"type": "record", "name": "N", "fields": [{"name": "n", "type": ["null", "N"]}]},
            "$.fields[0].type[1]: record 'N' contains itself",
        ),
    ],
)
def test_a_schema_that_cannot_be_walked_is_refused_naming_where(schema: Any, said: str) -> None:
    with pytest.raises(AvroSchemaError) as refused:
        _Outline().walk(schema)
    assert said in str(refused.value)
