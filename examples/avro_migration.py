"""Avro from a schema registry per cluster, through a migration (docs/avro.md, "Avro from a schema
registry per cluster"): orders in Confluent's Avro wire format on east, whose registry gave the
schema one id, then on west, whose registry gave the same schema another id and also holds a v2 with
an added field; the query decodes each record with its own cluster's registry into the same columns
while the stream moves from east to west.

Run it with the project's Python: ``.venv/bin/python examples/avro_migration.py`` (Apache Kafka
clusters; ``tansu`` as argument: the embedded Tansu brokers instead). The registries are the
testing kit's (a test double of the Confluent REST API); with your own, write their URLs into
the metadata instead. The test suite runs it (tests/integration/test_newcomer.py).
"""

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from pyspark_dynamic_kafka.testing import LocalSchemaRegistry, local_spark_session, start_clusters

broker = sys.argv[1] if len(sys.argv) > 1 else "kafka"  # or "tansu": embedded, no broker JVM
work = Path(tempfile.mkdtemp(prefix="avro-migration-"))
V1 = {
    "type": "record",
    "name": "Order",
    "fields": [{"name": "id", "type": "long"}, {"name": "amount", "type": "double"}],
}
V2 = {**V1, "fields": [*V1["fields"], {"name": "currency", "type": "string", "default": "EUR"}]}


def avro_orders(registry_url: str, schema: dict, ids: range) -> list[tuple[str, bytes]]:
    """Orders as confluent-kafka's AvroSerializer writes them for a registry (it registers the
    schema under orders-value there)."""
    serializer = AvroSerializer(SchemaRegistryClient({"url": registry_url}), json.dumps(schema))
    context = SerializationContext("orders", MessageField.VALUE)
    extra = {"currency": "USD"} if schema is V2 else {}
    return [(f"k{i}", serializer({"id": i, "amount": i + 0.5, **extra}, context)) for i in ids]


with (
    start_clusters(["east", "west"], broker) as clusters,
    LocalSchemaRegistry(first_id=1) as east_registry,
    LocalSchemaRegistry(first_id=1000) as west_registry,
):
    east, west = clusters["east"], clusters["west"]
    for cluster in (east, west):
        cluster.create_topic("orders", partitions=2)
    east.produce("orders", avro_orders(east_registry.url, V1, range(100)))

    # Each cluster names its own registry in its entry: schema ids are local to a registry.
    metadata = work / "streams.yaml"
    metadata.write_text(
        f"clusters:\n"
        f"  east:\n    bootstrap.servers: {east.bootstrap_servers}\n"
        f"    schema.registry.url: {east_registry.url}\n"
        f"  west:\n    bootstrap.servers: {west.bootstrap_servers}\n"
        f"    schema.registry.url: {west_registry.url}\n"
        f"streams:\n"
        f"  orders:\n"
        f"    - cluster: east\n"
        f"      topics: [orders]\n"
    )

    spark = local_spark_session("avro-migration")
    orders = (
        spark.readStream.format("dynamic_kafka")
        .option("metadataService", "file")
        .option("metadataService.path", str(metadata))
        .option("streamIds", "orders")
        .option("valueFormat", "avro")
        .option("valueSchema", json.dumps(V1))  # the reader schema: these are the columns
        .option("startingOffsets", "earliest")
        .option("metadataDiscoveryIntervalMs", "1000")
        .load()
        .select("cluster", "value.id", "value.amount", "valueSchemaId")
    )
    # The decoded rows go to an in-memory table named "orders" (examples/first_job.py: Parquet).
    query = orders.writeStream.format("memory").queryName("orders").start()

    def wait_for(count: int) -> None:
        """Wait until the table holds ``count`` orders (at most 5 minutes)."""
        deadline = time.monotonic() + 300
        while spark.table("orders").count() < count:
            if not query.isActive or time.monotonic() > deadline:
                raise RuntimeError(f"no {count} orders yet: {query.exception()}")
            time.sleep(0.5)

    wait_for(100)

    # The producers switch to west (v1, then v2 with a currency); the stream moves there.
    west.produce("orders", avro_orders(west_registry.url, V1, range(100, 130)))
    west.produce("orders", avro_orders(west_registry.url, V2, range(130, 150)))
    move = f"move orders --from east --to west --metadata {metadata}"
    subprocess.run([sys.executable, "-m", "pyspark_dynamic_kafka", *move.split()], check=True)
    wait_for(150)

    query.stop()
    rows = spark.table("orders").collect()
    ids = sorted({(r.cluster, r.valueSchemaId) for r in rows})
    exact = all(r.amount == r.id + 0.5 for r in rows)
    print(
        f"avro migration: {len(rows)} orders, {len({r.id for r in rows})} distinct ids, "
        f"(cluster, schema id) {ids}, every amount decoded: {exact}"
    )
    spark.stop()
