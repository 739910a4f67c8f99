"""Avro's ``string`` and ``bytes`` as Apache Avro Java reads them.

The two are encoded alike (a length, then the bytes). Java reads a ``string`` whose bytes are
not UTF-8 as ``new String(bytes, UTF_8)`` does: each malformed sequence becomes one U+FFFD,
grouped by the JDK's UTF-8 decoder (a surrogate's three bytes are one sequence, where Python's
own ``"replace"`` gives three). :data:`JAVA_UTF8` names that rule as a codec error handler, for
``bytes.decode`` and for fastavro's ``handle_unicode_errors``.

Java reads ``bytes`` into a reader's ``string`` (and the other way) as the raw bytes;
:func:`boxed` and :func:`retyped` let schema resolution give the writer's type the reader's
name there, so a decoder reads the bytes as the reader's type directly.
"""

from __future__ import annotations

import codecs
from typing import Any

from pyspark_dynamic_kafka.avro.names import with_children

__all__ = ["JAVA_UTF8", "boxed", "retyped", "unboxed"]

JAVA_UTF8 = "pyspark_dynamic_kafka.avro.java-utf8"
_TEXTS = ("bytes", "string")


def _continues(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def malformed_length(data: bytes, i: int) -> int:
    """How many bytes from ``i`` the JDK's UTF-8 decoder replaces with one U+FFFD, where a
    malformed sequence starts at ``i`` (as ``String.decodeUTF8_UTF16`` in JDK 17 groups them)."""
    n, first = len(data), data[i]
    if 0xE0 <= first <= 0xEF:  # three bytes; a whole one here is a surrogate or malformed
        short = i + 1 < n and (
            (first == 0xE0 and data[i + 1] & 0xE0 == 0x80) or not _continues(data[i + 1])
        )
        if short:
            return 1
        if i + 2 >= n:
            return n - i  # cut short by the end
        return 3 if _continues(data[i + 2]) else 2
    if 0xF0 <= first <= 0xF7:  # four bytes
        if first > 0xF4 or (
            i + 1 < n
            and (
                (first == 0xF0 and not 0x90 <= data[i + 1] <= 0xBF)
                or (first == 0xF4 and data[i + 1] & 0xF0 != 0x80)
                or not _continues(data[i + 1])
            )
        ):
            return 1
        if i + 2 < n and not _continues(data[i + 2]):
            return 2
        return 3 if i + 3 < n else n - i
    return 1  # a lone continuation, C0, C1, F8 to FF, or a two-byte lead without its second


def _replace_as_java(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeDecodeError):
        raise error
    return "\ufffd", error.start + malformed_length(error.object, error.start)


codecs.register_error(JAVA_UTF8, _replace_as_java)


def boxed(schema: Any) -> Any:
    """``schema`` (qualified, changed in place) with each ``bytes`` and ``string`` a type of
    its own (``{"type": "bytes"}``), so that :func:`retyped` can change one of them."""
    if isinstance(schema, str):
        return {"type": schema} if schema in _TEXTS else schema
    if isinstance(schema, list):
        schema[:] = [boxed(b) for b in schema]
    elif isinstance(schema, dict):
        for f in schema.get("fields", []):
            f["type"] = boxed(f["type"])
        for key in ("items", "values"):
            if key in schema:
                schema[key] = boxed(schema[key])
    return schema


def retyped(nodes: list[tuple[dict[str, Any], str]]) -> None:
    """Each node (a boxed ``bytes`` or ``string``, or either with a logical type) made the
    type it is read as, the other one: Java reads its bytes as they are."""
    for node, kind in nodes:
        node.clear()
        node["type"] = kind


def unboxed(schema: Any) -> Any:
    """``schema`` (plain, a copy) with the types :func:`boxed` made back to their names."""
    if isinstance(schema, list):
        return [unboxed(b) for b in schema]
    if not isinstance(schema, dict):
        return schema
    if len(schema) == 1 and schema.get("type") in _TEXTS:
        return schema["type"]
    return with_children(schema, unboxed)
