"""Avro values from a schema registry per cluster (``valueFormat=avro``), on Apache Kafka with
real registries: Apicurio Registry through its Confluent-compatible API (``testing/apicurio.py``;
the testing kit's test double, ``testing/schema_registry.py``, where Java or Maven is missing),
records produced by confluent-kafka's real ``AvroSerializer``.

Two clusters, two registries: the same schema has id 1 on east and id W on west, and west
also has a v2 with an added field. Each record is decoded with the registry of the cluster it
was read from, to the reader schema's columns, on every reader; a stream migrated east -> west
with ``dynamic-kafka move`` decodes every record once; a restart decodes with the reader schema
its checkpoint recorded. Records that cannot be decoded fail the read naming where they are
(``FAILFAST``) or come with their bytes in ``_corrupt_value`` (``PERMISSIVE``).
"""

from __future__ import annotations

import json
import shutil
import struct
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from tests.engine_roles import READERS, skip_without_core
from tests.integration.helpers import source_options, wait_until, write_metadata
from tests.integration.metadata_server import run_cli
from tests.unit.avro_schemas import ORDER_V1 as V1
from tests.unit.avro_schemas import ORDER_V2 as V2

from pyspark_dynamic_kafka.testing.apicurio import ApicurioRegistry
from pyspark_dynamic_kafka.testing.schema_registry import LocalSchemaRegistry

pytestmark = pytest.mark.usefixtures("empty_consumer_pool")

SUBJECT = "orders-value"
CONTEXT = SerializationContext("orders", MessageField.VALUE)

Decoded = tuple[str, int, int, str, int | None, int | None]  # cluster, offset, id, item, qty, sid


#: The first id west's registry issues (east's: 1).
W = 5


@pytest.fixture
def registries() -> Iterator[dict[str, Any]]:
    """East's and west's registries: Apicurio Registry processes (a real registry), or the test
    double where Java or Maven is missing."""
    real = shutil.which("mvn") is not None and shutil.which("java") is not None
    kind: Any = ApicurioRegistry if real else LocalSchemaRegistry
    with kind(1) as east, kind(W) as west:
        yield {"east": east, "west": west}


def encoded(registry: Any, schema: Mapping[str, Any], ids: range) -> list[bytes]:
    """Values ``{"id": i, "item": f"item-{i}"}`` (``qty`` 5 where the schema has it), as
    confluent-kafka's serializer writes them with ``registry``."""
    serializer = AvroSerializer(SchemaRegistryClient({"url": registry.url}), json.dumps(schema))
    has_qty = len(schema["fields"]) > 2
    return [
        serializer({"id": i, "item": f"item-{i}", **({"qty": 5} if has_qty else {})}, CONTEXT)
        for i in ids
    ]


def avro_keys(registry: Any, ids: range) -> list[bytes]:
    """Keys ``f"k{i}"`` as Avro strings, as confluent-kafka's serializer writes them."""
    client = SchemaRegistryClient({"url": registry.url})
    serializer = AvroSerializer(client, '"string"')
    context = SerializationContext("orders", MessageField.KEY)
    return [serializer(f"k{i}", context) for i in ids]


def put(cluster: Any, payloads: Sequence[bytes], keys: Sequence[bytes] | None = None) -> list[int]:
    """Produce ``payloads`` (with ``keys``) to partition 0, in order; their offsets."""
    keyed = keys or [None] * len(payloads)
    records = [{"key": k, "value": p, "partition": 0} for k, p in zip(keyed, payloads, strict=True)]
    return [offset for _, offset in cluster.produce("orders", records)]


def setup(kafka_clusters: Any, registries: Mapping[str, Any]) -> dict[str, Any]:
    clusters = kafka_clusters("east", "west")
    for cluster in clusters.values():
        cluster.create_topic("orders", partitions=1)
    return dict(clusters)


def orders_metadata(
    tmp_path: Path,
    clusters: Mapping[str, Any],
    registries: Mapping[str, Any],
    on: Sequence[str] = ("east",),
) -> Path:
    """The metadata file of stream ``orders`` (topic ``orders`` on the clusters ``on``), each
    cluster naming its registry."""
    meta = tmp_path / "streams.yaml"
    routes = {"orders": [(name, ["orders"]) for name in on]}
    entries = {name: {"schema.registry.url": r.url} for name, r in registries.items()}
    write_metadata(meta, clusters, routes, entries)
    return meta


