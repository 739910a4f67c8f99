"""Issue 42: examples/pipeline/, a Spark Declarative Pipeline, run by ``spark-pipelines run`` on
Apache Kafka while its source stream moves from east to west; read back ``read_committed``, the
sink's logical stream holds every order exactly once.

A pipeline runs each streaming flow with ``Trigger.AvailableNow``: a run reads what the stream
holds when it starts, then ends, and the next run continues from the checkpoints the engine
keeps. So the move spreads over two runs, as the runbook spreads it over time, and each step
lands while a run reads (its source flow reads in micro-batches of :data:`PER_TRIGGER`):

- run 1 reads east's orders; meanwhile west joins the stream and gets its orders: west enters
  the source's offset at its start, unread (it was not there when the run started);
- between the runs the sink's writes move to west (``move orders-json --write``);
- run 2 reads west's orders; meanwhile east, which run 1 drained, leaves the stream
  (``move orders --from east --to west``).

Each order is Avro from its own cluster's registry (the same schema is id 1 on east, id 100 on
west) and the sink writes it as JSON with the id it was decoded with. Both runs go to one Spark
Connect server (``--remote``), whose catalog keeps the streaming table between them; a run with
its own local server needs a persistent catalog for that (docs/pipelines.md, "Declarative
Pipelines").
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from tests.integration.helpers import DEADLINE, requires_kafka, wait_until
from tests.integration.sink_records import read_topic
from tests.unit.avro_schemas import ORDER_V1 as ORDER

from pyspark_dynamic_kafka.cli import main
from pyspark_dynamic_kafka.spark_versions import ADMISSION_CONTROL, pyspark_version
from pyspark_dynamic_kafka.testing import (
    LocalSchemaRegistry,
    SparkConnectServer,
    spark_home,
    start_spark_connect,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pipeline"
FIRST_IDS = {"east": 1, "west": 100}  # the first schema id each registry issues
ORDERS = {"east": range(0, 300), "west": range(300, 600)}
PER_TRIGGER = 50  # offsets per micro-batch of the source flow: six micro-batches per run

pytestmark = [
    pytest.mark.pipeline,  # make test runs it; make test-pipeline alone: over 2 min of two runs
    requires_kafka("Kafka transactions: the pipeline's sink writes exactlyOnce"),
    pytest.mark.skipif(
        importlib.util.find_spec("pyspark.pipelines") is None,
        reason="Spark Declarative Pipelines (pyspark.pipelines, spark-pipelines) need PySpark "
        "4.1 or later",
    ),
    pytest.mark.skipif(
        pyspark_version() < ADMISSION_CONTROL,
        reason="the example splits a run into micro-batches with maxOffsetsPerTrigger, which "
        "needs PySpark 4.2 (admission control for Python sources)",
    ),
]

Order = tuple[str, int, str, int]  # cluster, id, item, schema id


def _write_metadata(
    path: Path, clusters: Mapping[str, Any], registries: Mapping[str, Any], orders: Sequence[str]
) -> None:
    """Stream ``orders`` on the clusters ``orders``; ``orders-json`` on both, written on east."""
    document = {
        "clusters": {
            name: {
                "bootstrap.servers": c.bootstrap_servers,
                "schema.registry.url": registries[name].url,
            }
            for name, c in clusters.items()
        },
        "streams": {
            "orders": [{"cluster": name, "topics": ["orders"]} for name in orders],
            "orders-json": [
                {"cluster": "east", "topics": ["orders-json"], "write": True},
                {"cluster": "west", "topics": ["orders-json"]},
            ],
        },
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(document))
    os.replace(tmp, path)


def _produce(clusters: Mapping[str, Any], registries: Mapping[str, Any], name: str) -> list[Order]:
    """Cluster ``name``'s orders, as confluent-kafka's AvroSerializer writes them with its
    registry (which registers the schema under ``orders-value``), over two partitions."""
    ids = ORDERS[name]
    serializer = AvroSerializer(
        SchemaRegistryClient({"url": registries[name].url}), json.dumps(ORDER)
    )
    context = SerializationContext("orders", MessageField.VALUE)
    records = [
        {
            "key": str(i),
            "value": serializer({"id": i, "item": f"item-{i}"}, context),
            "partition": i % 2,
        }
        for i in ids
    ]
    clusters[name].produce("orders", records)
    return [(name, i, f"item-{i}", FIRST_IDS[name]) for i in ids]


def _move(*argv: str) -> None:
    assert main(["move", *argv]) == 0


class Pipeline:
    """A copy of examples/pipeline/ whose spec names this test's storage and metadata, run on the
    Spark Connect server ``remote``."""

    def __init__(self, tmp_path: Path, metadata: Path, remote: str) -> None:
        self.remote = remote
        self.home = tmp_path / "pipeline"
        shutil.copytree(EXAMPLE, self.home)
        self.storage = tmp_path / "storage"
        spec_path = self.home / "spark-pipeline.yml"
        spec = yaml.safe_load(spec_path.read_text())
        spec["storage"] = f"file://{self.storage}"
        spec["configuration"] = {
            "dynamic_kafka.metadata": str(metadata),
            "dynamic_kafka.maxOffsetsPerTrigger": str(PER_TRIGGER),
            "dynamic_kafka.schemaTracking": str(tmp_path / "schemas" / "orders"),
        }
        spec_path.write_text(yaml.safe_dump(spec))
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self) -> tuple[subprocess.Popen[bytes], Path]:
        """``spark-pipelines run`` on the Spark Connect server; its output goes to a log."""
        log = self.home.parent / f"run{len(self.processes) + 1}.log"
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE")
        }
        env.update(PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
        command = [
            str(spark_home() / "bin" / "spark-pipelines"),
            *("--remote", self.remote),
            *("run", "--spec", str(self.home / "spark-pipeline.yml")),
        ]
        with log.open("wb") as out:
            process = subprocess.Popen(
                command, cwd=self.home, env=env, stdout=out, stderr=subprocess.STDOUT
            )
        self.processes.append(process)
        return process, log

    def kill(self) -> None:
        """End the runs still going (a test that failed during one)."""
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.wait()

    def _source_checkpoint(self) -> Path | None:
        """The source flow's checkpoint (``<storage>/_checkpoints/<table>/<flow>/<n>``)."""
        found = [p.parent for p in self.storage.glob("_checkpoints/**/orders/*/offsets")]
        return max(found, key=lambda p: int(p.name)) if found else None

    def committed(self) -> int:
        """Micro-batches the source flow has committed, over all runs."""
        checkpoint = self._source_checkpoint()
        commits = checkpoint / "commits" if checkpoint else None
        if commits is None or not commits.is_dir():
            return 0
        return sum(1 for p in commits.iterdir() if p.name.isdigit())

    def source_clusters(self) -> set[str]:
        """The clusters of the source's last offset (Spark's offset log)."""
        checkpoint = self._source_checkpoint()
        assert checkpoint is not None
        last = max(int(p.name) for p in (checkpoint / "offsets").iterdir() if p.name.isdigit())
        offset = json.loads((checkpoint / "offsets" / str(last)).read_text().splitlines()[-1])
        return set(offset["clusters"])


