"""The reader schema the Python decoder shapes values by (:attr:`.resolution.Resolution.shaping`):
each union that only non-union writer types reach marked with the branch Java reads, where the
value is read from the writer; unmarked where it comes from a reader field's default (Java reads
a default into the union's first branch, which unmarked shaping gives).

A named type can be both: a reader field the writer lacks, of a record type whose union another
field reads from the writer. So every named type is written out in full where it is used (a
reader schema has no recursion: Spark refuses one), marked or not as that place is read. (One
reader field read from the writer in one place and from its default in another takes two writer
records read as one reader record, which the Python decoder refuses: ``unlike_fastavro``.)
"""

from __future__ import annotations

from typing import Any

from pyspark_dynamic_kafka.avro.names import plain, with_children

__all__ = ["JAVA_UNION", "marked"]

#: The type of a reader's union marked with the branch Java reads.
JAVA_UNION = "_java_union"


def marked(schema: Any, named: dict[str, Any], static: dict[int, int], defaulted: set[int]) -> Any:
    """``schema`` (qualified) with every named type in full where it is used (a reference inside
    the type itself stays one), and the unions of ``static`` (by id: their branch) marked, except
    in the type of a field of ``defaulted`` (by id) and below it."""
    return _Marker(named, static, defaulted).marked(schema, frozenset())


class _Marker:
    def __init__(self, named: dict[str, Any], static: dict[int, int], defaulted: set[int]):
        self.named, self.static, self.defaulted = named, static, defaulted

    def marked(self, schema: Any, inside: frozenset[str], marking: bool = True) -> Any:
        if isinstance(schema, str):
            if schema not in self.named or schema in inside:
                return schema
            return self.marked(self.named[schema], inside | {schema}, marking)
        if isinstance(schema, list):
            branches = [self.marked(b, inside, marking) for b in schema]
            if marking and id(schema) in self.static:  # its branches left as plain() leaves them
                branch = self.static[id(schema)]
                return {"type": JAVA_UNION, "branches": plain(branches), "branch": branch}
            return branches
        if not isinstance(schema, dict):
            return schema
        kind = schema.get("type")
        if isinstance(kind, list | dict) or (isinstance(kind, str) and kind in self.named):
            return self.marked(kind, inside, marking)  # {"type": T} is T
        if "name" in schema:
            inside |= {schema["name"]}
        if "fields" in schema:
            fields = [
                {
                    **f,
                    "type": self.marked(f["type"], inside, marking and id(f) not in self.defaulted),
                }
                for f in schema["fields"]
            ]
            return {**schema, "fields": fields}
        return with_children(schema, lambda child: self.marked(child, inside, marking))
