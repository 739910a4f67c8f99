"""A cluster's schema registry in the metadata (``schema.registry.*`` beside its client
properties) on Apache Kafka: a stream, a batch read and a write of the ``dynamic_kafka`` sink
read and write the exact records on every reader and writer, because the registry's keys never
reach a Kafka client (librdkafka refuses a property it does not know: "No such configuration
property"), and the registry's password is in no checkpoint file and no progress report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.engine_roles import READERS, skip_without_core
from tests.integration.faults import leaks
from tests.integration.helpers import numbered, produce, source_options
from tests.integration.queries import (
    batch_read,
    keyed_rows,
    parquet_query,
    parquet_values,
    read_paths,
    wait_parquet,
)
from tests.integration.sink_records import read_topic, sink_options

pytestmark = pytest.mark.usefixtures("empty_consumer_pool")

SECRET = "REGISTRY-SENTINEL-7d1e"


@pytest.mark.parametrize("engine", READERS)
def test_registry_keys_are_the_entrys_and_never_a_clients(
    engine: str, spark: Any, kafka_clusters: Any, tmp_path: Path
) -> None:
    skip_without_core(engine)
    clusters = kafka_clusters("east", "west")
    for cluster in clusters.values():
        cluster.create_topic("orders", partitions=2)
    registries = {
        "east": {
            "schema.registry.url": "https://east-registry.invalid:8081",
            "schema.registry.basic.auth.user.info": f"reader:{SECRET}",
            "schema.registry.ssl.ca.location": str(tmp_path / "ca.pem"),
        },
        "west": {
            "schema.registry.url": "http://west-registry.invalid:8081",
            "schema.registry.bearer.auth.token": SECRET,
        },
    }
    meta = tmp_path / "streams.yaml"
    document = {
        "clusters": {
            name: {**c.connection_properties(), **registries[name]} for name, c in clusters.items()
        },
        "streams": {
            "orders": [
                {"cluster": "east", "topics": ["orders"]},
                {"cluster": "west", "topics": ["orders"], "write": True},
            ]
        },
    }
    meta.write_text(yaml.safe_dump(document))
    expected = produce(clusters["east"], "orders", numbered("e", 8), 2)

    # The sink writes through west's entry, registry keys and all.
    written = numbered("w", 6)
    df = spark.createDataFrame([(v,) for v in written], "value string")
    df.write.format("dynamic_kafka").options(**sink_options(meta, writer=engine)).mode(
        "append"
    ).save()
    assert sorted(r.value for r in read_topic(clusters["west"], "orders")) == written
    expected += written

    options = source_options(meta, streamIds="orders", reader=engine)
    rows = keyed_rows(batch_read(spark, options))
    assert sorted(value for *_, value in rows) == sorted(expected)

    streamed = tmp_path / "stream"
    query = parquet_query(spark, options, streamed)
    try:
        more = produce(clusters["west"], "orders", numbered("x", 4), 2)
        wait_parquet(spark, streamed / "out", len(expected + more))
        query.processAllAvailable()
        progress = [json.loads(p.json) for p in query.recentProgress]
    finally:
        query.stop()
    assert sorted(parquet_values(spark, streamed / "out")) == sorted(expected + more)
    path = "python" if engine == "python" else "direct"
    assert read_paths(progress) == {"east": {path}, "west": {path}}
    files = [p for p in (streamed / "ckpt").rglob("*") if p.is_file()]
    assert any("offsets" in p.parts for p in files)
    assert leaks(SECRET, json.dumps(progress), files) == []
