"""Avro schema resolution as Apache Avro Java applies it (``Schema.applyAliases`` then
``Resolver.resolve``, what ``GenericDatumReader(writer, reader)`` reads with), worked out ahead of
decoding so that both decoders (fastavro's and arrow-avro's) read what Java reads.

Java's rules, where the libraries differ:

- Only the reader's aliases count: a reader named type's aliases rename the writer's named type
  of that full name, a reader field's aliases rename the writer's field of that name in the
  writer record that is (after renaming) of the reader record's full name (or one of its aliases).
  Writer aliases are ignored.
- Two records resolve whatever their names (``RecordAdjust``); an enum or a fixed resolves to one
  of the same unqualified name (and size), else the values fail.
- A reader field the writer lacks takes its default; without one, every record fails (even a
  nullable one).
- A writer's union: each branch is resolved against the whole reader schema (branch by branch
  when both unions are "equivalent"); errors show only for records of the failing branch.
- A reader's union (writer not a union): the first branch of the same type (named types: the
  same full name, or for records the first that resolves without a field error, preferring the
  same unqualified name), else the first branch the writer's type promotes to (int to long,
  float, double; long to float, double; float to double; string to bytes and back).

:func:`resolve` gives the writer schema renamed so that the libraries' own matching (by full name)
pairs the same types Java pairs, the reader schema without aliases, and what Java reports an
error on (the compiled core hands such pairs to the Python decoder, which, like Java, fails
only the records that reach the error).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyspark_dynamic_kafka.avro.names import NAMED as _NAMED
from pyspark_dynamic_kafka.avro.names import (
    apply_aliases,
    kind_names,
    kind_of,
    plain,
    plain_reader,
    qualified,
    renamed,
    with_article,
)
from pyspark_dynamic_kafka.avro.spark_types import spark_number
from pyspark_dynamic_kafka.avro.text import boxed, retyped, unboxed
from pyspark_dynamic_kafka.avro.union_marks import JAVA_UNION, marked

__all__ = ["JAVA_UNION", "Resolution", "plain_reader", "resolve"]

_PROMOTIONS = {
    "long": ("int",),
    "float": ("int", "long"),
    "double": ("int", "long", "float"),
    "bytes": ("string",),
    "string": ("bytes",),
}


@dataclass
class Resolution:
    """A writer schema resolved to a reader schema (parsed JSON, named types by full name)."""

    writer: Any
    reader: Any
    errors: list[str] = field(default_factory=list)
    defaulted: list[dict[str, Any]] = field(default_factory=list)  # reader fields, by default
    remapped: list[str] = field(default_factory=list)  # reader enums of other symbols
    unlike_fastavro: list[str] = field(default_factory=list)  # unions fastavro reads otherwise
    #: Each writer type promoted into a reader union's branch: (writer type, the branch's type,
    #: its logical type or None).
    promoted_into_unions: list[tuple[str, str, str | None]] = field(default_factory=list)
    #: The reader with each union that only non-union writer types reach, in one branch, marked
    #: ``{"type": JAVA_UNION, "branches": [...], "branch": k}``: the Python decoder's shaping
    #: (fastavro reads such a value untagged, so its Python type cannot tell the branch).
    shaping: Any = None


def resolve(writer: Any, reader: Any) -> Resolution:
    """How Java resolves ``writer`` (parsed JSON) to ``reader``: see the module's docstring."""
    w, w_named = qualified(writer)
    w = boxed(w)
    r, r_named = qualified(reader)
    apply_aliases(w_named, r_named)
    walk = _Walk(w_named, r_named)
    walk.resolve(w, r)
    retyped(walk.texts)  # bytes read as a string, or back: the bytes as they are
    static = {i: k for i, k in walk.branches.items() if k is not None}
    unlike = [why for i, why in walk.untagged if i not in static]
    renames = {full: schema["_java_name"] for full, schema in w_named.items()}
    owners: dict[str, str] = {}
    for old, new in walk.renames.items():  # a name the writer has already is its type's
        owner = owners.setdefault(new, new if new in w_named else old)
        if owner == old:
            renames[old] = new
        else:  # fastavro pairs a reader's named type with one writer type (by name)
            unlike.append(f"the writer's {owner} and {old} are both read as {new}")
    defaulted = {id(f) for f in walk.defaulted}
    for name, readers in sorted(walk.paired.items()):
        if len(readers) > 1:  # one name for the writer's record: fastavro pairs records by name
            both = " and ".join(sorted(readers))
            unlike.append(f"the writer's record {name} is read as the records {both}")
    return Resolution(
        unboxed(plain(renamed(w, renames))),
        plain(r),
        walk.errors,
        walk.defaulted,
        walk.remapped,
        walk.unlike_fastavro + unlike,
        walk.promoted,
        plain(marked(r, r_named, static, defaulted)) if static else None,
    )


