"""Both Avro decoders against Apache Avro Java (``GenericDatumReader(writer, reader)``, the avro
1.12 jar PySpark ships, run in the suite's Spark JVM: :mod:`tests.integration.avro_java`).

Generated writer/reader schema pairs (:mod:`tests.unit.avro_pairs`) and records written with the
writer schema by fastavro are decoded by the compiled core's decoder (``make_decoder``: the core,
or the Python decoder where the core hands the reader or writer schema over), by the Python
decoder (fastavro) and by Java. Each record's values are the same in all three (compared bit for
bit: floats as their IEEE bits), or all three refuse the record. ``AVRO_JAVA_PAIRS`` pairs
(2,000 by default, in ``make test`` and ``make avro-java``; ``make fuzz`` draws 100,000 new
ones); the named cases are the unit tests' (:mod:`tests.unit.test_avro_resolution`). The writer
schemas reach the decoders through their ``fetch`` callable with no registry in between: the
registry is not what is compared here.

Known divergences, counted (printed) and allowed, each a refusal where Java reads a record, never
another value: a pair Java finds an error in (``resolution.errors``) is read by fastavro, which
fails some records Java reads (an unresolvable type inside an empty array or map, a union branch
no record took); a pair fastavro would read otherwise than Java (``resolution.unlike_fastavro``:
a union's promotion branch before the exact one, or before the branch an equivalent writer union
names; a value fastavro gives untagged, in a union a writer's union reaches too; an int or long
read into a union's float before its double; a writer's record read as two reader records) is
refused by the Python decoder, and by the core where it hands the pair over. Excluded
from the generated pairs: enums and fixed renamed without an alias (Java fails only the records
whose values reach them, fastavro all), decimal defaults beyond their precision.
"""

from __future__ import annotations

import io
import json
import os
from collections import Counter
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.integration.avro_java import (
    RANDOM,
    JavaAvro,
    check_generated,
    comparable,
    spark_value,
)
from tests.unit.avro_pairs import Pair
from tests.unit.test_avro_resolution import NAMED_CASES

from pyspark_dynamic_kafka.avro.decode import Decoder
from pyspark_dynamic_kafka.avro.framing import SchemaRef
from pyspark_dynamic_kafka.avro.resolution import Resolution, resolve
from pyspark_dynamic_kafka.avro.spark_types import AvroSchemaError, spark_type
from pyspark_dynamic_kafka.engines.decode_core import NativeDecoder, make_decoder
from pyspark_dynamic_kafka.registry.client import RegisteredSchema

PAIRS = int(os.environ.get("AVRO_JAVA_PAIRS", "2000"))
WRITER_ID = 7
STATS: Counter[str] = Counter()


@pytest.fixture(scope="module")
def java(spark: Any) -> JavaAvro:
    return JavaAvro(spark)


def _body(writer: Any, value: Any) -> bytes | None:
    out = io.BytesIO()
    try:
        fastavro.schemaless_writer(out, fastavro.parse_schema(writer), value)
    except Exception:
        return None
    return out.getvalue()


def _fetch(writer: str) -> Any:
    def fetch(ref: SchemaRef) -> RegisteredSchema:
        assert ref.schema_id == WRITER_ID
        return RegisteredSchema(writer, schema_id=WRITER_ID)

    return fetch


def _ours(decoder: Any, payloads: list[bytes]) -> list[Any]:
    """Each record's value (comparable) or ``"refused"``."""
    decoded = decoder.decode_arrow(pa.array(payloads, pa.binary()), None, lambda i: f"at {i}")
    corrupt = decoded.corrupt.to_pylist()
    values = decoded.values.to_pylist()
    return [
        "refused" if bad is not None else comparable(value, decoded.values.type)
        for value, bad in zip(values, corrupt, strict=True)
    ]


def _java_expected(reader: Any, answer: Any, arrow_type: pa.DataType) -> Any:
    if "error" in answer:
        return "refused"
    try:
        return comparable(spark_value(reader, answer["value"]), arrow_type)
    # A time Python's datetime cannot hold, a decimal of more digits than its precision (which
    # Spark's Decimal fails): both decoders refuse it.
    except OverflowError:
        STATS["unrepresentable"] += 1
        return "refused"


def check_pairs(java: JavaAvro, batch: list[Pair]) -> None:
    """Every pair of ``batch`` decoded by the three: the same values, or all refuse."""
    STATS["pairs"] += len(batch)
    cases = []
    for writer, reader, values in batch:
        try:
            spark_type(reader)
        except AvroSchemaError:
            STATS["reader without a Spark type"] += 1
            continue
        bodies = [b for b in (_body(writer, v) for v in values) if b is not None]
        if bodies:
            cases.append((writer, reader, bodies))
    answers = java.decode([(json.dumps(w), json.dumps(r), b) for w, r, b in cases])
    for (writer, reader, bodies), answer in zip(cases, answers, strict=True):
        assert "schema_error" not in answer, (writer, reader, answer)
        check_pair(writer, reader, bodies, answer)


