"""Each Python process Spark starts imports only what its role needs (issue 34).

Every Spark task unpickles the data source and the reader, the planner builds the reader, and
``load()`` asks for the schema: each in a Python process of its own, which pays for every
module it imports before its first call. Asserted on ``sys.modules`` of a fresh interpreter
(never on time): the executor's read path imports no YAML, rich, pandas, Parquet,
``pyarrow.compute``, command line, server, sink or driver module; the driver's planning no Arrow
builders, Parquet, pandas or sink.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: Never on any role's path below.
_NEVER = ("rich", "pandas", "pyspark_dynamic_kafka.cli", "pyspark_dynamic_kafka.server")


def _loaded(code: str) -> set[str]:
    """The modules a fresh interpreter has after running ``code``."""
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def _present(loaded: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if n in loaded or any(m.startswith(n + ".") for m in loaded))


#: What an executor's task unpickles and calls to read (the compiled core's path and the
#: Python reader's module), and the pyspark worker module that runs it.
_EXECUTOR = """
import pyspark.sql.worker.plan_data_source_read
import pickle
from pyspark_dynamic_kafka.datasource import DynamicKafkaDataSource
from pyspark_dynamic_kafka.source.stream import DynamicKafkaStreamReader
from pyspark_dynamic_kafka.source.batch import DynamicKafkaBatchReader
from pyspark_dynamic_kafka.engines import read_core
from pyspark_dynamic_kafka.source.executor import planned, read, task
"""


def test_the_executors_read_path_imports_no_driver_cli_server_yaml_or_pandas() -> None:
    loaded = _loaded(_EXECUTOR)
    unwanted = (
        *_NEVER,
        "yaml",
        "pyarrow.compute",
        "pyarrow.parquet",
        "pyspark_dynamic_kafka.metadata",
        "pyspark_dynamic_kafka.sink",
        "pyspark_dynamic_kafka.source.driver",
        "pyspark_dynamic_kafka.source.group",
        "pyspark_dynamic_kafka.source.archive.hybrid",
        "pyspark_dynamic_kafka.engines.read_python_batches",
    )
    assert _present(loaded, unwanted) == []
    assert "pyspark_dynamic_kafka.source.executor.read" in loaded


def test_the_archives_executor_side_imports_no_driver_metadata_or_yaml() -> None:
    loaded = _loaded("from pyspark_dynamic_kafka.source.executor import archive")
    unwanted = (
        *_NEVER,
        "yaml",
        "pyspark_dynamic_kafka.metadata",
        "pyspark_dynamic_kafka.sink",
        "pyspark_dynamic_kafka.source.driver",
        "pyspark_dynamic_kafka.source.group",
        "pyspark_dynamic_kafka.source.archive",
    )
    assert _present(loaded, unwanted) == []


#: What the source's planner process runs: the data source builds the stream reader, whose first
#: driver call builds its pipeline (the driver's modules); nothing connects before offsets.
_PLANNER = """
from pyspark_dynamic_kafka.datasource import DynamicKafkaDataSource
source = DynamicKafkaDataSource({
    "metadataService": "file", "metadataService.path": "/nonexistent.yaml",
    "streamIds": "s", "startingOffsets": "earliest",
})
reader = source.streamReader(None)
batch = source.reader(None)
"""


def test_pysparks_read_planner_builds_a_reader_without_the_drivers_modules() -> None:
    # plan_data_source_read builds a stream reader only to pickle its read(): no driver call.
    loaded = _loaded(_PLANNER)
    assert _present(loaded, ("pyspark_dynamic_kafka.source.driver", "yaml")) == []


def test_the_planner_imports_no_arrow_builders_parquet_pandas_or_sink() -> None:
    loaded = _loaded(_PLANNER + "reader.getDefaultReadLimit()\n")
    unwanted = (
        *_NEVER,
        "pyarrow.compute",
        "pyarrow.parquet",
        "pyspark_dynamic_kafka.sink",
        "pyspark_dynamic_kafka.source.archive.hybrid",
        "pyspark_dynamic_kafka.engines.read_python_batches",
    )
    assert _present(loaded, unwanted) == []
    assert "pyspark_dynamic_kafka.source.driver.pipeline" in loaded


@pytest.mark.parametrize("method", ["schema()", "writer(None, False)"])
def test_load_and_the_sinks_planner_import_no_source_driver(method: str) -> None:
    code = (
        "from pyspark_dynamic_kafka.datasource import DynamicKafkaDataSource\n"
        "source = DynamicKafkaDataSource({'metadataService': 'file', "
        "'metadataService.path': '/nonexistent.yaml', 'streamIds': 's', 'streamId': 's'})\n"
        f"try:\n    source.{method}\nexcept Exception:\n    pass\n"
    )
    loaded = _loaded(code)
    unwanted = (
        *_NEVER,
        "pyarrow.compute",
        "pyarrow.parquet",
        "pyspark_dynamic_kafka.source.driver",
        "pyspark_dynamic_kafka.engines.read_python_batches",
    )
    assert _present(loaded, unwanted) == []


def test_importing_the_package_imports_neither_pyspark_nor_the_data_source() -> None:
    loaded = _loaded("import pyspark_dynamic_kafka")
    assert _present(loaded, ("pyspark", "pyspark_dynamic_kafka.datasource", "yaml")) == []


def test_the_default_source_still_registers_the_format() -> None:
    code = "import pyspark_dynamic_kafka as p\nprint(p.DefaultSource.name())"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "dynamic_kafka"
