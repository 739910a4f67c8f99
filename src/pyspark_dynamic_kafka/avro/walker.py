"""The one walk over an Avro schema, for every use that works out something per type: the Spark
type (:mod:`.spark_types`), the decoder's shaping of fastavro's values (:mod:`.shaping`) and the
encoder's shaping of Spark's values (:mod:`.encode`).

:class:`SchemaWalk` visits a parsed schema (a name, a union as a list, an object with ``type``)
depth first, children before their parent, and hands each node with its children's results to
the method its kind names: :meth:`~SchemaWalk.primitive`, :meth:`~SchemaWalk.record`,
:meth:`~SchemaWalk.enum`, :meth:`~SchemaWalk.fixed`, :meth:`~SchemaWalk.array`,
:meth:`~SchemaWalk.map`, :meth:`~SchemaWalk.union` and :meth:`~SchemaWalk.wrapped` (an object
whose ``type`` is itself a union or an object). A use subclasses it and says what it makes of
each kind; logical types are the node's ``logicalType``, read by the use.

The walk does what every use needs alike: named types (``record``, ``error``, ``enum``,
``fixed``) are defined where they first appear and may be referred to again by name, with
Avro's namespace rules (a name already full, as :func:`fastavro.parse_schema` and
:func:`.names.plain` write them, is itself); a reference is walked as its definition again. A
schema that cannot be walked is refused with :class:`AvroSchemaError`, naming the path in it
(``$.fields[2].type[1]``): a node that is not a schema, a named type without a name, a record
without fields or a field without a name, a name that is not defined, and a record that contains
itself (no use has a value for one: Spark has no type for it).

With :attr:`~SchemaWalk.marks`, an object of type :data:`.union_marks.JAVA_UNION` (a union the
decoder's resolution marked with the branch Java reads) goes to
:meth:`~SchemaWalk.marked_union`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from pyspark_dynamic_kafka.avro.names import NAMED
from pyspark_dynamic_kafka.avro.union_marks import JAVA_UNION
from pyspark_dynamic_kafka.errors import DynamicKafkaError

__all__ = ["PRIMITIVES", "AvroSchemaError", "Member", "SchemaWalk"]

T = TypeVar("T")

#: The primitive types' names.
PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")

Node = Mapping[str, Any]


class AvroSchemaError(DynamicKafkaError):
    """An Avro schema that is malformed or has no Spark type, naming where in it."""


@dataclass(frozen=True)
class Member(Generic[T]):
    """A union's branch, walked.

    Attributes
    ----------
    schema:
        The branch as the union writes it.
    kind:
        Its type: a primitive's name, ``record``, ``error``, ``enum``, ``fixed``, ``array`` or
        ``map`` (a reference by name: its definition's type), ``union`` for a branch whose type
        is not a name.
    name:
        The full name of the named type the branch defines or refers to by name, else ``None``.
    walked:
        What the walk made of it.
    """

    schema: Any
    kind: str
    name: str | None
    walked: T


class SchemaWalk(ABC, Generic[T]):
    """A walk over one Avro schema; subclasses say what each kind of node gives."""

    #: Whether :data:`.union_marks.JAVA_UNION` objects are marked unions (else a type's name).
    marks: ClassVar[bool] = False

    def __init__(self) -> None:
        self._definitions: dict[str, Node] = {}

    def walk(self, schema: object) -> T:
        """What the walk makes of ``schema`` (parsed JSON).

        Raises
        ------
        AvroSchemaError
            When the schema cannot be walked (see the module's docstring), naming where.
        """
        return self._node(schema, "", (), "$")

    # --- what each kind of node gives: a use's own ---------------------------------------------

    @abstractmethod
    def primitive(self, name: str, node: Node | None, path: str) -> T:
        """A primitive type ``name``, written as its name (``node`` is ``None``) or as an object
        (which may hold a ``logicalType``)."""

    @abstractmethod
    def record(self, node: Node, fields: Sequence[tuple[str, T]], path: str) -> T:
        """A record (or error), with each field's name and what its type gave, in order."""

    @abstractmethod
    def enum(self, node: Node, path: str) -> T:
        """An enum."""

    @abstractmethod
    def fixed(self, node: Node, path: str) -> T:
        """A fixed."""

    @abstractmethod
    def array(self, node: Node, items: T, path: str) -> T:
        """An array, with what its items' type gave."""

    @abstractmethod
    def map(self, node: Node, values: T, path: str) -> T:
        """A map, with what its values' type gave."""

    @abstractmethod
    def union(self, members: Sequence[Member[T]], path: str) -> T:
        """A union, with its branches in order (``null`` ones too)."""

    def wrapped(self, node: Node, inner: T, path: str) -> T:
        """An object whose ``type`` is a union or an object: by default what that type gave."""
        return inner

    def marked_union(self, node: Node, members: Sequence[Member[T]], path: str) -> T:
        """A union marked with the branch Java reads: walked only when :attr:`marks` is set, and
        a walk that sets it defines this."""
        raise TypeError(f"{type(self).__name__} sets marks but does not define marked_union")

    # --- the walk ------------------------------------------------------------------------------

    def _node(self, schema: object, space: str, enclosing: tuple[str, ...], path: str) -> T:
        if isinstance(schema, str):
            return self._name(schema, space, enclosing, path)
        if isinstance(schema, list):
            return self.union(self._members(schema, space, enclosing, path), path)
        if not isinstance(schema, Mapping) or "type" not in schema:
            raise AvroSchemaError(
                f"Avro schema at {path}: expected a type name, a union (a list) or an object "
                f"with 'type', got {schema!r:.80}"
            )
        kind = schema["type"]
        if not isinstance(kind, str):
            return self.wrapped(schema, self._node(kind, space, enclosing, f"{path}.type"), path)
        if kind in PRIMITIVES:
            return self.primitive(kind, schema, path)
        if kind in NAMED:
            return self._named_type(schema, self._define(schema, space, path), enclosing, path)
        if kind == "array":
            items = self._node(schema.get("items"), space, enclosing, f"{path}.items")
            return self.array(schema, items, path)
        if kind == "map":
            values = self._node(schema.get("values"), space, enclosing, f"{path}.values")
            return self.map(schema, values, path)
        if self.marks and kind == JAVA_UNION:
            branches = self._members(schema["branches"], space, enclosing, f"{path}.branches")
            return self.marked_union(schema, branches, path)
        return self._name(kind, space, enclosing, f"{path}.type")

    def _name(self, name: str, space: str, enclosing: tuple[str, ...], path: str) -> T:
        if name in PRIMITIVES:
            return self.primitive(name, None, path)
        found = self._lookup(name, space)
        if found is None:
            raise AvroSchemaError(f"Avro schema at {path}: unknown type {name!r}")
        return self._named_type(self._definitions[found], found, enclosing, path)

    def _lookup(self, name: str, space: str) -> str | None:
        """The full name ``name`` refers to in namespace ``space``, if defined."""
        fullname = name if "." in name or not space else f"{space}.{name}"
        return next((c for c in (fullname, name) if c in self._definitions), None)

    def _define(self, schema: Node, space: str, path: str) -> str:
        name = schema.get("name")
        if not isinstance(name, str) or not name:
            raise AvroSchemaError(f"Avro schema at {path}: a {schema['type']} needs a 'name'")
        fullname = _fullname(schema, space)
        self._definitions.setdefault(fullname, schema)
        return fullname

    def _named_type(self, schema: Node, fullname: str, enclosing: tuple[str, ...], path: str) -> T:
        """A named type, where it is defined or used again by its name."""
        if schema["type"] == "enum":
            return self.enum(schema, path)
        if schema["type"] == "fixed":
            return self.fixed(schema, path)
        if fullname in enclosing:
            raise AvroSchemaError(
                f"Avro schema at {path}: record {fullname!r} contains itself; Spark has no "
                "type for a recursive record"
            )
        fields = schema.get("fields")
        if not isinstance(fields, list):
            raise AvroSchemaError(f"Avro schema at {path}: record {fullname!r} needs 'fields'")
        space, inner = fullname.rpartition(".")[0], (*enclosing, fullname)
        walked = []
        for i, entry in enumerate(fields):
            where = f"{path}.fields[{i}]"
            if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
                raise AvroSchemaError(f"Avro schema at {where}: a field needs a 'name'")
            walked.append(
                (entry["name"], self._node(entry.get("type"), space, inner, f"{where}.type"))
            )
        return self.record(schema, walked, path)

    def _members(
        self, branches: list[Any], space: str, enclosing: tuple[str, ...], path: str
    ) -> list[Member[T]]:
        members = []
        for i, branch in enumerate(branches):
            walked = self._node(branch, space, enclosing, f"{path}[{i}]")
            kind, name = _kind(branch), None
            if isinstance(branch, str) and branch not in PRIMITIVES:
                name = self._lookup(branch, space)
                kind = str(self._definitions[name]["type"]) if name is not None else branch
            elif isinstance(branch, Mapping) and branch.get("type") in NAMED:
                name = _fullname(branch, space)
            members.append(Member(branch, kind, name, walked))
        return members


def _fullname(schema: Node, space: str) -> str:
    """A named type's full name, defined in namespace ``space``."""
    name = str(schema["name"])
    if "." in name:
        return name
    own = schema.get("namespace", space)
    return f"{own}.{name}" if own else name


def _kind(schema: object) -> str:
    if isinstance(schema, Mapping):
        kind = schema.get("type")
        return kind if isinstance(kind, str) else "union"
    return schema if isinstance(schema, str) else "union"