def avro_read(meta: Path, **options: str) -> dict[str, str]:
    """The options of a read of stream ``orders`` through ``meta``, its values Avro."""
    return source_options(meta, streamIds="orders", valueFormat="avro", **options)


def decoded_rows(df: Any) -> list[Decoded]:
    qty = "value.qty" if "qty" in df.schema["value"].dataType.names else "cast(null as int)"
    rows = df.selectExpr(
        "cluster", "offset", "value.id", "value.item", f"{qty} as qty", "valueSchemaId"
    ).collect()
    return sorted(tuple(r) for r in rows)


@pytest.mark.parametrize("engine", READERS)
def test_a_batch_read_decodes_each_record_with_its_clusters_registry(
    engine: str, spark: Any, kafka_clusters: Any, registries: Any, tmp_path: Path
) -> None:
    skip_without_core(engine)
    clusters = setup(kafka_clusters, registries)
    east, west = registries["east"], registries["west"]
    east_values = encoded(east, V1, range(0, 4))
    west_values = encoded(west, V1, range(4, 7)) + encoded(west, V2, range(7, 9))
    # Keys too (registered after the values: the key schema is id 2 on east, W + 2 on west).
    on_east = put(clusters["east"], east_values, avro_keys(east, range(0, 4)))
    on_west = put(clusters["west"], west_values, avro_keys(west, range(4, 9)))
    meta = orders_metadata(tmp_path, clusters, registries, on=("east", "west"))
    options = avro_read(meta, reader=engine)

    # The subject's latest version on the first registry that holds it (east: v1) is the reader
    # schema: west's v2 records are resolved to it (qty dropped).
    df = spark.read.format("dynamic_kafka").options(**options, valueSubject=SUBJECT).load()
    assert df.schema["value"].dataType.simpleString() == "struct<id:bigint,item:string>"
    expected = [
        ("east", o, i, f"item-{i}", None, 1) for o, i in zip(on_east, range(4), strict=True)
    ]
    ids = [W] * 3 + [W + 1] * 2
    expected += [
        ("west", o, i, f"item-{i}", None, s)
        for o, i, s in zip(on_west, range(4, 9), ids, strict=True)
    ]
    assert decoded_rows(df) == sorted(expected)

    # A reader schema given whole with the added field: v1 records take its default.
    df = spark.read.format("dynamic_kafka").options(**options, valueSchema=json.dumps(V2)).load()
    qty = [1] * 4 + [1] * 3 + [5] * 2
    assert decoded_rows(df) == sorted(
        (c, o, i, item, q, s)
        for (c, o, i, item, _, s), q in zip(sorted(expected), qty, strict=True)
    )

    # Keys decoded alike, each with its own cluster's registry; values stay bytes.
    keyed = {**options, "keyFormat": "avro", "keySchema": '"string"', "valueFormat": "bytes"}
    df = spark.read.format("dynamic_kafka").options(**keyed).load()
    assert df.schema["key"].dataType.simpleString() == "string"
    rows = sorted(tuple(r) for r in df.select("cluster", "offset", "key", "keySchemaId").collect())
    assert rows == sorted(
        [("east", o, f"k{i}", 2) for o, i in zip(on_east, range(4), strict=True)]
        + [("west", o, f"k{i}", W + 2) for o, i in zip(on_west, range(4, 9), strict=True)]
    )


def _stream(spark: Any, options: Mapping[str, str], out: Path, **trigger: Any) -> Any:
    df = spark.readStream.format("dynamic_kafka").options(**options).load()
    return (
        df.selectExpr("cluster", "offset", "value.id as id", "value.item as item", "valueSchemaId")
        .writeStream.format("parquet")
        .option("path", str(out / "out"))
        .option("checkpointLocation", str(out / "ckpt"))
        .trigger(**(trigger or {"processingTime": "300 milliseconds"}))
        .start()
    )