def _finish(process: subprocess.Popen[bytes], log: Path) -> None:
    """Wait for a run to end (it ends by itself); it must succeed."""
    code = process.wait(timeout=DEADLINE)
    tail = log.read_text(errors="replace")[-6000:]
    assert code == 0, f"spark-pipelines run exited with {code}; {log}:\n{tail}"


def _during(process: subprocess.Popen[bytes], log: Path, pipeline: Pipeline, after: int) -> None:
    """Wait until the run's source flow has committed a micro-batch beyond ``after``."""

    def progressed() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"the run ended first; {log}:\n{log.read_text()[-6000:]}")
        return pipeline.committed() > after

    wait_until(progressed, what=f"the source flow to commit micro-batch {after}")


def _sink_orders(clusters: Mapping[str, Any]) -> list[Order]:
    """Every record of the sink's stream, read_committed on each of its clusters."""
    found = []
    for name, cluster in clusters.items():
        for record in read_topic(cluster, "orders-json"):
            value = json.loads(record.value)
            assert record.key == str(value["id"])
            found.append((name, value["id"], value["item"], value["valueSchemaId"]))
            assert value["cluster"] == name  # run 1 wrote east's orders on east, run 2 west's
    return sorted(found)


@pytest.fixture
def registries() -> Iterator[dict[str, LocalSchemaRegistry]]:
    """East's and west's schema registries (the kit's, in this process)."""
    with (
        LocalSchemaRegistry(FIRST_IDS["east"]) as east,
        LocalSchemaRegistry(FIRST_IDS["west"]) as west,
    ):
        yield {"east": east, "west": west}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[SparkConnectServer]:
    """A Spark Connect server (local[2]) for both runs: its catalog, in memory, keeps the
    streaming table from one run to the next (``spark-pipelines run`` with its own local server
    forgets it and the next run fails with LOCATION_ALREADY_EXISTS)."""
    conf = {
        "spark.sql.shuffle.partitions": "2",
        "spark.ui.enabled": "false",
        "spark.sql.warehouse.dir": str(tmp_path / "warehouse"),
    }
    # Its Python workers import the package as this process does (a worktree's sources too).
    env = {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    with start_spark_connect(
        "local[2]", python=sys.executable, conf=conf, env=env, log_dir=tmp_path
    ) as running:
        yield running


@pytest.mark.timeout(1200)  # two runs of about a minute each on a quiet machine
def test_a_pipeline_reads_a_stream_moved_while_it_runs_and_writes_it_exactly_once(
    kafka_clusters: Any, registries: Mapping[str, Any], server: SparkConnectServer, tmp_path: Path
) -> None:
    clusters = kafka_clusters("east", "west")
    for cluster in clusters.values():
        cluster.create_topic("orders", partitions=2)
        cluster.create_topic("orders-json", partitions=2)
    meta = tmp_path / "streams.yaml"
    _write_metadata(meta, clusters, registries, ["east"])
    expected = _produce(clusters, registries, "east")
    pipeline = Pipeline(tmp_path, meta, server.url)
    try:
        # Run 1 reads east; meanwhile west joins the stream, with orders of its own.
        run, log = pipeline.start()
        _during(run, log, pipeline, 0)
        _write_metadata(meta, clusters, registries, ["east", "west"])
        later = _produce(clusters, registries, "west")
        _finish(run, log)
        # West entered the source's offset during run 1, unread: it came after the start.
        assert pipeline.source_clusters() == {"east", "west"}
        assert _sink_orders(clusters) == sorted(expected)

        # The sink's writes move to west; run 2 reads west, and east leaves the stream meanwhile.
        _move("orders-json", "--write", "--from", "east", "--to", "west", "--metadata", str(meta))
        first = pipeline.committed()
        run, log = pipeline.start()
        _during(run, log, pipeline, first)
        _move("orders", "--from", "east", "--to", "west", "--metadata", str(meta))
        _finish(run, log)
        assert pipeline.source_clusters() == {"west"}  # east left during run 2
        assert _sink_orders(clusters) == sorted(expected + later)
        # The first run recorded the reader schema the later one took (schemaTrackingLocation).
        tracked = json.loads((tmp_path / "schemas" / "orders" / "reader-schemas.json").read_text())
        assert tracked["columns"]["value"]["subject"] == "orders-value"
        assert json.loads(tracked["columns"]["value"]["schema"])["name"] == "Order"
    finally:
        pipeline.kill()
