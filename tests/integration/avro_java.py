"""Test support: Apache Avro Java as the oracle of Avro decoding with schema resolution.

``java/AvroResolution.java`` is compiled once (cached by its digest) with ``javac`` against the
avro and jackson jars PySpark ships, and loaded into the test session's Spark JVM through a
class loader of its own; one py4j call decodes a whole batch of schema pairs and their bodies with
``GenericDatumReader(writer, reader)``. Its answers (typed JSON, see the Java source) are turned
into the values Arrow holds for the reader schema's Spark type (:func:`spark_value`), and both
those and the decoders' Arrow values into one comparable form (:func:`comparable`).
"""

from __future__ import annotations

import base64
import datetime
import decimal
import hashlib
import json
import os
import shutil
import struct
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyspark
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from tests.unit.avro_pairs import Pair, pairs

from pyspark_dynamic_kafka.avro.spark_types import spark_number
from pyspark_dynamic_kafka.testing.kafka_jars import cache_root

__all__ = ["JavaAvro", "comparable", "spark_value"]

_SOURCE = Path(__file__).resolve().parent / "java" / "AvroResolution.java"
_JARS = ("avro-1.12", "jackson-core-", "jackson-databind-", "jackson-annotations-")
UTC = datetime.timezone.utc
EPOCH = datetime.datetime(1970, 1, 1)


def _jars() -> list[Path]:
    folder = Path(pyspark.__file__).parent / "jars"
    found = [p for p in sorted(folder.glob("*.jar")) if p.name.startswith(_JARS)]
    assert len(found) == len(_JARS), found
    return found


def _compiled() -> Path:
    """The folder of the compiled oracle (compiled once per source and jars)."""
    jars = _jars()
    digest = hashlib.sha256(_SOURCE.read_bytes() + " ".join(p.name for p in jars).encode())
    target = cache_root() / f"avro-resolution-{digest.hexdigest()[:12]}"
    if not (target / "AvroResolution.class").exists():
        scratch = target.with_name(target.name + ".tmp")
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        javac = shutil.which("javac")
        assert javac, "javac is needed to compile the Avro oracle"
        classpath = ":".join(str(p) for p in jars)
        subprocess.run(
            [javac, "-cp", classpath, "-d", str(scratch), str(_SOURCE)], check=True, timeout=300
        )
        shutil.rmtree(target, ignore_errors=True)
        scratch.rename(target)
    return target


class JavaAvro:
    """The oracle, loaded into ``spark``'s JVM."""

    def __init__(self, spark: Any) -> None:
        jvm = spark._jvm
        gateway = spark.sparkContext._gateway
        urls = gateway.new_array(jvm.java.net.URL, 1)
        urls[0] = jvm.java.io.File(str(_compiled())).toURI().toURL()
        parent = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        loader = jvm.java.net.URLClassLoader(urls, parent)
        oracle = loader.loadClass("AvroResolution")
        types = gateway.new_array(jvm.java.lang.Class, 1)
        types[0] = jvm.java.lang.Class.forName("java.lang.String")
        self._method = oracle.getMethod("decode", types)
        self._gateway = gateway
        self._jvm = jvm

    def decode(self, pairs: Sequence[tuple[str, str, Sequence[bytes]]]) -> list[Any]:
        """Per pair (writer JSON, reader JSON, bodies): per body ``{"value": typed}`` or
        ``{"error": ...}``; ``{"schema_error": ...}`` for a pair Java cannot parse."""
        text = json.dumps(
            [
                {
                    "writer": writer,
                    "reader": reader,
                    "bodies": [base64.b64encode(b).decode() for b in bodies],
                }
                for writer, reader, bodies in pairs
            ]
        )
        args = self._gateway.new_array(self._jvm.java.lang.Object, 1)
        args[0] = text
        answer: list[Any] = json.loads(self._method.invoke(None, args))
        return answer


def spark_value(schema: Any, typed: Any, named: dict[str, Any] | None = None) -> Any:
    """Java's typed value of the reader schema ``schema`` (parsed) as Arrow's value of its Spark
    type (what ``to_pylist`` gives)."""
    if named is None:  # every named type, wherever the value's branches leave its definition
        named = {}
        _define(schema, named)
    if isinstance(schema, str) and schema in named:
        return spark_value(named[schema], typed, named)
    if isinstance(schema, list):
        return _union(schema, typed, named)
    if isinstance(schema, dict):
        kind = schema["type"]
        if kind in ("record", "error"):
            named[schema["name"]] = schema
            return {
                f["name"]: spark_value(f["type"], typed[f["name"]], named) for f in schema["fields"]
            }
        if kind in ("enum", "fixed"):
            named[schema["name"]] = schema
        if kind == "array":
            return [spark_value(schema["items"], v, named) for v in typed]
        if kind == "map":
            return {k: spark_value(schema["values"], v, named) for k, v in typed.items()}
        logical = schema.get("logicalType")
        if isinstance(kind, str) and logical is not None:
            return _logical(kind, logical, schema, typed)
        if isinstance(kind, list | dict) or kind in named:
            return spark_value(kind, typed, named)
        if kind == "fixed":
            return bytes.fromhex(typed)
        if kind == "enum":
            return typed
        return spark_value(kind, typed, named)
    if schema == "float":
        return struct.unpack("<f", struct.pack("<I", typed["f"] & 0xFFFFFFFF))[0]
    if schema == "double":
        return struct.unpack("<d", struct.pack("<Q", typed["d"] & 0xFFFFFFFFFFFFFFFF))[0]
    if schema == "bytes":
        return bytes.fromhex(typed)
    return typed  # null, boolean, int, long, string


