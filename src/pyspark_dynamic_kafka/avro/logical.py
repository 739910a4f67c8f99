"""Avro's logical types and field defaults for the Python decoder, read as Apache Avro Java
reads them: from their base type's values, by the *reader* schema's logical type.

fastavro applies the writer's logical types, and hands a missing field's JSON default over as
it is (a ``bytes`` default as text, a timestamp default as a number it never converts), where
Java resolves the base values and applies the reader's. So fastavro is given both schemas
without logical types (:func:`without_logical`), the reader's defaults made the base values Java
makes of them (:func:`raw_defaults`: ``bytes`` and ``fixed`` text as ISO-8859-1 bytes, Java's
rule), and the decoder shapes the base values into what Arrow takes for the Spark type
(:func:`logical_shaper`): a timestamp as microseconds, a date as days, a ``time-micros`` as
its time of day, a decimal as its ``Decimal``; ``time-millis`` and ``uuid`` stay their
base values, as Spark reads them. Values outside what the compiled core gives (timestamps and
dates outside the years 1 to 9999, a ``time-micros`` that is negative or a day or more: Spark's
``TimeType`` cannot hold them) fail their record, as in the core. A ``time-millis`` is Spark's
int, any int: Java and spark-avro read one outside a day as it is, and so do both decoders.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable, Mapping
from typing import Any

from pyspark_dynamic_kafka.avro.names import with_children
from pyspark_dynamic_kafka.avro.spark_types import TIME_OF_DAY

__all__ = ["logical_shaper", "raw_defaults", "without_logical"]

_EPOCH = datetime.datetime(1970, 1, 1)
_MIN_US = (datetime.datetime(1, 1, 1) - _EPOCH) // datetime.timedelta(microseconds=1)
_MAX_US = (datetime.datetime(9999, 12, 31, 23, 59, 59, 999999) - _EPOCH) // datetime.timedelta(
    microseconds=1
)
_DAY_US = 86_400_000_000
_NAMED = ("record", "error", "enum", "fixed")


def without_logical(schema: Any, only: str | None = None) -> Any:
    """``schema`` (parsed JSON) without ``logicalType`` anywhere (or without logical type
    ``only``)."""
    if isinstance(schema, list):
        return [without_logical(b, only) for b in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items() if k != "logicalType" or only not in (None, v)}
    if isinstance(out.get("type"), list | dict):
        out["type"] = without_logical(out["type"], only)
    return with_children(out, lambda child: without_logical(child, only))


def raw_defaults(schema: Any, named: dict[str, Any] | None = None) -> None:
    """Make the defaults of ``schema`` (fastavro's parsed schema, changed in place) the base
    values Java reads them as."""
    named = {} if named is None else named
    if isinstance(schema, list):
        for branch in schema:
            raw_defaults(branch, named)
        return
    if not isinstance(schema, dict):
        return
    if schema.get("type") in _NAMED:
        named[schema["name"]] = schema
    for f in schema.get("fields", []):
        raw_defaults(f["type"], named)
        if "default" in f:
            f["default"] = _raw(f["type"], f["default"], named)
    for key in ("items", "values", "type"):
        if isinstance(schema.get(key), dict | list):
            raw_defaults(schema[key], named)


def _raw(schema: Any, value: Any, named: dict[str, Any]) -> Any:
    """A JSON default of ``schema`` as the base value Java reads it as."""
    if isinstance(schema, str) and schema in named:
        schema = named[schema]
    if isinstance(schema, list):
        if not schema:
            return value
        first = named.get(schema[0], schema[0]) if isinstance(schema[0], str) else schema[0]
        if isinstance(first, dict) and first.get("type") == "fixed" and isinstance(value, str):
            # A union's fixed: bytes tell its branch (text would be the string branch's);
            # fastavro takes bytes there, and text only for a fixed outside a union.
            return value.encode("latin-1")
        return _raw(schema[0], value, named)
    kind = schema.get("type") if isinstance(schema, dict) else schema
    if isinstance(kind, list | dict):
        return _raw(kind, value, named)
    if kind == "bytes" and isinstance(value, str):  # fixed: fastavro wants text (decode.py)
        return value.encode("latin-1")
    if kind in ("float", "double") and isinstance(value, int | float):
        return float(value)
    if kind in ("record", "error") and isinstance(value, dict):
        fields = schema["fields"]
        return {
            f["name"]: _raw(f["type"], value[f["name"]], named) if f["name"] in value else None
            for f in fields
        }
    if kind == "array" and isinstance(value, list):
        return [_raw(schema["items"], v, named) for v in value]
    if kind == "map" and isinstance(value, dict):
        return {k: _raw(schema["values"], v, named) for k, v in value.items()}
    return value


def logical_shaper(schema: Mapping[str, Any]) -> Callable[[Any], Any] | None:
    """What turns a base value of ``schema`` (a type with a ``logicalType``) into what Arrow
    takes for its Spark type; None when the base value is that."""
    kind, logical = schema["type"], schema.get("logicalType")
    if kind in ("bytes", "fixed") and logical == "decimal":
        scale, precision = int(schema.get("scale", 0)), int(schema.get("precision", 38))

        def number(v: Any) -> decimal.Decimal:
            if isinstance(v, str):  # a fixed's default (decode.py)
                v = v.encode("latin-1")
            unscaled = int.from_bytes(v, "big", signed=True)
            if abs(unscaled) >= 10**precision:
                raise ValueError(f"the decimal {unscaled}e-{scale} has over {precision} digits")
            return decimal.Decimal(unscaled).scaleb(-scale)

        return number
    if kind == "int" and logical == "date":
        return _date
    if kind == "long" and logical in ("timestamp-millis", "local-timestamp-millis"):
        return lambda v: _moment(v * 1000)
    if kind == "long" and logical in ("timestamp-micros", "local-timestamp-micros"):
        return _moment
    if kind == "long" and logical == "time-micros":
        return _time if TIME_OF_DAY else None
    return None


def _moment(micros: int) -> int:
    if not _MIN_US <= micros <= _MAX_US:
        raise OverflowError(f"the timestamp {micros} us from 1970 is outside the years 1 to 9999")
    return micros


def _date(days: int) -> int:
    if not _MIN_US <= days * _DAY_US <= _MAX_US:
        raise OverflowError(f"the date {days} days from 1970 is outside the years 1 to 9999")
    return days


def _time(micros: int) -> datetime.time:
    if not 0 <= micros < _DAY_US:
        raise ValueError(f"the time of day {micros} us is not within a day")
    return (datetime.datetime.min + datetime.timedelta(microseconds=micros)).time()
