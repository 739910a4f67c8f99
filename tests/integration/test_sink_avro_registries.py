"""Issue 35 on the sink, Apache Kafka and real Spark: a stream written exactlyOnce as Avro
(``valueFormat=avro``, ``keyFormat=avro``) routed to east, flipped by ``dynamic-kafka move
--write`` to west, each cluster with its own schema registry (the testing kit's, a test double
of Confluent's REST API, ids of its own). Each cluster's records, read with read_committed and
confluent-kafka's real ``AvroDeserializer`` against THAT cluster's registry, are exactly the rows
written there, with the ids that registry issued; the source (``valueFormat=avro``) reads both
clusters back exactly. A write routed to a cluster without a registry,
or whose registry is down, fails naming the cluster (and the registry's URL), no secret."""

from __future__ import annotations

import datetime
import functools
import json
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from tests.engine_roles import WRITERS, skip_without_core
from tests.integration.helpers import EstateFactory, requires_kafka, wait_until
from tests.integration.sink_records import (
    drop_file,
    read_messages,
    sink_options,
    write_routes,
)
from tests.unit.avro_schemas import Logical, record_schema

from pyspark_dynamic_kafka.cli import main
from pyspark_dynamic_kafka.testing.apicurio import ApicurioRegistry
from pyspark_dynamic_kafka.testing.schema_registry import LocalSchemaRegistry

pytestmark = requires_kafka("Kafka transactions (Tansu's are not what this test checks)")

SECRET = "AVRO-SINK-SENTINEL-5be0"
ORDER = record_schema(
    "Order",
    ("id", "long"),
    ("item", "string"),
    ("at", Logical.TIMESTAMP_MICROS),
    ("note", ["null", "string"]),
    namespace="shop",
)
VALUE_SQL = (
    "named_struct('id', CAST(value AS BIGINT), 'item', concat('item-', value), "
    "'at', timestamp_micros(CAST(value AS BIGINT) * 1000003), "
    "'note', IF(CAST(value AS BIGINT) % 2 = 0, NULL, concat('odd-', value))) AS value"
)


def _expected(i: int) -> dict[str, Any]:
    at = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return {
        "id": i,
        "item": f"item-{i}",
        "at": at + datetime.timedelta(microseconds=i * 1000003),
        "note": None if i % 2 == 0 else f"odd-{i}",
    }


def _registries(east: Any, west: LocalSchemaRegistry) -> dict[str, Any]:
    return {
        "east": {"schema.registry.url": east.url},
        "west": {
            "schema.registry.url": west.url,
            "schema.registry.basic.auth.user.info": f"writer:{SECRET}",
        },
    }


def _read(cluster: Any, registry: Any, user_info: str | None) -> list[Any]:
    """(key, value, key id, value id) of every committed record, decoded by confluent-kafka's
    deserializer against ``registry``."""
    config = {"url": registry.url}
    if user_info:
        config["basic.auth.user.info"] = user_info
    client = SchemaRegistryClient(config)
    values, keys = AvroDeserializer(client), AvroDeserializer(client)
    found = []
    for message in read_messages(cluster, "orders"):
        key, value = message.key(), message.value()
        found.append(
            (
                keys(key, SerializationContext("orders", MessageField.KEY)),
                values(value, SerializationContext("orders", MessageField.VALUE)),
                int.from_bytes(key[1:5], "big"),
                int.from_bytes(value[1:5], "big"),
            )
        )
    return found


