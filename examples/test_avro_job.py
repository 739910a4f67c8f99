"""A pytest test of an Avro read, as a project using this package writes one (docs/avro.md,
"Avro from a schema registry per cluster", which shows it from the marker below): a throw-away
Apache Kafka cluster, the testing kit's schema registry, orders written by confluent-kafka's
AvroSerializer, read back with the reader schema named by its subject.

Run it: ``.venv/bin/python -m pytest examples/test_avro_job.py`` (needs Java for Apache Kafka).
The test suite runs it (tests/integration/test_newcomer.py) and checks that docs/avro.md shows it.
"""

# --- docs/avro.md: Avro test ---
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from pyspark_dynamic_kafka.testing import LocalSchemaRegistry, local_spark_session, start_clusters

ORDER = {
    "type": "record",
    "name": "Order",
    "fields": [{"name": "id", "type": "long"}, {"name": "amount", "type": "double"}],
}


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = local_spark_session("avro-tests")
    yield session
    session.stop()


def test_orders_read_back_with_their_registrys_schema(spark: Any, tmp_path: Path) -> None:
    with start_clusters(["east"], "kafka") as clusters, LocalSchemaRegistry() as registry:
        east = clusters["east"]
        east.create_topic("orders", partitions=1)
        serialize = AvroSerializer(SchemaRegistryClient({"url": registry.url}), json.dumps(ORDER))
        context = SerializationContext("orders", MessageField.VALUE)  # registers orders-value
        orders = [{"id": i, "amount": i + 0.5} for i in range(3)]
        east.produce("orders", [(str(o["id"]), serialize(o, context)) for o in orders])

        metadata = tmp_path / "streams.json"
        metadata.write_text(
            json.dumps(
                {
                    "clusters": {
                        "east": {
                            "bootstrap.servers": east.bootstrap_servers,
                            "schema.registry.url": registry.url,
                        }
                    },
                    "streams": {"orders": [{"cluster": "east", "topics": ["orders"]}]},
                }
            )
        )
        df = (
            spark.read.format("dynamic_kafka")
            .option("metadataService", "file")
            .option("metadataService.path", str(metadata))
            .option("streamIds", "orders")
            .option("valueFormat", "avro")
            .option("valueSubject", "orders-value")  # its latest version is the reader schema
            .load()
        )
        rows = df.select("value.id", "value.amount", "valueSchemaId").collect()
        assert sorted(tuple(r) for r in rows) == [(0, 0.5, 1), (1, 1.5, 1), (2, 2.5, 1)]
