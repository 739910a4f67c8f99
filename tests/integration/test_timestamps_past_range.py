"""A record whose timestamp is past Spark's range (a producer writing nanoseconds as CreateTime),
on Apache Kafka, against Spark's own kafka source.

Spark's source turns a record's milliseconds into microseconds with ``Math.multiplyExact``
(``DateTimeUtils.millisToMicros``) and fails the task on such a record ("long overflow"); every
reader of ours fails too, naming the cluster, topic, partition, offset and value, where it used
to wrap into a garbage timestamp: the Python reader, the compiled core's direct fetch path (a
PLAINTEXT cluster: ``Reader.fallback()`` says it read) and the core over librdkafka's consumer
(``client.rack`` keeps a cluster off the direct path). The records before it read as Spark's
source reads them, column for column.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyspark
import pytest
from benchmarks.peers.maven import spark_kafka_jars
from tests.integration.helpers import requires_kafka, source_options, write_metadata
from tests.integration.read_tasks import make_task, read_table

from pyspark_dynamic_kafka.engines.choice import read_engine
from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.errors import ReadError
from pyspark_dynamic_kafka.kafka.pool import consumer_config
from pyspark_dynamic_kafka.source.executor.read import read_task

pytestmark = pytest.mark.usefixtures("empty_consumer_pool")

_APP = Path(__file__).resolve().parent / "spark_kafka_app.py"
#: An explicit CreateTime (ms), an hour ago: older ones would fall to the topic's retention.
_T0 = (int(time.time()) - 3600) * 1000
#: Where the record past the range is, and how many records there are.
_BAD, _COUNT = 5, 9
#: The reader options and client properties that read a cluster on each engine.
_ENGINES = {
    "python": ("python", {}),
    "direct": ("native", {}),
    "librdkafka": ("native", {"client.rack": "rack-a"}),
}
#: The columns compared with Spark's source, the timestamp as its microseconds.
_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType")


def _past_range(ns: int) -> str:
    return (
        f"Reading from cluster 'east' failed: the record of stamps/0 at offset {_BAD} has a "
        f"timestamp of {ns} ms, past Spark's timestamp range (-9223372036854775 to "
        "9223372036854775 ms): was it written in nanoseconds or microseconds? Spark's own kafka "
        "source fails on it too. Fix the producer; to read on, start from a later offset"
    )


def _hex(value: Any) -> Any:
    return value.hex() if isinstance(value, bytes | bytearray) else value


def _rows(table: pa.Table) -> list[list[Any]]:
    """A table's :data:`_COLUMNS` as Spark's reference prints them (bytes as hex)."""
    table = table.select(list(_COLUMNS))
    stamp = table.schema.get_field_index("timestamp")
    table = table.set_column(stamp, "timestamp", table["timestamp"].cast(pa.int64()))
    return sorted(
        [[_hex(v) for v in row.values()] for row in table.to_pylist()],
        key=lambda r: (r[3], r[4]),
    )


def _spark_reference(bootstrap: str) -> dict[str, Any]:
    """Spark's own kafka source on topic ``stamps``: the rows before the bad record, and the
    failure of the whole topic's read (``spark_kafka_app.py``, a Spark of its own)."""
    jars = spark_kafka_jars(Path(pyspark.__file__).parent / "jars")
    ending = json.dumps({"stamps": {"0": _BAD}})
    done = subprocess.run(
        [sys.executable, str(_APP), ",".join(map(str, jars)), bootstrap, "stamps", ending],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# A second Spark (the reference's JVM) beside the suite's: 6.5 minutes on a loaded 2-core machine.
@pytest.mark.timeout(1500)
@requires_kafka("a broker taking a CreateTime in nanoseconds (message.timestamp.after.max.ms)")
@pytest.mark.skipif(core() is None, reason="the compiled core is not installed (NATIVE=0)")
def test_a_nanosecond_create_time_fails_every_reader_as_it_fails_sparks_source(
    spark: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    east = kafka_clusters("east")["east"]
    # A broker may refuse a CreateTime far ahead (message.timestamp.after.max.ms): allow any.
    east.create_topic(
        "stamps", partitions=1, config={"message.timestamp.after.max.ms": str(2**63 - 1)}
    )
    ns = time.time_ns()
    records = [
        {"key": f"k{i}", "value": f"v{i}", "timestamp": ns if i == _BAD else _T0 + i}
        for i in range(_COUNT)
    ]
    placed = east.produce("stamps", records, partition=0)
    assert placed == [(0, i) for i in range(_COUNT)]
    reference = _spark_reference(east.connection_properties()["bootstrap.servers"])
    # Spark's source: the records before the bad one, as CreateTime ms * 1000; then it fails.
    assert reference["rows"] == [
        [f"k{i}".encode().hex(), f"v{i}".encode().hex(), "stamps", 0, i, (_T0 + i) * 1000, 0]
        for i in range(_BAD)
    ]
    assert "long overflow" in reference["failure"], reference["failure"]

    # Each engine, on the executor: the records before it as Spark's rows; the bad one fails.
    for engine, (reader, props) in _ENGINES.items():
        assert read_engine(reader, "east", {**east.connection_properties(), **props}).name == engine
        before = read_table(make_task(east, reader, ("stamps", 0, 0, _BAD), **props))
        assert _rows(before) == reference["rows"], engine
        with pytest.raises(ReadError) as failed:
            list(read_task(make_task(east, reader, ("stamps", 0, 0, _COUNT), **props)))
        assert str(failed.value) == _past_range(ns), engine

    # The core's own readers say which path read: the direct one fails on the record itself.
    module = core()
    assert module is not None
    config = sorted(consumer_config(east.connection_properties()).items())
    for direct in (True, False):
        native = module.Reader(
            "east", config, [("stamps", 0, 0, _COUNT)], 30_000, False, True, direct=direct
        )
        with pytest.raises(module.ReadError) as failed_core:
            list(native)
        assert str(failed_core.value) == _past_range(ns)
        assert (native.fallback() is None) is direct, native.fallback()

    # A Spark batch read of dynamic_kafka, on each reader: Spark's rows, then the failure.
    meta = tmp_path / "streams.yaml"
    write_metadata(meta, {"east": east}, {"stamps": [("east", ["stamps"])]})
    for reader in ("python", "native"):
        options = source_options(meta, streamIds="stamps", reader=reader)
        ending = json.dumps({"east": {"stamps": {"0": _BAD}}})
        df = spark.read.format("dynamic_kafka").options(**options, endingOffsets=ending).load()
        micros = df.selectExpr(*_COLUMNS[:5], "unix_micros(timestamp)", "timestampType")
        got = [[_hex(v) for v in row] for row in micros.collect()]
        assert sorted(got) == reference["rows"], reader
        whole = spark.read.format("dynamic_kafka").options(**options).load()
        with pytest.raises(Exception) as failed_spark:  # Spark's wrapping of the task's error
            whole.collect()
        assert f"ReadError: {_past_range(ns)}" in str(failed_spark.value), reader