def check_pair(writer: Any, reader: Any, bodies: list[bytes], answer: list[Any]) -> None:
    text, writer_text = json.dumps(reader), json.dumps(writer)
    prefix = b"\0" + WRITER_ID.to_bytes(4, "big")
    payloads = [prefix + body for body in bodies]
    python = Decoder(text, _fetch(writer_text), permissive=True)
    native = make_decoder(text, _fetch(writer_text), permissive=True)
    try:
        expected = [_java_expected(reader, a, python.arrow_type) for a in answer]
    except (TypeError, ValueError, KeyError) as exc:  # the harness's reading of Java's answer
        raise AssertionError(f"Java's answer unread: {exc}", writer, reader, answer) from exc
    got_python = _ours(python, payloads)
    got_native = _ours(native, payloads)
    served = "python" if not isinstance(native, NativeDecoder) or native._python else "core"
    STATS[f"pairs served by the {served}"] += 1
    STATS["records refused by Java"] += expected.count("refused")
    STATS["records"] += len(bodies)
    context = {"writer": writer_text, "reader": text, "java": answer, "python": got_python}
    context["core"] = got_native
    resolution = resolve(writer, reader)
    known = _known(resolution)
    for got, who in ((got_python, "Python decoder"), (got_native, f"core decoder ({served})")):
        for mine, javas in zip(got, expected, strict=True):
            if mine != javas and mine == "refused" and known:
                STATS[f"known divergence ({known}): {who} refuses what Java reads"] += 1
                continue
            assert mine == javas, (who, context)


def _known(resolution: Resolution) -> str | None:
    """The known divergences (see the module's docstring) a pair may show, if any."""
    if resolution.errors:
        return "eager"
    if resolution.unlike_fastavro:
        return "unlike fastavro"
    return None


@pytest.mark.avro_java_pairs
def test_generated_schema_pairs_decode_as_java_decodes_them(java: JavaAvro) -> None:
    check_generated(java, check_pairs, PAIRS, STATS, "pairs")


@pytest.mark.parametrize("case", NAMED_CASES, ids=lambda c: json.dumps(c[1])[:60])
def test_named_cases_are_what_java_gives(java: JavaAvro, case: Any) -> None:
    """The unit tests' cases (issue 41's two among them): Java gives what they expect, and so do
    both decoders."""
    writer, reader, values, expected = case
    bodies = [b for b in (_body(writer, v) for v in values) if b is not None]
    (answer,) = java.decode([(json.dumps(writer), json.dumps(reader), bodies)])
    javas = ["refused" if "error" in a else spark_value(reader, a["value"]) for a in answer]
    arrow_type = Decoder(json.dumps(reader), _fetch(json.dumps(writer))).arrow_type
    same = [v if v == "refused" else comparable(v, arrow_type) for v in javas]
    assert same == [v if v == "refused" else comparable(v, arrow_type) for v in expected]
    check_pair(writer, reader, bodies, answer)


def _text_body(raw: bytes) -> bytes:
    """An Avro ``string`` or ``bytes`` of ``raw`` (its length zig-zag encoded, then the bytes):
    a writer's string that is not UTF-8, which fastavro cannot write."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, "bytes", raw)
    return out.getvalue()


_MALFORMED = st.lists(
    st.sampled_from([0x41, 0x80, 0xBF, 0xC0, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF])
    | st.integers(0, 255),
    max_size=9,
).map(bytes)


@settings(max_examples=3, deadline=None, database=None, derandomize=not RANDOM)
@given(raws=st.lists(_MALFORMED, min_size=100, max_size=100))
def test_text_that_is_not_utf8_reads_as_java_reads_it(java: JavaAvro, raws: list[bytes]) -> None:
    """Writer strings that are not UTF-8 (a producer's bug Java reads through), read as a string
    and as bytes, and bytes read as a string: Java replaces each malformed sequence with one
    U+FFFD (as the JDK groups them) or keeps the bytes, and so do both decoders."""
    bodies = [_text_body(raw) for raw in raws]
    pairs = [
        ("string", "string"),
        ("string", "bytes"),
        ("bytes", "string"),
        ("string", ["null", "string"]),
    ]
    answers = java.decode([(json.dumps(w), json.dumps(r), bodies) for w, r in pairs])
    for (writer, reader), answer in zip(pairs, answers, strict=True):
        assert all("error" not in a for a in answer), (writer, reader)
        check_pair(writer, reader, bodies, answer)