def _define(schema: Any, named: dict[str, Any]) -> None:
    """Register every named type ``schema`` defines (a union's branches that a value does not
    take define types that later fields refer to)."""
    if isinstance(schema, list):
        for branch in schema:
            _define(branch, named)
    elif isinstance(schema, dict):
        if schema.get("type") in ("record", "error", "enum", "fixed"):
            named[schema["name"]] = schema
        for f in schema.get("fields", []):
            _define(f["type"], named)
        for key in ("type", "items", "values"):
            if isinstance(schema.get(key), list | dict):
                _define(schema[key], named)


def _logical(kind: str, logical: str, schema: dict[str, Any], typed: Any) -> Any:
    if logical == "decimal" and kind in ("bytes", "fixed"):
        unscaled = int.from_bytes(bytes.fromhex(typed), "big", signed=True)
        if len(str(abs(unscaled))) > schema["precision"]:  # Spark's Decimal fails it
            raise OverflowError(f"{unscaled} has more digits than the precision")
        return decimal.Decimal(unscaled).scaleb(-schema.get("scale", 0))
    if kind == "int" and logical == "date":
        return datetime.date(1970, 1, 1) + datetime.timedelta(days=typed)
    if kind == "long" and logical in ("timestamp-millis", "local-timestamp-millis"):
        moment = EPOCH + datetime.timedelta(milliseconds=typed)
        return moment if logical.startswith("local") else moment.replace(tzinfo=UTC)
    if kind == "long" and logical in ("timestamp-micros", "local-timestamp-micros"):
        moment = EPOCH + datetime.timedelta(microseconds=typed)
        return moment if logical.startswith("local") else moment.replace(tzinfo=UTC)
    if kind == "long" and logical == "time-micros":
        # Java gives any long; Spark's TimeType holds a time of day only, so a value outside a
        # day is one no Spark column holds: both decoders refuse it (the caller's OverflowError).
        if not 0 <= typed < 86_400_000_000:
            raise OverflowError(f"the time of day {typed} us is not within a day")
        return (EPOCH + datetime.timedelta(microseconds=typed)).time()
    if kind == "fixed":  # a fixed of another logical type (duration, a uuid's 16 bytes): bytes
        return bytes.fromhex(typed)
    return spark_value(kind, typed)  # time-millis (Spark: int), uuid (string), ...


def _union(branches: list[Any], typed: Any, named: dict[str, Any]) -> Any:
    index, value = typed
    branch = branches[index]
    rest = [b for b in branches if b != "null"]
    if branch == "null":
        return None
    converted = spark_value(branch, value, named)
    if len(rest) == 1:
        return converted
    kinds = {spark_number(b) for b in rest}
    if len(rest) == 2 and kinds in ({"int", "long"}, {"float", "double"}):
        return converted
    member = rest.index(branch)
    return {f"member{j}": converted if j == member else None for j in range(len(rest))}


def comparable(value: Any, arrow_type: pa.DataType) -> Any:
    """``value`` (Arrow's, of ``arrow_type``) in a form where equal means the same bits:
    floats as their IEEE bits, maps as dicts, binary as hex."""
    if value is None:
        return None
    if pa.types.is_struct(arrow_type):
        return {
            f.name: comparable(value[f.name], f.type)
            for f in arrow_type  # type: ignore[attr-defined]
        }
    if pa.types.is_map(arrow_type):
        items = value.items() if isinstance(value, dict) else value
        return {k: comparable(v, arrow_type.item_type) for k, v in items}
    if pa.types.is_list(arrow_type):
        return [comparable(v, arrow_type.value_type) for v in value]
    if pa.types.is_float32(arrow_type):
        return ("f", struct.pack("<f", value).hex())
    if pa.types.is_float64(arrow_type):
        return ("d", struct.pack("<d", value).hex())
    if pa.types.is_binary(arrow_type):
        return ("b", bytes(value).hex())
    if pa.types.is_decimal(arrow_type):
        return (
            "dec",
            str(decimal.Decimal(value).quantize(decimal.Decimal(1).scaleb(-arrow_type.scale))),
        )
    if pa.types.is_integer(arrow_type) or pa.types.is_boolean(arrow_type):
        return (type(value).__name__, value)
    return value


#: The suite draws the same cases every run (a failure there is a defect, not luck); ``make fuzz``
#: sets ``AVRO_JAVA_RANDOM=1`` and draws new ones.
RANDOM = os.environ.get("AVRO_JAVA_RANDOM") == "1"
#: Generated cases per example: one JVM call each.
BATCH = 25


def batched(cases: int) -> settings:
    """Hypothesis's settings for ``cases`` generated cases checked against Java :data:`BATCH` at
    a time: no deadline, health check or database, derandomized unless :data:`RANDOM`, and no
    shrinking (a failure's message names its case and records already, and shrinking a batch
    of 25 took minutes)."""
    return settings(
        max_examples=max(1, cases // BATCH),
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
        derandomize=not RANDOM,
        phases=[Phase.explicit, Phase.generate],
    )


def check_generated(
    java: JavaAvro,
    check: Callable[[JavaAvro, list[Pair]], None],
    cases: int,
    stats: Counter[str],
    counted: str,
) -> None:
    """``check`` against ``java`` on ``cases`` generated schema pairs (:func:`tests.unit.
    avro_pairs.pairs`), :data:`BATCH` to a call (:func:`batched`), with ``stats`` cleared first;
    prints the stats and the time taken, and fails unless ``stats[counted]`` (what ``check``
    counts) reached ``cases``."""
    drawn = batched(cases)(given(batch=st.lists(pairs(), min_size=BATCH, max_size=BATCH))(check))
    started = time.monotonic()
    stats.clear()
    drawn(java)
    print(f"{dict(stats)} in {time.monotonic() - started:.1f} s")
    assert stats[counted] >= cases