def _written(spark: Any, out: Path) -> list[tuple[Any, ...]]:
    if not (out / "out" / "_spark_metadata").exists():
        return []
    schema = "cluster string, offset long, id long, item string, valueSchemaId int"
    return sorted(tuple(r) for r in spark.read.schema(schema).parquet(str(out / "out")).collect())


def test_a_stream_migrated_east_to_west_decodes_every_record_once_and_restarts_as_recorded(
    spark: Any, kafka_clusters: Any, registries: Any, tmp_path: Path
) -> None:
    clusters = setup(kafka_clusters, registries)
    east, west = registries["east"], registries["west"]
    meta = orders_metadata(tmp_path, clusters, registries)
    options = avro_read(
        meta,
        valueSubject=SUBJECT,
        startingOffsets="earliest",
        metadataDiscoveryIntervalMs="0",
        schemaTrackingLocation=str(tmp_path / "schemas"),
    )
    east.register(SUBJECT, json.dumps(V1))
    west.register(SUBJECT, json.dumps(V1))
    expected = [
        ("east", o, i, f"item-{i}", 1)
        for o, i in zip(
            put(clusters["east"], encoded(east, V1, range(0, 5))), range(5), strict=True
        )
    ]
    query = _stream(spark, options, tmp_path)
    try:
        wait_until(lambda: len(_written(spark, tmp_path)) >= 5, what="east's records")
        move = ["move", "orders", "--from", "east", "--to", "west", "--metadata", str(meta)]
        moved = run_cli(move)
        assert moved.returncode == 0, moved.stderr
        # v2 (an added field) exists on west only; its records carry west's id for it.
        later = encoded(west, V1, range(5, 8)) + encoded(west, V2, range(8, 10))
        sids = [W] * 3 + [W + 1] * 2
        offsets = put(clusters["west"], later)
        expected += [
            ("west", o, i, f"item-{i}", s)
            for o, i, s in zip(offsets, range(5, 10), sids, strict=True)
        ]
        wait_until(lambda: len(_written(spark, tmp_path)) >= 10, what="west's records")
        query.processAllAvailable()
    finally:
        query.stop()
    assert _written(spark, tmp_path) == sorted(expected)

    # Restarted now without schemaTrackingLocation, the subject's latest version (west's v2)
    # gives other columns than the checkpoint's v1: the restart says which version to pin, and
    # decodes nothing else.
    offsets = put(clusters["west"], encoded(west, V2, range(10, 12)))
    untracked = {k: v for k, v in options.items() if k != "schemaTrackingLocation"}
    restarted = _stream(spark, untracked, tmp_path, availableNow=True)
    with pytest.raises(Exception, match="valueSubjectVersion=1 to decode as before"):
        restarted.awaitTermination(300)
    assert _written(spark, tmp_path) == sorted(expected)

    # With the option, load() takes v1's columns from the first start's record: no pin needed.
    tracked = _stream(spark, options, tmp_path, availableNow=True)
    assert tracked.awaitTermination(300) is not False and tracked.exception() is None
    expected += [
        ("west", o, i, f"item-{i}", W + 1) for o, i in zip(offsets, range(10, 12), strict=True)
    ]
    assert _written(spark, tmp_path) == sorted(expected)

    offsets = put(clusters["west"], encoded(west, V2, range(12, 14)))
    pinned = _stream(spark, {**untracked, "valueSubjectVersion": "1"}, tmp_path, availableNow=True)
    assert pinned.awaitTermination(300) is not False and pinned.exception() is None
    expected += [
        ("west", o, i, f"item-{i}", W + 1) for o, i in zip(offsets, range(12, 14), strict=True)
    ]
    assert _written(spark, tmp_path) == sorted(expected)


def _framed(schema_id: int, body: bytes) -> bytes:
    return b"\x00" + struct.pack(">I", schema_id) + body


