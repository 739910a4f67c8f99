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
WITH_B = json.dumps(
    {
        "type": "record",
        "name": "R",
        "fields": [{"name": "a", "type": "long"}, {"name": "b", "type": "string", "default": ""}],
    }
)
BY_HEADER = {"schema.id.serializer": header_schema_id_serializer}


def test_the_serializers_framings_name_the_schema_and_the_body() -> None:
    with LocalSchemaRegistry(first_id=300) as registry:
        client = SchemaRegistryClient({"url": registry.url})
        plain = AvroSerializer(client, SCHEMA)(
            {"a": 1}, SerializationContext("t", MessageField.VALUE)
        )
        ref, body = frame(plain)
        assert ref == SchemaRef(schema_id=300) and bytes(body) == b"\x02"  # zigzag 1

        by_header = AvroSerializer(client, SCHEMA, conf=BY_HEADER)
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


@pytest.mark.parametrize("field", [MessageField.VALUE, MessageField.KEY])
def test_the_last_schema_header_names_the_schema(field: str) -> None:
    """A record a stream processor re-serialized: its input's schema header is forwarded, and
    the output's serializer appends its own. Schema Registry's Java deserializer
    (``DualSchemaIdDeserializer``) reads ``Headers.lastHeader``: the output's schema."""
    name = f"__{field}_schema_id"
    with LocalSchemaRegistry(first_id=300) as registry:
        client = SchemaRegistryClient({"url": registry.url})
        headers: list[tuple[str, bytes | None]] = [("trace", b"x")]
        AvroSerializer(client, SCHEMA, conf=BY_HEADER)(
            {"a": 7}, SerializationContext("t", field, headers)
        )
        body = AvroSerializer(client, WITH_B, conf=BY_HEADER)(
            {"a": 7, "b": "payload-b"}, SerializationContext("t", field, headers)
        )
        v1, v2 = (client.get_version(f"t-{field}", version) for version in (1, 2))
    assert v1.guid != v2.guid and v2.schema.schema_str == WITH_B
    assert headers[1:] == [(name, b"\x01" + uuid.UUID(g).bytes) for g in (v1.guid, v2.guid)]
    ref, got = frame(body, headers, key=field == MessageField.KEY)
    assert ref == SchemaRef(guid=str(v2.guid)) and bytes(got) == body
    # Bytes after the schema's GUID in a header are not looked at, as Java's deserializer does.
    headers.append((name, b"\x00" + (9).to_bytes(4, "big") + b"\xff"))
    assert frame(body, headers, key=field == MessageField.KEY)[0] == SchemaRef(schema_id=9)


@pytest.mark.parametrize("field", [MessageField.VALUE, MessageField.KEY])
def test_a_null_schema_header_leaves_the_payloads_prefix(field: str) -> None:
    """Java's ``DualSchemaIdDeserializer`` and confluent-kafka's read the prefix when the schema
    header's value is null; Java looks at the last header only, so a null one after a GUID
    header leaves the prefix too."""
    name = f"__{field}_schema_id"
    with LocalSchemaRegistry(first_id=300) as registry:
        client = SchemaRegistryClient({"url": registry.url})
        plain = AvroSerializer(client, SCHEMA)({"a": 1}, SerializationContext("t", field))
    key = field == MessageField.KEY
    guid = b"\x01" + uuid.uuid4().bytes
    for headers in ([(name, None)], [(name, guid), ("other", b"\x01"), (name, None)]):
        ref, body = frame(plain, headers, key=key)
        assert ref == SchemaRef(schema_id=300) and bytes(body) == b"\x02"
    # The other side's header does not count.
    other = "__value_schema_id" if key else "__key_schema_id"
    assert frame(plain, [(other, guid)], key=key)[0] == SchemaRef(schema_id=300)


@pytest.mark.parametrize(
    ("payload", "headers", "said"),
    [
        (b"", None, "the payload is empty"),
        (b"\x00\x00\x01", None, "too short for the schema reference its magic byte 0"),
        (b"\x01" + b"\x00" * 10, None, "magic byte 1 announces (17 bytes)"),
        (b'{"a": 1}', None, "starts with byte 123, not a magic byte"),
        (b"\x02", [("__value_schema_id", b"")], "the header __value_schema_id is empty"),
        # Not null: the last header counts, the prefix is not looked at (Java reads it so).
        (
            b"\x00\x00\x00\x00\x07\x02",
            [("__value_schema_id", b"\x00\x00\x00\x00\x07"), ("__value_schema_id", b"\x07")],
            "the header __value_schema_id starts with byte 7",
        ),
        (b"\x02", [("__value_schema_id", None)], "the payload starts with byte 2"),
    ],
)
def test_payloads_in_no_known_framing_are_refused_saying_why(
    payload: bytes, headers: list[tuple[str, bytes | None]] | None, said: str
) -> None:
    with pytest.raises(FramingError) as refused:
        frame(payload, headers)
    assert said in str(refused.value)
