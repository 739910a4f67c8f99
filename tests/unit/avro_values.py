"""Test support: hypothesis strategies of the values fastavro writes for an Avro schema (every
primitive and logical type, records, enums, fixed, arrays, maps, unions, named types by name),
for the differential test of the two Avro decoders."""

from __future__ import annotations

import datetime
from typing import Any

from hypothesis import strategies as st

UTC = datetime.timezone.utc


def avro_values(schema: Any) -> st.SearchStrategy[Any]:
    """Values of ``schema`` (parsed JSON) that fastavro writes."""
    return _values(schema, {})


def _values(schema: Any, named: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values fastavro writes for ``schema``."""
    if isinstance(schema, str) and schema in named:
        return _values(named[schema], named)
    if isinstance(schema, list):
        return st.one_of(*[_values(b, named) for b in schema])
    if isinstance(schema, dict):
        kind, logical = schema["type"], schema.get("logicalType")
        if kind == "record":
            named[schema["name"]] = schema
            return st.fixed_dictionaries(
                {f["name"]: _values(f["type"], named) for f in schema["fields"]}
            )
        if kind in ("enum", "fixed"):
            named[schema["name"]] = schema
        return _LOGICAL[logical] if logical in _LOGICAL else _complex(schema, named)
    return _PRIMITIVE[schema]


def _complex(schema: dict[str, Any], named: dict[str, Any]) -> st.SearchStrategy[Any]:
    kind = schema["type"]
    if kind == "enum":
        return st.sampled_from(schema["symbols"])
    if kind == "fixed":
        size = schema["size"]
        return st.binary(min_size=size, max_size=size)
    if kind == "array":
        return st.lists(_values(schema["items"], named), max_size=4)
    if kind == "map":
        return st.dictionaries(st.text(max_size=5), _values(schema["values"], named), max_size=3)
    return _values(kind, named)


_PRIMITIVE: dict[str, st.SearchStrategy[Any]] = {
    "null": st.none(),
    "boolean": st.booleans(),
    "int": st.integers(-(2**31), 2**31 - 1),
    "long": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(width=32, allow_nan=False),
    "double": st.floats(allow_nan=False),
    "string": st.text(max_size=20),
    "bytes": st.binary(max_size=20),
}
_MOMENTS = {"min_value": datetime.datetime(1900, 1, 1), "max_value": datetime.datetime(2200, 1, 1)}
_LOGICAL: dict[str, st.SearchStrategy[Any]] = {
    "timestamp-millis": st.datetimes(**_MOMENTS, timezones=st.just(UTC)),
    "timestamp-micros": st.datetimes(**_MOMENTS, timezones=st.just(UTC)),
    "local-timestamp-millis": st.datetimes(**_MOMENTS),
    "local-timestamp-micros": st.datetimes(**_MOMENTS),
    "date": st.dates(),
    "time-millis": st.times(),
    "time-micros": st.times(),
    "decimal": st.decimals(
        min_value=-(10**7), max_value=10**7, places=2, allow_nan=False, allow_infinity=False
    ),
    "uuid": st.uuids().map(str),
}