@pytest.mark.parametrize("writer", WRITERS)
def test_an_avro_stream_follows_a_move_with_each_registrys_ids(
    writer: str, spark: Any, estate: EstateFactory, tmp_path: Path
) -> None:
    skip_without_core(writer)
    setup = estate("east", "west", partitions=2)
    incoming, staging = tmp_path / "in", tmp_path / "staging"
    incoming.mkdir()
    staging.mkdir()

    drop = functools.partial(drop_file, incoming, staging)

    def batches(count: int) -> bool:
        """At least ``count`` micro-batches with rows, or the query failed (then say why)."""
        if query.exception() is not None:
            raise AssertionError(f"the query failed: {query.exception()}")
        return sum(1 for p in query.recentProgress if p["numInputRows"] > 0) >= count

    # East's registry is a real one (Apicurio Registry, testing/apicurio.py); west's the test
    # double, which asks for HTTP basic authentication (Apicurio 2.6 has only OIDC).
    with ApicurioRegistry(1) as east, LocalSchemaRegistry(500, f"writer:{SECRET}") as west:
        extra = _registries(east, west)
        routes = [("east", ["orders"], True), ("west", ["orders"], False)]
        write_routes(setup.meta, setup.clusters, routes, extra=extra)
        options = sink_options(
            setup.meta,
            writer=writer,
            deliveryGuarantee="exactlyOnce",
            sinkId=f"avro-{writer}",
            valueFormat="avro",
            valueSchema=json.dumps(ORDER),
            keyFormat="avro",
            keySchema='"long"',
        )
        query = (
            spark.readStream.format("text")
            .option("maxFilesPerTrigger", "1")
            .load(str(incoming))
            .selectExpr("CAST(value AS BIGINT) AS key", VALUE_SQL)
            .repartition(2)
            .writeStream.format("dynamic_kafka")
            .options(**options)
            .option("checkpointLocation", str(tmp_path / "chk"))
            .trigger(processingTime="500 milliseconds")
            .start()
        )
        try:
            drop("a.txt", range(0, 30))
            wait_until(lambda: batches(1), what="the first micro-batch")
            argv = ["move", "orders", "--write", "--from", "east", "--to", "west"]
            assert main([*argv, "--metadata", str(setup.meta)]) == 0
            assert "schema.registry.url" in setup.meta.read_text()  # move kept the entries
            drop("b.txt", range(30, 70))
            wait_until(lambda: batches(2), what="the second micro-batch")
        finally:
            query.stop()
        assert query.exception() is None
        on_east = _read(setup["east"], east, None)
        on_west = _read(setup["west"], west, f"writer:{SECRET}")
        # Each registry issued its own ids: value first, then key, when the batch was planned.
        assert json.loads(east.answer("GET", "/schemas/ids/1", None)["schema"]) == ORDER
        assert json.loads(west.answer("GET", "/schemas/ids/500", None)["schema"]) == ORDER
        assert west.answer("GET", "/subjects/orders-key/versions/latest", None)["id"] == 501
        # The source reads both clusters back with valueFormat=avro: each record decoded with
        # its own cluster's registry, exactly the rows written.
        back = (
            spark.read.format("dynamic_kafka")
            .options(
                **setup.options(
                    valueFormat="avro",
                    valueSchema=json.dumps(ORDER),
                    keyFormat="avro",
                    keySchema='"long"',
                    **{"kafka.isolation.level": "read_committed"},
                )
            )
            .load()
            .selectExpr(
                "cluster",
                "key",
                "value.id",
                "value.item",
                "unix_micros(value.at)",
                "value.note",
                "keySchemaId",
                "valueSchemaId",
            )
            .collect()
        )

    assert sorted(r[0] for r in on_east) == list(range(30))
    assert sorted(r[0] for r in on_west) == list(range(30, 70))
    for key, value, key_id, value_id in on_east:
        assert (value, key_id, value_id) == (_expected(key), 2, 1)
    for key, value, key_id, value_id in on_west:
        assert (value, key_id, value_id) == (_expected(key), 501, 500)
    read_back = sorted(tuple(r) for r in back)
    assert read_back == sorted(
        (
            "east" if i < 30 else "west",
            i,
            i,
            f"item-{i}",
            i * 1000003,
            None if i % 2 == 0 else f"odd-{i}",
            2 if i < 30 else 501,
            1 if i < 30 else 500,
        )
        for i in range(70)
    )


def test_an_avro_write_without_a_registry_or_with_it_down_fails_naming_the_cluster(
    spark: Any, estate: EstateFactory
) -> None:
    setup = estate("east", "west")
    df = (
        spark.range(4)
        .selectExpr("id AS value_id")
        .selectExpr(
            "named_struct('id', value_id, 'item', 'x', 'at', timestamp_micros(value_id), "
            "'note', CAST(NULL AS STRING)) AS value"
        )
    )
    options = sink_options(setup.meta, valueFormat="avro", valueSchema=json.dumps(ORDER))
    routes = [("east", ["orders"], True), ("west", ["orders"], False)]
    with LocalSchemaRegistry(1, f"writer:{SECRET}") as registry:
        extra = {"west": {"schema.registry.url": registry.url}}  # east, the route, names none
        write_routes(setup.meta, setup.clusters, routes, extra=extra)
        with pytest.raises(Exception) as missing:
            df.write.format("dynamic_kafka").options(**options).mode("append").save()
        assert (
            "cluster 'east', where stream 'orders' is routed, names no schema registry in its "
            "metadata entry (its ids are needed to write there): add 'schema.registry.url'"
        ) in str(missing.value)

        east = {
            "schema.registry.url": registry.url,
            "schema.registry.basic.auth.user.info": f"writer:{SECRET}",
        }
        write_routes(setup.meta, setup.clusters, routes, extra={"east": east})
        with registry.down(), pytest.raises(Exception) as down:
            df.write.format("dynamic_kafka").options(**options).mode("append").save()
        said = str(down.value)
        assert f"Cluster 'east': schema registry {registry.url} could not be reached" in said
        assert SECRET not in said
        # Back: the same write goes through, with the registry's id.
        df.write.format("dynamic_kafka").options(**options).mode("append").save()
        written = _read_values(setup["east"], registry)
    assert sorted(v["id"] for v in written) == [0, 1, 2, 3]
    assert read_messages(setup["west"], "orders") == []


def _read_values(cluster: Any, registry: LocalSchemaRegistry) -> list[Any]:
    client = SchemaRegistryClient({"url": registry.url, "basic.auth.user.info": f"writer:{SECRET}"})
    values = AvroDeserializer(client)
    context = SerializationContext("orders", MessageField.VALUE)
    found = []
    for message in read_messages(cluster, "orders"):
        assert message.value()[:5] == b"\x00\x00\x00\x00\x01"
        found.append(values(message.value(), context))
    return found
