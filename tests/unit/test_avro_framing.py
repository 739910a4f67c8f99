"""Confluent's wire formats as confluent-kafka's own AvroSerializer writes them (a real
serializer against the testing kit's schema registry, a test double of its REST API): the id
prefix, the GUID in a header, the GUID prefix, and payloads in none of them."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka.schema_registry import (
    SchemaRegistryClient,
    header_schema_id_serializer,
)
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from pyspark_dynamic_kafka.avro.framing import FramingError, SchemaRef, frame
from pyspark_dynamic_kafka.testing.schema_registry import LocalSchemaRegistry

SCHEMA = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]})


def test_the_serializers_framings_name_the_schema_and_the_body() -> None:
    with LocalSchemaRegistry(first_id=300) as registry:
        client = SchemaRegistryClient({"url": registry.url})
        plain = AvroSerializer(client, SCHEMA)(
            {"a": 1}, SerializationContext("t", MessageField.VALUE)
        )
        ref, body = frame(plain)
        assert ref == SchemaRef(schema_id=300) and bytes(body) == b"\x02"  # zigzag 1

        by_header = AvroSerializer(
            client, SCHEMA, conf={"schema.id.serializer": header_schema_id_serializer}
        )
        headers: list[tuple[str, bytes | None]] = []
        key_bytes = by_header({"a": 2}, SerializationContext("t", MessageField.KEY, headers))
        guid = str(client.get_latest_version("t-key").guid)
        assert [h for h, _ in headers] == ["__key_schema_id"]
        ref, body = frame(key_bytes, headers, key=True)
        assert ref == SchemaRef(guid=guid) and bytes(body) == b"\x04"
        # A value reader looks at the value's header only: this payload has no prefix.
        with pytest.raises(FramingError, match="starts with byte 4, not a magic byte"):
            frame(key_bytes, headers)

    guid_prefixed = b"\x01" + uuid.UUID(guid).bytes + b"\x06"
    assert frame(guid_prefixed) == (SchemaRef(guid=guid), memoryview(b"\x06"))
    assert str(SchemaRef(schema_id=7)) == "schema id 7"


@pytest.mark.parametrize(
    ("payload", "headers", "said"),
    [
        (b"", None, "the payload is empty"),
        (b"\x00\x00\x01", None, "too short for the schema reference its magic byte 0"),
        (b"\x01" + b"\x00" * 10, None, "magic byte 1 announces (17 bytes)"),
        (b'{"a": 1}', None, "starts with byte 123, not a magic byte"),
        (b"\x02", [("__value_schema_id", b"\x00\x00\x00\x00\x07\x00")], "1 byte(s) after"),
        (b"\x02", [("__value_schema_id", None)], "the header __value_schema_id is empty"),
    ],
)
def test_payloads_in_no_known_framing_are_refused_saying_why(
    payload: bytes, headers: list[tuple[str, bytes | None]] | None, said: str
) -> None:
    with pytest.raises(FramingError) as refused:
        frame(payload, headers)
    assert said in str(refused.value)