def _short(name: str) -> str:
    return name.rpartition(".")[2]


class _Walk:
    """Java's ``Resolver.resolve`` over two qualified schemas: the errors it finds and the name
    each writer named type should have for the libraries to pair it as Java does."""

    def __init__(self, w_named: dict[str, Any], r_named: dict[str, Any]) -> None:
        self.w_named, self.r_named = w_named, r_named
        self.errors: list[str] = []
        self.defaulted: list[dict[str, Any]] = []
        self.remapped: list[str] = []
        self.unlike_fastavro: list[str] = []
        self.promoted: list[tuple[str, str, str | None]] = []
        self.texts: list[tuple[dict[str, Any], str]] = []  # writer bytes read as string, or back
        # Each reader union's branch for the non-union writer types it reads (None: a writer's
        # union reaches it, or two types of other branches), and the unions whose branch the
        # Python decoder cannot tell from an untagged value's Python type (why, by id).
        self.branches: dict[int, int | None] = {}
        self.untagged: list[tuple[int, str]] = []
        self.renames: dict[str, str] = {}
        self.paired: dict[str, set[str]] = {}  # each writer record's reader records
        self.seen: set[tuple[int, int]] = set()

    def _get(self, schema: Any, named: dict[str, Any]) -> Any:
        return named.get(schema, schema) if isinstance(schema, str) else schema

    def resolve(self, w: Any, r: Any, in_union: bool = False) -> bool:
        """Resolve ``w`` (``in_union``: a branch of a writer's union) to ``r``; False when
        Java's action for them is an error action."""
        w, r = self._get(w, self.w_named), self._get(r, self.r_named)
        wt, rt = kind_of(w), kind_of(r)
        if wt == "union":
            equiv = rt == "union" and self._equiv(w, r, set())
            for i, branch in enumerate(w):
                self.resolve(branch, r[i] if equiv else r, in_union=True)
                if equiv:  # Java reads branch i as branch i; fastavro searches the union
                    self._like_fastavro(branch, r, i, in_union=True)
            return True
        if wt == rt:
            if wt in ("record", "error"):
                return self._record(w, r)
            if wt in ("enum", "fixed"):
                java_name = w.get("_java_name", w["name"])
                if _short(java_name) != _short(r["name"]):
                    return self._error(f"the {wt} {java_name} is not {r['name']}")
                if wt == "fixed" and w["size"] != r["size"]:
                    return self._error(f"the fixed {java_name} is not of {r['name']}'s size")
                self.renames[w["name"]] = r["name"]
                if wt == "enum" and w["symbols"] != r["symbols"]:
                    self.remapped.append(r["name"])
                if wt == "enum":
                    missing = [s for s in w["symbols"] if s not in r["symbols"]]
                    if missing and r.get("default") is None:
                        self.errors.append(f"the enum {r['name']} has no symbol {missing[0]}")
                return True
            if wt == "array":
                self.resolve(w["items"], r["items"])
            if wt == "map":
                self.resolve(w["values"], r["values"])
            return True
        if rt == "union":
            branch = self._first_match(w, r)
            if branch is None:
                return self._error(f"no branch of the union {kind_names(r)} reads a {wt}")
            self.resolve(w, r[branch])
            target = self._get(r[branch], self.r_named)
            if kind_of(target) != wt:
                logical = target.get("logicalType") if isinstance(target, dict) else None
                self.promoted.append((wt, kind_of(target), logical))
            self._like_fastavro(w, r, branch, in_union)
            return True
        if wt in _PROMOTIONS.get(rt, ()):
            self.texts += [(w, rt)] if rt in ("bytes", "string") else []
            return True
        return self._error(f"{with_article(wt)} cannot be read as {with_article(rt)}")

    def _like_fastavro(self, w: Any, r: list[Any], branch: int, in_union: bool) -> None:
        """Record where fastavro and the Python decoder's shaping would read ``w`` into another
        branch of ``r`` than Java's ``branch`` (only a union read as a struct has branches)."""
        w = self._get(w, self.w_named)
        members = [self._get(b, self.r_named) for b in r]
        members = [m for m in members if kind_of(m) != "null"]
        numbers = {spark_number(m) for m in members}
        struct = len(members) > 1 and not (
            len(members) == 2 and numbers in ({"int", "long"}, {"float", "double"})
        )
        doubles = not struct and len(members) == 2 and numbers == {"float", "double"}
        if not struct and not doubles:
            return
        known = self.branches.get(id(r), branch)
        self.branches[id(r)] = None if in_union or known != branch else branch
        if doubles:
            self._rounded(kind_of(w), r, branch)
            return
        read, shaped = self._fastavros(w, r, in_union)
        why = (
            f"{with_article(kind_of(w))} is read as branch {branch} of the union "
            f"{kind_names(r)}, which fastavro reads otherwise"
        )
        if read != branch:  # fastavro reads another branch's value: refused
            self.unlike_fastavro.append(why)
        elif shaped != branch:  # the same value, put in another branch unless marked
            self.untagged.append((id(r), why))

    def _rounded(self, wt: str, r: list[Any], branch: int) -> None:
        """A union of a float and a double (Spark's double): Java reads an int or a long into
        the float when it comes first, rounding the value to a float, where fastavro keeps the
        whole number; marked with its branch where only non-union writer types reach it."""
        if wt in ("int", "long") and kind_of(self._get(r[branch], self.r_named)) == "float":
            why = f"{with_article(wt)} is read as the float of the union {kind_names(r)}, rounded"
            self.untagged.append((id(r), f"{why}, which fastavro does not"))

    def _error(self, reason: str) -> bool:
        self.errors.append(reason)
        return False

    def _record(self, w: dict[str, Any], r: dict[str, Any]) -> bool:
        if (id(w), id(r)) in self.seen:
            return True
        self.seen.add((id(w), id(r)))
        self.renames[w["name"]] = r["name"]  # Java does not compare records' names
        self.paired.setdefault(w["name"], set()).add(r["name"])
        ok = True
        by_name = {f["name"]: f for f in w["fields"]}
        for f in r["fields"]:
            if f["name"] not in by_name and "default" not in f:
                ok = self._error(f"the writer's {w['name']} has no field {f['name']}")
            elif f["name"] not in by_name:
                self.defaulted.append(f)
                self._empty_array_default(f)
        if not ok:
            return False
        readers = {f["name"]: f for f in r["fields"]}
        for f in w["fields"]:
            if f["name"] in readers:
                self.resolve(f["type"], readers[f["name"]]["type"])
        return True

    def _empty_array_default(self, f: dict[str, Any]) -> None:
        """Java 1.12 fails every record read with the default ``[]`` of a union whose first
        branch is an array ("Not an array": verified on its GenericDatumReader), which both
        libraries read: an error (the core hands the pair over) the Python decoder refuses."""
        kind = self._get(f["type"], self.r_named)
        if f["default"] != [] or kind_of(kind) != "union" or not kind:
            return
        if kind_of(self._get(kind[0], self.r_named)) == "array":
            why = f"the default [] of {f['name']}, a union whose first branch is an array"
            self.unlike_fastavro.append(f"{why}, which Java fails")
            self._error(why)

    def _matches_structure(self, w: dict[str, Any], r: dict[str, Any]) -> bool:
        """Whether Java's ``RecordAdjust`` of ``w`` and ``r`` has no error at its own level."""
        trial = _Walk(self.w_named, self.r_named)
        trial.seen = set(self.seen)
        by_name = {f["name"]: f for f in w["fields"]}
        if any(f["name"] not in by_name and "default" not in f for f in r["fields"]):
            return False
        readers = {f["name"]: f for f in r["fields"]}
        return all(
            trial.resolve(f["type"], readers[f["name"]]["type"])
            for f in w["fields"]
            if f["name"] in readers
        )

    def _first_match(self, w: Any, r: list[Any]) -> int | None:
        wt = kind_of(w)
        structure: int | None = None
        for j, b in enumerate(r):
            b = self._get(b, self.r_named)
            if kind_of(b) != wt:
                continue
            if wt not in _NAMED:
                return j
            if w.get("_java_name", w["name"]) == b["name"]:
                return j
            if wt in ("record", "error") and self._matches_structure(w, b):
                same = _short(w.get("_java_name", w["name"])) == _short(b["name"])
                if structure is None or same:
                    structure = j
        if structure is not None:
            return structure
        for j, b in enumerate(r):
            if wt in _PROMOTIONS.get(kind_of(self._get(b, self.r_named)), ()):
                return j
        return None

    def _fastavros(self, w: Any, r: list[Any], tagged: bool) -> tuple[int | None, int | None]:
        """The branch of ``r`` fastavro reads a value of ``w`` with (the first of the same
        type and name or promoted to), and the one the Python decoder's shaping puts it in
        unmarked: a named type's if fastavro tagged the value with its name, which it does only
        when the writer's type is a union (``tagged``), else the first of its Python type (a
        writer's enum read into ``["string", that enum]`` is untagged text: the string's)."""
        wt = kind_of(w)
        branches = [self._get(b, self.r_named) for b in r]
        for j, b in enumerate(branches):
            bt = kind_of(b)
            same = bt == wt and (wt not in _NAMED or self.renames.get(w["name"]) == b["name"])
            if same and tagged and wt in ("record", "error", "enum", "fixed"):
                return j, j
            if same or wt in _PROMOTIONS.get(bt, ()):
                kind = _PYTHON_KIND.get(bt, bt)
                kinds = [_PYTHON_KIND.get(kind_of(c)) for c in branches]
                return j, kinds.index(kind)
        return None, None

    def _equiv(self, w: Any, r: Any, seen: set[tuple[int, int]]) -> bool:
        """Java's ``unionEquiv``."""
        w, r = self._get(w, self.w_named), self._get(r, self.r_named)
        wt = kind_of(w)
        if wt != kind_of(r):
            return False
        if wt in _NAMED and _short(w.get("_java_name", w["name"])) != _short(r["name"]):
            return False
        if wt == "array":
            return self._equiv(w["items"], r["items"], seen)
        if wt == "map":
            return self._equiv(w["values"], r["values"], seen)
        if wt == "fixed":
            return bool(w["size"] == r["size"])
        if wt == "enum":
            return bool(w["symbols"] == r["symbols"])
        if wt == "union":
            return len(w) == len(r) and all(
                self._equiv(a, b, seen) for a, b in zip(w, r, strict=True)
            )
        if wt in ("record", "error"):
            if (id(w), id(r)) in seen:
                return True
            seen.add((id(w), id(r)))
            return len(w["fields"]) == len(r["fields"]) and all(
                a["name"] == b["name"] and self._equiv(a["type"], b["type"], seen)
                for a, b in zip(w["fields"], r["fields"], strict=True)
            )
        return True


#: Each Avro type's Python type in fastavro's values.
_PYTHON_KIND = {
    kind: python
    for python, kinds in {
        "int": ("int", "long"),
        "float": ("float", "double"),
        "str": ("string", "enum"),
        "bytes": ("bytes", "fixed"),
        "dict": ("map", "record", "error"),
        "list": ("array",),
        "bool": ("boolean",),
        "null": ("null",),
    }.items()
    for kind in kinds
}
