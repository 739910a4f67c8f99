"""The engine boundary (``pyspark_dynamic_kafka.engines``), without a broker: each role's
implementation for a planned engine, and a process without the compiled core, which imports,
plans every cluster on the Python engines and says why.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.engine_roles import NO_CORE

from pyspark_dynamic_kafka.avro.decode import Decoder
from pyspark_dynamic_kafka.engines import core
from pyspark_dynamic_kafka.engines.choice import on_core
from pyspark_dynamic_kafka.engines.encode_python import PythonColumnEncoder
from pyspark_dynamic_kafka.engines.implementations import (
    CoreMissingError,
    batch_producer,
    column_decoder,
    column_encoder,
    range_reader,
)
from pyspark_dynamic_kafka.engines.read_core import (
    CoreRangeReader,
    direct_consumer,
    librdkafka_consumer,
)
from pyspark_dynamic_kafka.engines.read_python import PythonRangeReader
from pyspark_dynamic_kafka.engines.write_python import PythonProducer
from pyspark_dynamic_kafka.errors import ReadError
from pyspark_dynamic_kafka.kafka.pool import confluent_consumer
from pyspark_dynamic_kafka.registry.client import RegisteredSchema

SCHEMA = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})


def _fetch(_: object) -> RegisteredSchema:
    return RegisteredSchema(SCHEMA, schema_id=1)


def test_each_planned_engine_has_its_range_reader_and_the_pools_factory() -> None:
    python = range_reader("python")
    assert isinstance(python, PythonRangeReader)
    assert python.factory is confluent_consumer
    for engine, factory in (("direct", direct_consumer), ("librdkafka", librdkafka_consumer)):
        reader = range_reader(engine)
        assert isinstance(reader, CoreRangeReader)
        # The pool keys its consumers by factory: the same function every time.
        assert reader.factory is factory
    assert [on_core(e) for e in ("direct", "librdkafka", "python")] == [True, True, False]


def test_each_planned_engine_has_its_producer() -> None:
    python = batch_producer("python", {"bootstrap.servers": "127.0.0.1:9"}, None)
    try:
        assert isinstance(python, PythonProducer)
    finally:
        python.close()


@pytest.mark.skipif(core.core() is None, reason=NO_CORE)
def test_the_core_produces_for_a_cluster_planned_on_librdkafka() -> None:
    producer = batch_producer("librdkafka", {"bootstrap.servers": "127.0.0.1:9"}, None)
    try:
        assert type(producer).__name__ == "CoreProducer"
    finally:
        producer.close()


def test_the_python_engine_decodes_with_the_python_decoder() -> None:
    assert type(column_decoder(False, SCHEMA, _fetch)) is Decoder


def test_without_the_core_its_implementations_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core, "INSTALLED", False)
    with pytest.raises(ReadError, match="has no pyspark-dynamic-kafka-core"):
        direct_consumer("east", {"bootstrap.servers": "127.0.0.1:9"})
    with pytest.raises(CoreMissingError, match=re.escape(core.NOT_INSTALLED)):
        batch_producer("librdkafka", {"bootstrap.servers": "127.0.0.1:9"}, None)
    # A cluster planned on the core whose worker lacks it: the Python decoder decodes, and the
    # Python encoder encodes.
    assert type(column_decoder(True, SCHEMA, _fetch)) is Decoder
    assert type(column_encoder(True, SCHEMA)) is PythonColumnEncoder
    assert core.core() is None


@pytest.mark.skipif(core.core() is None, reason=NO_CORE)
def test_the_core_decodes_a_planned_cluster_where_it_gives_the_readers_type() -> None:
    assert type(column_decoder(True, SCHEMA, _fetch)).__name__ == "NativeDecoder"


def test_the_python_engine_encodes_with_the_python_encoder() -> None:
    assert type(column_encoder(False, SCHEMA)) is PythonColumnEncoder


@pytest.mark.skipif(core.core() is None, reason=NO_CORE)
def test_the_core_encodes_a_planned_cluster_where_it_encodes_the_schema() -> None:
    assert type(column_encoder(True, SCHEMA)).__name__ == "NativeColumnEncoder"


_WITHOUT_CORE = """
import sys
from pathlib import Path
sys.modules["pyspark_dynamic_kafka_core"] = None  # import fails, as in a wheel without it
import pyspark_dynamic_kafka
from pyspark_dynamic_kafka.engines import core
from pyspark_dynamic_kafka.engines.choice import read_engine, write_engine
from pyspark_dynamic_kafka.engines.implementations import range_reader
plain = {"bootstrap.servers": "127.0.0.1:9"}
print(core.INSTALLED, core.core())
print(read_engine("auto", "east", plain))
print(write_engine("auto", "east", plain))
print(type(range_reader("python")).__name__)
"""


def _run_python(script: str) -> str:
    """What ``script``, run by this interpreter in a fresh process, prints."""
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout


def test_a_process_without_the_core_imports_and_plans_the_python_engines() -> None:
    out = _run_python(_WITHOUT_CORE).splitlines()
    why = core.NOT_INSTALLED
    assert out == [
        "False None",
        f"Engine(name='python', reason='{why}')",
        f"Engine(name='python', reason='{why}')",
        "PythonRangeReader",
    ]


_PYTHON_READER = """
import json, sys
from pyspark_dynamic_kafka.source.executor import planned, read, task
from pyspark_dynamic_kafka.engines.implementations import range_reader
range_reader("python")
print(json.dumps(sorted(sys.modules)))
"""


def test_the_python_engines_path_loads_neither_the_core_nor_the_avro_modules() -> None:
    """A query read with the Python reader, without Avro columns, never loads the compiled core,
    and no query without Avro columns imports the decoders."""
    out = _run_python(_PYTHON_READER)
    loaded = set(json.loads(out.strip().splitlines()[-1]))
    unwanted = ("pyspark_dynamic_kafka_core", "fastavro", "pyspark_dynamic_kafka.avro")
    assert sorted(n for n in loaded if n.startswith(unwanted)) == []
    assert "pyspark_dynamic_kafka.engines.read_python" in loaded


_STUB = Path(__file__).resolve().parents[2] / "native/python/pyspark_dynamic_kafka_core/_core.pyi"


@pytest.mark.skipif(core.core() is None, reason=NO_CORE)
def test_the_cores_stub_names_what_the_installed_core_exports() -> None:
    """mypy types the core by its stub: each function, class and public method the core
    exports is in it, and nothing else (the signatures are the pyo3 ones of native/src/py/)."""
    module = core.core()
    stub = ast.parse(_STUB.read_text())
    functions = {n.name for n in stub.body if isinstance(n, ast.FunctionDef)}
    classes = {n.name: n for n in stub.body if isinstance(n, ast.ClassDef)}
    exported = {n for n in dir(module) if not n.startswith("_")}
    assert functions | set(classes) == exported
    for name, node in classes.items():
        declared = {
            n.name for n in node.body if isinstance(n, ast.FunctionDef) and n.name[0] != "_"
        }
        methods = {m for m in vars(getattr(module, name)) if not m.startswith("_")}
        assert declared == methods, name
