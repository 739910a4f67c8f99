"""``valueFormat=avro`` / ``keyFormat=avro`` in the sink, short of a broker: the options and
their errors, the driver resolving each topic's schema id on the registry of the routed cluster
(two of the testing kit's registries, a test double of Confluent's REST API, with ids of their
own), the ids cached and following a flip of the route, the registry's failures named without a
secret, the column checked against the schema's Spark type, and the executor's columns encoded
per topic and read back by the reader's decoder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StringType, StructType
from tests.unit.avro_schemas import ORDER_V1, ORDER_V2

from pyspark_dynamic_kafka.avro.decode import Decoder
from pyspark_dynamic_kafka.avro.encode import AvroEncodeError
from pyspark_dynamic_kafka.avro.framing import SchemaRef
from pyspark_dynamic_kafka.errors import OptionsError, SchemaRegistryError
from pyspark_dynamic_kafka.metadata.memory import InMemoryMetadataService
from pyspark_dynamic_kafka.metadata.model import ClusterMetadata, KafkaStream
from pyspark_dynamic_kafka.registry.client import RegistryClient
from pyspark_dynamic_kafka.registry.endpoint import RegistryEndpoint
from pyspark_dynamic_kafka.sink.config.options import parse_sink_options
from pyspark_dynamic_kafka.sink.driver.plan import plan_write
from pyspark_dynamic_kafka.sink.executor.avro_columns import encode_columns
from pyspark_dynamic_kafka.sink.executor.task import WriteTask
from pyspark_dynamic_kafka.sink.writer import check_avro_columns, check_columns
from pyspark_dynamic_kafka.testing.schema_registry import LocalSchemaRegistry

BASE = {"metadataService": "file", "metadataService.path": "/m.yaml", "streamId": "orders"}
ORDER = ORDER_V1
SCHEMA = json.dumps(ORDER)
PASSWORD = "SINK-REGISTRY-SENTINEL-93c1"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"valueFormat": "avro"},
            "Option valueFormat=avro needs 'valueSchema' (the writer schema, Avro JSON, "
            "registered under 'valueSubject', default '<topic>-value'",
        ),
        ({"keyformat": "json"}, "Invalid value 'json' for option 'keyFormat'"),
        (
            {"valueSchema": SCHEMA},
            "Option 'valueSchema' is for valueFormat=avro, and valueFormat is bytes",
        ),
        (
            {"keyFormat": "avro", "keySubject": "k", "keySchema": SCHEMA, "keySubjectVersion": "2"},
            "Option 'keySubjectVersion'=2 looks a registered schema up, and 'keySchema' gives",
        ),
        (
            {"valueFormat": "avro", "valueSchema": SCHEMA, "valueSubjectVersion": "latest"},
            "Option 'valueSubjectVersion'=latest looks a registered schema up",
        ),
        ({"valueFormat": "avro", "valueSchema": "{nope"}, "for option 'valueSchema': not JSON"),
        (
            {"valueFormat": "avro", "valueSchema": '{"type": "record", "name": "R"}'},
            "for option 'valueSchema': Avro schema at $: record 'R' needs 'fields'",
        ),
        (
            {"valueFormat": "avro", "valueSubject": "s", "valueSubjectVersion": "0"},
            "must be 'latest' or a version number from 1",
        ),
    ],
)
def test_avro_options_that_do_not_combine_are_named(extra: dict[str, str], message: str) -> None:
    with pytest.raises(OptionsError) as caught:
        parse_sink_options({**BASE, **extra})
    assert message in str(caught.value)


def test_avro_options_parse() -> None:
    options = parse_sink_options(
        {**BASE, "valueformat": "avro", "valueschema": SCHEMA, "keyFormat": "avro",
         "keySubject": "ids", "keySubjectVersion": "3"}
    )  # fmt: skip
    assert options.value_avro is not None and options.key_avro is not None
    assert (options.value_avro.schema, options.value_avro.subject_of("t")) == (SCHEMA, "t-value")
    assert (options.key_avro.schema, options.key_avro.subject_of("t")) == (None, "ids")
    assert options.key_avro.version == 3
    assert parse_sink_options(BASE).value_avro is None


@pytest.fixture
def registries() -> Iterator[tuple[LocalSchemaRegistry, LocalSchemaRegistry]]:
    with LocalSchemaRegistry(10) as east, LocalSchemaRegistry(2000, f"w:{PASSWORD}") as west:
        yield east, west


def _cluster(registry: LocalSchemaRegistry | None, write: bool, **extra: str) -> ClusterMetadata:
    properties = {"bootstrap.servers": "b:1", **extra}
    if registry is not None:
        properties["schema.registry.url"] = registry.url
    return ClusterMetadata(frozenset({"orders", "audit"}), properties, write=write)


def _plan(service: InMemoryMetadataService, **extra: str) -> WriteTask:
    return plan_write(parse_sink_options({**BASE, **extra}), lambda kind, opts: service)


def test_ids_come_from_the_routed_clusters_registry_cached_and_follow_a_flip(
    registries: tuple[LocalSchemaRegistry, LocalSchemaRegistry],
) -> None:
    east, west = registries
    auth = {"schema.registry.basic.auth.user.info": f"w:{PASSWORD}"}
    on_east = {"east": _cluster(east, True), "west": _cluster(west, False, **auth)}
    service = InMemoryMetadataService([KafkaStream("orders", on_east)])
    avro = {"valueFormat": "avro", "valueSchema": SCHEMA}
    task = _plan(service, **avro)
    assert task.value_avro is not None and task.key_avro is None
    assert task.value_avro.registry == east.url
    assert [(s.topic, s.subject, s.schema_id) for s in task.value_avro.schemas] == [
        ("audit", "audit-value", 10),  # one schema: one id, under each topic's subject
        ("orders", "orders-value", 10),
    ]
    asked = east.requests
    assert _plan(service, **avro).value_avro == task.value_avro  # cached: east not asked again
    assert east.requests == asked
    assert _plan(service, topic="orders", **avro).value_avro.schemas[0].schema_id == 10  # type: ignore[union-attr]

    on_west = {"east": _cluster(east, False), "west": _cluster(west, True, **auth)}
    service.set_streams([KafkaStream("orders", on_west)])
    flipped = _plan(service, topic="orders", **avro)
    assert flipped.value_avro is not None
    assert [(s.topic, s.schema_id) for s in flipped.value_avro.schemas] == [("orders", 2000)]
    assert west.register("orders-value", SCHEMA) == 2000  # registered there by the plan

    # A subject alone: its version on the routed registry (latest by default, or a number).
    v2 = ORDER_V2
    assert west.register("orders-value", json.dumps(v2)) == 2001
    keyed = _plan(
        service,
        topic="orders",
        keyFormat="avro",
        keySubject="orders-value",
        valueFormat="avro",
        valueSubject="orders-value",
        valueSubjectVersion="1",
    )
    assert keyed.key_avro is not None and keyed.value_avro is not None
    assert [(s.schema_id, json.loads(s.schema)) for s in keyed.key_avro.schemas] == [(2001, v2)]
    assert [(s.schema_id, s.schema) for s in keyed.value_avro.schemas] == [(2000, SCHEMA)]


def test_a_read_only_registry_is_asked_to_look_the_schema_up() -> None:
    with LocalSchemaRegistry(300, read_only=True) as registry:
        clusters = {"east": _cluster(registry, True)}
        service = InMemoryMetadataService([KafkaStream("orders", clusters)])
        options = {"valueFormat": "avro", "valueSchema": SCHEMA, "topic": "orders"}
        with pytest.raises(SchemaRegistryError) as refused:  # not registered: nothing to find
            _plan(service, **options)
        assert "does not hold a schema under subject 'orders-value'" in str(refused.value)
        registry.register("orders-value", json.dumps(ORDER, indent=2))  # spaced otherwise
        task = _plan(service, **options)
        assert task.value_avro is not None and task.value_avro.schemas[0].schema_id == 300


def test_a_route_without_a_registry_or_with_one_down_fails_naming_the_cluster(
    registries: tuple[LocalSchemaRegistry, LocalSchemaRegistry],
) -> None:
    east, west = registries
    service = InMemoryMetadataService(
        [KafkaStream("orders", {"east": _cluster(None, True), "west": _cluster(west, False)})]
    )
    avro = {"valueFormat": "avro", "valueSchema": SCHEMA}
    with pytest.raises(SchemaRegistryError) as missing:
        _plan(service, **avro)
    assert (
        "valueFormat=avro: cluster 'east', where stream 'orders' is routed, names no schema "
        "registry in its metadata entry (its ids are needed to write there): add "
        "'schema.registry.url'"
    ) in str(missing.value)

    auth = {"schema.registry.basic.auth.user.info": f"w:{PASSWORD}"}
    clusters = {"east": _cluster(east, False), "west": _cluster(west, True, **auth)}
    service.set_streams([KafkaStream("orders", clusters)])
    with west.down(), pytest.raises(SchemaRegistryError) as down:
        _plan(service, valueFormat="avro", valueSubject="orders-value")
    said = str(down.value)
    assert said.startswith(f"Cluster 'west': schema registry {west.url} could not be reached")
    assert PASSWORD not in said
    wrong = {"schema.registry.basic.auth.user.info": "w:wrong"}
    clusters["west"] = _cluster(west, True, **wrong)
    service.set_streams([KafkaStream("orders", clusters)])
    with pytest.raises(SchemaRegistryError) as refused:
        _plan(service, **avro)
    assert "refused the credentials (HTTP 401)" in str(refused.value)
    assert "wrong" not in str(refused.value)


def test_the_column_must_be_of_the_schemas_spark_type(
    registries: tuple[LocalSchemaRegistry, LocalSchemaRegistry],
) -> None:
    east, _ = registries
    service = InMemoryMetadataService([KafkaStream("orders", {"east": _cluster(east, True)})])
    task = _plan(service, valueFormat="avro", valueSchema=SCHEMA, topic="orders")
    good = StructType().add("value", StructType().add("id", LongType()).add("item", StringType()))
    check_columns(good, ["value"])
    check_avro_columns(good, task)  # nullable fields where the schema has none: fine
    bad = StructType().add("value", StructType().add("id", StringType()).add("item", StringType()))
    with pytest.raises(OptionsError) as caught:
        check_avro_columns(bad, task)
    assert (
        "Column 'value' is written as Avro (valueFormat=avro) with subject 'orders-value' "
        "(schema id 10 on cluster 'east'), whose Spark type is struct<id:bigint,item:string>; "
        "the column is struct<id:string,item:string>"
    ) in str(caught.value)
    with pytest.raises(OptionsError, match="must be string or binary"):
        check_columns(good)  # without avro, a struct value is refused as before


def _decode(registry: LocalSchemaRegistry, schema: str, payloads: list[Any]) -> list[Any]:
    client = RegistryClient(RegistryEndpoint((registry.url,)), "east")

    def fetch(ref: SchemaRef) -> Any:
        return client.schema_by_id(int(ref.schema_id or 0))

    return Decoder(schema, fetch).decode(payloads).values.to_pylist()


def test_the_executor_encodes_each_rows_column_with_its_topics_schema(
    registries: tuple[LocalSchemaRegistry, LocalSchemaRegistry],
) -> None:
    east, _ = registries
    audit = {"type": "record", "name": "Audit", "fields": [{"name": "id", "type": "long"}]}
    assert east.register("orders-value", SCHEMA) == 10
    assert east.register("audit-value", json.dumps(audit)) == 11
    service = InMemoryMetadataService([KafkaStream("orders", {"east": _cluster(east, True)})])
    task = _plan(service, valueFormat="avro", valueSubject="orders-value", keyFormat="avro",
                 keySchema='"long"')  # fmt: skip
    assert task.value_avro is not None
    batch = pa.RecordBatch.from_pydict(
        {
            "key": pa.array([1, 2, None], pa.int64()),
            "value": [{"id": 1, "item": "pen"}, None, {"id": 3, "item": "ink"}],
            "topic": ["orders", "audit", "orders"],
        }
    )
    (encoded,) = encode_columns(task, [batch])
    assert encoded.schema.field("value").type == pa.binary()
    assert encoded.column(2).to_pylist() == ["orders", "audit", "orders"]
    values = encoded.column(1).to_pylist()
    assert values[1] is None and all(v[:5] == b"\x00\x00\x00\x00\x0a" for v in values[::2])
    assert _decode(east, SCHEMA, values) == batch.column(1).to_pylist()
    keys = encoded.column(0).to_pylist()
    assert keys[2] is None and _decode(east, '"long"', keys) == [1, 2, None]
    assert keys[0][:5] == b"\x00\x00\x00\x00\x0c"  # "long" registered under orders-key: id 12

    bad = pa.RecordBatch.from_pydict(
        {"value": [{"id": 1, "item": "pen"}, {"id": None, "item": "x"}], "topic": ["a", "orders"]}
    )
    with pytest.raises(Exception, match="not in the write route"):
        list(encode_columns(task, [bad]))
    bad = bad.set_column(1, "topic", pa.array(["orders", "orders"]))
    with pytest.raises(AvroEncodeError) as caught:
        list(encode_columns(task, [batch, bad]))
    assert (
        "The value of row 4 of the task (topic 'orders' on cluster 'east', valueFormat=avro, "
        f"subject 'orders-value', schema id 10 of registry {east.url}) cannot be written: the "
        "value does not fit its Avro schema: Field(Order.id) is None expected long"
    ) in str(caught.value)
