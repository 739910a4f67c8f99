"""The testing kit's schema registry (a test double,
:mod:`pyspark_dynamic_kafka.testing.schema_registry`) serves what confluent-kafka's real
``SchemaRegistryClient``, ``AvroSerializer`` and ``AvroDeserializer`` ask of a registry: ids
local to each registry, evolution under a subject, lookups, GUIDs, basic authentication, and an
outage and the return after it."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient, SchemaRegistryError
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from tests.unit.avro_schemas import ORDER_V1, ORDER_V2

from pyspark_dynamic_kafka.testing.schema_registry import LocalSchemaRegistry

VALUE = SerializationContext("orders", MessageField.VALUE)


@pytest.fixture
def registries() -> Iterator[tuple[LocalSchemaRegistry, LocalSchemaRegistry]]:
    with LocalSchemaRegistry() as east, LocalSchemaRegistry(1000, "reader:pw") as west:
        yield east, west


def _client(registry: LocalSchemaRegistry, user_info: str | None = None) -> SchemaRegistryClient:
    config = {"url": registry.url}
    if user_info:
        config["basic.auth.user.info"] = user_info
    return SchemaRegistryClient(config)


def _serializer(client: SchemaRegistryClient, schema: dict[str, object]) -> AvroSerializer:
    return AvroSerializer(client, json.dumps(schema))


def test_ids_are_local_to_each_registry_and_evolution_resolves(
    registries: tuple[LocalSchemaRegistry, LocalSchemaRegistry],
) -> None:
    east, west = registries
    east_client, west_client = _client(east), _client(west, "reader:pw")
    on_east = _serializer(east_client, ORDER_V1)({"id": 7, "item": "pen"}, VALUE)
    on_west = _serializer(west_client, ORDER_V1)({"id": 7, "item": "pen"}, VALUE)
    # Confluent's framing: a zero byte, the 4-byte id, the Avro body; the same schema, two ids.
    assert on_east[0] == 0 and struct.unpack(">I", on_east[1:5])[0] == 1
    assert struct.unpack(">I", on_west[1:5])[0] == 1000 and on_west[5:] == on_east[5:]
    assert AvroDeserializer(east_client)(on_east, VALUE) == {"id": 7, "item": "pen"}
    # West's id means nothing on east: a consumer must ask the registry of the record's cluster.
    with pytest.raises(SchemaRegistryError) as unknown:
        AvroDeserializer(east_client)(on_west, VALUE)
    assert unknown.value.http_status_code == 404 and unknown.value.error_code == 40403

    # v2 adds a field with a default on west only; a reader of v2 reads v1's records.
    v2_bytes = _serializer(west_client, ORDER_V2)({"id": 8, "item": "ink", "qty": 3}, VALUE)
    assert struct.unpack(">I", v2_bytes[1:5])[0] == 1001
    assert west_client.get_latest_version("orders-value").version == 2
    assert west_client.get_versions("orders-value") == [1, 2]
    assert east_client.get_versions("orders-value") == [1]
    reader = AvroDeserializer(west_client, json.dumps(ORDER_V2))
    assert reader(on_west, VALUE) == {"id": 7, "item": "pen", "qty": 1}
    assert reader(v2_bytes, VALUE) == {"id": 8, "item": "ink", "qty": 3}

    # Registering again, or under another subject, keeps the id; lookups and GUIDs answer.
    schema = Schema(json.dumps(ORDER_V1), "AVRO")
    assert west_client.register_schema("audit-value", schema) == 1000
    assert _client(west, "reader:pw").lookup_schema("audit-value", schema).version == 1
    by_id = _client(west, "reader:pw").get_schema(1000).schema_str
    assert json.loads(by_id) == ORDER_V1
    registered = west_client.register_schema_full_response("orders-value", schema)
    assert registered.guid and _client(west, "reader:pw").get_schema_by_guid(
        registered.guid
    ).schema_str == json.dumps(ORDER_V1)


def test_credentials_are_required_and_an_outage_ends(
    registries: tuple[LocalSchemaRegistry, LocalSchemaRegistry],
) -> None:
    _, west = registries
    with pytest.raises(SchemaRegistryError) as refused:
        _client(west, "reader:wrong").get_subjects()
    assert refused.value.http_status_code == 401
    west.register("orders-value", json.dumps(ORDER_V1))
    with west.down():
        with pytest.raises(Exception) as outage:  # the client's own transport error
            _client(west, "reader:pw").get_subjects()
        assert "onnect" in str(outage.value), outage.value
    assert _client(west, "reader:pw").get_subjects() == ["orders-value"]


def test_a_read_only_registry_refuses_registrations_and_answers_lookups() -> None:
    with LocalSchemaRegistry(7, read_only=True) as registry:
        registry.register("orders-value", json.dumps(ORDER_V1))  # as its owner would
        client = _client(registry)
        schema = Schema(json.dumps(ORDER_V1), "AVRO")
        with pytest.raises(SchemaRegistryError) as refused:
            client.register_schema("orders-value", schema)
        assert (refused.value.http_status_code, refused.value.error_code) == (403, 40301)
        assert client.lookup_schema("orders-value", schema).schema_id == 7