def test_records_that_cannot_be_decoded_fail_the_read_or_come_with_their_bytes(
    spark: Any, kafka_clusters: Any, registries: Any, tmp_path: Path
) -> None:
    clusters = setup(kafka_clusters, registries)
    east = registries["east"]
    good = encoded(east, V1, range(0, 2))
    bad = {
        "an unknown schema id": _framed(999, good[0][5:]),
        "no magic byte": b"plain text",
        "truncated Avro": good[1][:-3],
    }
    offsets = put(clusters["east"], [good[0], *bad.values(), good[1]])
    meta = orders_metadata(tmp_path, clusters, registries)
    options = avro_read(meta, valueSchema=json.dumps(V1))
    reasons = {
        "an unknown schema id": "schema id 999",
        "no magic byte": "not a magic byte",
        "truncated Avro": "truncated or damaged",
    }
    for what, offset in zip(bad, offsets[1:4], strict=True):
        one = {
            **options,
            "startingOffsets": json.dumps({"east": {"orders": {"0": offset}}}),
            "endingOffsets": json.dumps({"east": {"orders": {"0": offset + 1}}}),
        }
        with pytest.raises(Exception) as failed:
            spark.read.format("dynamic_kafka").options(**one).load().collect()
        message = str(failed.value)
        assert f"east/orders/0 at offset {offset}" in message, what
        assert reasons[what] in message, what
        if what == "an unknown schema id":
            assert east.url in message  # the registry that was asked
        assert "valueMode=PERMISSIVE" in message or "schema id 999" in message

    df = spark.read.format("dynamic_kafka").options(**options, valueMode="PERMISSIVE").load()
    rows = sorted(
        (r.offset, r.id, r.valueSchemaId, r._corrupt_value)
        for r in df.selectExpr("offset", "value.id", "valueSchemaId", "_corrupt_value").collect()
    )
    assert rows == [
        (offsets[0], 0, 1, None),
        *[(o, None, None, bytearray(p)) for o, p in zip(offsets[1:4], bad.values(), strict=True)],
        (offsets[4], 1, 1, None),
    ]

    # The registry down (a schema id no worker fetched before): FAILFAST fails the read naming
    # the record and the registry, long before the poll timeout.
    v2 = put(clusters["east"], encoded(east, V2, range(2, 3)))[0]
    only_v2 = {
        **options,
        "startingOffsets": json.dumps({"east": {"orders": {"0": v2}}}),
        "kafkaConsumer.pollTimeoutMs": "60000",
    }
    with east.down(), pytest.raises(Exception) as down:
        spark.read.format("dynamic_kafka").options(**only_v2).load().collect()
    message = str(down.value)
    assert f"east/orders/0 at offset {v2}" in message and east.url in message, message[-3000:]
    assert "schema id 2" in message, message[-3000:]


def test_a_permissive_stream_keeps_going_while_the_registry_is_down_and_picks_up_its_return(
    spark: Any, kafka_clusters: Any, registries: Any, tmp_path: Path
) -> None:
    clusters = setup(kafka_clusters, registries)
    east = registries["east"]
    meta = orders_metadata(tmp_path, clusters, registries)
    options = avro_read(
        meta,
        valueSchema=json.dumps(V1),
        valueMode="PERMISSIVE",
        startingOffsets="earliest",
    )
    first = put(clusters["east"], encoded(east, V1, range(0, 2)))
    during = encoded(east, V2, range(2, 4))  # v2's id: never fetched before the outage
    after = encoded(east, V2, range(4, 6))
    df = spark.readStream.format("dynamic_kafka").options(**options).load()
    table = "avro_outage"
    query = (
        df.selectExpr("offset", "value.id as id", "valueSchemaId", "_corrupt_value")
        .writeStream.format("memory")
        .queryName(table)
        .trigger(processingTime="300 milliseconds")
        .start()
    )

    def rows() -> list[tuple[Any, ...]]:
        return sorted(tuple(r) for r in spark.sql(f"select * from {table}").collect())

    try:
        wait_until(lambda: len(rows()) >= 2, what="the first records")
        with east.down():
            down = put(clusters["east"], during)
            wait_until(lambda: len(rows()) >= 4, what="the records read while the registry is down")
        back = put(clusters["east"], after)
        wait_until(lambda: len(rows()) >= 6, what="the records after the registry's return")
        assert query.isActive
    finally:
        query.stop()
    assert rows() == [
        (first[0], 0, 1, None),
        (first[1], 1, 1, None),
        *[(o, None, None, bytearray(p)) for o, p in zip(down, during, strict=True)],
        (back[0], 4, 2, None),
        (back[1], 5, 2, None),
    ]
