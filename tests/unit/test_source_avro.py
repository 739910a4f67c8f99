"""The source's Avro columns without Kafka: the format options and their rules, the reader
schemas resolved on the clusters' registries (the testing kit's registry, a test double of the
Confluent REST API, over real HTTP), what the checkpoint records of them, the declared schema,
and a batch's columns decoded with the registry its cluster names."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from tests.engine_roles import DECODERS, skip_without_core
from tests.unit.avro_schemas import ORDER_V1, ORDER_V2, ORDERS_SOURCE

from pyspark_dynamic_kafka.errors import OptionsError, SchemaRegistryError
from pyspark_dynamic_kafka.registry.endpoint import RegistryEndpoint
from pyspark_dynamic_kafka.source.checkpoint import (
    NamedSchema,
    SourceOffset,
    decode,
    encode,
    reader_schemas_of,
    with_reader_schemas,
)
from pyspark_dynamic_kafka.source.config.options import parse_options
from pyspark_dynamic_kafka.source.driver.reader_schemas import (
    check_declared,
    check_recorded,
    check_registries,
    fingerprint,
    reader_schemas,
)
from pyspark_dynamic_kafka.source.executor.avro_columns import decode_avro
from pyspark_dynamic_kafka.source.schema import (
    HEADERS_TYPE,
    AvroColumn,
    AvroColumns,
    arrow_schema,
    spark_schema,
)
from pyspark_dynamic_kafka.spark_versions import arrow_schema as spark_arrow_schema
from pyspark_dynamic_kafka.testing.schema_registry import LocalSchemaRegistry

V1_DOC = {**ORDER_V1, "doc": "the same columns as v1"}


@pytest.fixture
def registries() -> Iterator[tuple[LocalSchemaRegistry, LocalSchemaRegistry]]:
    with LocalSchemaRegistry(1) as east, LocalSchemaRegistry(1000) as west:
        yield east, west


def endpoints(*registries: LocalSchemaRegistry | None) -> dict[str, RegistryEndpoint | None]:
    names = ("east", "west", "north")
    return {
        n: None if r is None else RegistryEndpoint((r.url,))
        for n, r in zip(names, registries, strict=False)
    }


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"valueFormat": "avro"}, "needs exactly one of 'valueSchema'"),
        ({"valueFormat": "avro", "valueSchema": '"long"', "valueSubject": "s"}, "got both"),
        ({"valueSchema": '"long"'}, "Option 'valueSchema' ('\"long\"') applies to Avro values"),
        ({"keyMode": "PERMISSIVE"}, "set keyFormat=avro"),
        ({"valueFormat": "avro", "valueSchema": "{"}, "Invalid value '{' for option 'valueSchema'"),
        ({"keyFormat": "avro", "keySchema": '"long"', "keySubjectVersion": "2"}, "keySubject"),
        ({"valueFormat": "json"}, "expected one of bytes, avro"),
        ({"valueFormat": "avro", "valueSubject": "s", "valueMode": "lenient"}, "valueMode"),
        (
            {"valueFormat": "avro", "valueSchema": '"long"', "archive.path": "/a"},
            "does not work with 'archive.path'",
        ),
    ],
)
def test_format_options_are_refused_naming_the_key_and_the_fix(
    given: dict[str, str], message: str
) -> None:
    with pytest.raises(OptionsError, match=None) as refused:
        parse_options({**ORDERS_SOURCE, **given})
    assert message in str(refused.value)


def test_format_options_parse_case_insensitively_into_one_value_per_column() -> None:
    options = parse_options(
        {
            **ORDERS_SOURCE,
            "valueformat": "AVRO",
            "valueSubject": "orders-value",
            "valueMode": "permissive",
        }
    )
    assert options.key_format is None
    fmt = options.value_format
    assert fmt is not None and (fmt.subject, fmt.version, fmt.permissive) == (
        "orders-value",
        None,
        True,
    )
    assert parse_options(ORDERS_SOURCE).value_format is None


def test_a_subject_resolves_on_the_first_registry_holding_it_in_cluster_id_order(
    registries: tuple[LocalSchemaRegistry, LocalSchemaRegistry],
) -> None:
    east, west = registries
    west.register("orders-value", json.dumps(ORDER_V1))
    west.register("orders-value", json.dumps(ORDER_V2))
    options = parse_options(
        {**ORDERS_SOURCE, "valueFormat": "avro", "valueSubject": "orders-value"}
    )
    # east does not hold the subject: west's latest (v2) is the reader schema.
    resolved = reader_schemas(options, endpoints(east, west))
    assert resolved.columns is not None and resolved.columns.value is not None
    assert json.loads(resolved.columns.value.reader_schema) == ORDER_V2
    assert resolved.named["value"] == NamedSchema(
        "orders-value", 2, fingerprint(json.dumps(ORDER_V2))
    )
    east.register("orders-value", json.dumps(ORDER_V1))
    resolved = reader_schemas(options, endpoints(east, west))
    assert resolved.named["value"].version == 1  # east comes first now that it holds it
    pinned = parse_options(
        {
            **ORDERS_SOURCE,
            "valueFormat": "avro",
            "valueSubject": "orders-value",
            "valueSubjectVersion": "1",
        }
    )
    assert reader_schemas(pinned, endpoints(None, west)).named["value"].version == 1

    missing = parse_options(
        {**ORDERS_SOURCE, "valueFormat": "avro", "valueSubject": "payments-value"}
    )
    with pytest.raises(OptionsError, match="on none of the registries of the clusters read"):
        reader_schemas(missing, endpoints(east, west))
    with east.down(), west.down(), pytest.raises(SchemaRegistryError, match="could not be asked"):
        reader_schemas(options, endpoints(east, west))


def test_a_restart_decodes_with_the_recorded_schema_or_says_which_version_to_pin(
    registries: tuple[LocalSchemaRegistry, LocalSchemaRegistry],
) -> None:
    east, west = registries
    options = parse_options(
        {**ORDERS_SOURCE, "valueFormat": "avro", "valueSubject": "orders-value"}
    )
    west.register("orders-value", json.dumps(ORDER_V1))
    first = reader_schemas(options, endpoints(None, west))
    recorded = dict(first.named)
    # The same schema under another version number of another registry: decoded the same.
    east.register("orders-value", json.dumps(ORDER_V1))
    again = reader_schemas(options, endpoints(east, west))
    assert check_recorded(again, recorded, endpoints(east, west)).named == recorded
    # A new version with the same columns (a doc): the recorded version is decoded with.
    west.register("orders-value", json.dumps(V1_DOC))
    now = reader_schemas(options, endpoints(None, west))
    kept = check_recorded(now, recorded, endpoints(None, west))
    assert kept.columns is not None and kept.columns.value is not None
    assert json.loads(kept.columns.value.reader_schema) == ORDER_V1 and kept.named == recorded
    # A version with other columns: the restart fails naming the version to pin.
    west.register("orders-value", json.dumps(ORDER_V2))
    newest = reader_schemas(options, endpoints(None, west))
    with pytest.raises(OptionsError, match="Set valueSubjectVersion=1 to decode as before"):
        check_recorded(newest, recorded, endpoints(None, west))


def test_the_checkpoint_records_reader_schemas_beside_offsets_old_ones_stay_as_written() -> None:
    document = encode(SourceOffset({("east", "orders", 0): 5}))
    assert reader_schemas_of(document) == {}
    named = {"value": NamedSchema("orders-value", 3, "5f1c0a9e3b2d4c71")}
    recorded = with_reader_schemas(dict(document), named)
    assert json.dumps(recorded).endswith(
        '"readerSchemas": {"value": {"subject": "orders-value", "version": 3, '
        '"fingerprint": "5f1c0a9e3b2d4c71"}}}'
    )
    assert reader_schemas_of(json.loads(json.dumps(recorded))) == named
    assert decode(recorded) == decode(document)
    assert with_reader_schemas(dict(document), {}) == document
    with pytest.raises(Exception, match="malformed readerSchemas entry for 'value'"):
        reader_schemas_of({**document, "readerSchemas": {"value": {"subject": "s"}}})


def test_the_declared_columns_are_spark_and_arrow_alike_and_checked_against_the_resolved() -> None:
    avro = AvroColumns(
        key=AvroColumn('"string"'), value=AvroColumn(json.dumps(ORDER_V1), permissive=True)
    )
    schema = spark_schema(True, avro)
    assert schema.simpleString() == (
        "struct<key:string,value:struct<id:bigint,item:string>,topic:string,partition:int,"
        "offset:bigint,timestamp:timestamp,timestampType:int,headers:array<struct<key:string,"
        "value:binary>>,cluster:string,keySchemaId:int,valueSchemaId:int,_corrupt_value:binary>"
    )
    assert arrow_schema(True, avro) == spark_arrow_schema(schema)
    check_declared(avro, schema, True)
    with pytest.raises(OptionsError, match="a new version of the subject was registered"):
        check_declared(AvroColumns(value=AvroColumn(json.dumps(ORDER_V2))), spark_schema(), False)
    with pytest.raises(OptionsError, match=r"cluster\(s\) west names none: add 'schema.registry"):
        check_registries(avro, {"east": RegistryEndpoint(("http://r",)), "west": None})


def _batch(values: list[bytes | None], headers: list[Any]) -> pa.RecordBatch:
    n = len(values)
    columns: list[Any] = [
        pa.array([None] * n, pa.binary()),
        pa.array(values, pa.binary()),
        pa.array(["orders"] * n),
        pa.array([0] * n, pa.int32()),
        pa.array(range(10, 10 + n), pa.int64()),
        pa.array([0] * n, pa.timestamp("us", tz="UTC")),
        pa.array([0] * n, pa.int32()),
        pa.array(headers, HEADERS_TYPE),
        pa.array(["east"] * n),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=arrow_schema(True))


@DECODERS
def test_a_batch_is_decoded_with_the_registry_its_clusters_properties_name(
    native: bool, registries: tuple[LocalSchemaRegistry, LocalSchemaRegistry]
) -> None:
    skip_without_core(native)
    east, west = registries
    schema_id = west.register("orders-value", json.dumps(ORDER_V1))
    guid = west.answer("GET", f"/schemas/ids/{schema_id}", None)["guid"]
    body = _body({"id": 7, "item": "pen"})
    framed = b"\x00" + schema_id.to_bytes(4, "big") + body
    header = [{"key": "__value_schema_id", "value": b"\x01" + _uuid_bytes(guid)}]
    batch = _batch([framed, None, body], [None, None, header])
    avro = AvroColumns(value=AvroColumn(json.dumps(ORDER_V1), permissive=True))
    properties = {"bootstrap.servers": "x:9092", "schema.registry.url": west.url}
    out = decode_avro(batch, "east", properties, avro, native)
    assert out.schema == arrow_schema(False, avro)
    assert out.column("value").to_pylist() == [
        {"id": 7, "item": "pen"},
        None,
        {"id": 7, "item": "pen"},
    ]
    # A schema named by GUID has no id of its registry in the record: null, as documented.
    assert out.column("valueSchemaId").to_pylist() == [schema_id, None, None]
    assert out.column("_corrupt_value").to_pylist() == [None, None, None]
    # The same id means nothing on east's registry: PERMISSIVE keeps the bytes.
    elsewhere = {**properties, "schema.registry.url": east.url}
    lost = decode_avro(batch, "west-of-nowhere", elsewhere, avro, native)
    assert lost.column("_corrupt_value").to_pylist()[0] == framed
    assert lost.column("value").to_pylist()[0] is None


def _body(record: dict[str, Any]) -> bytes:
    import io

    import fastavro

    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(ORDER_V1), record)
    return out.getvalue()


def _uuid_bytes(text: str) -> bytes:
    import uuid

    return uuid.UUID(text).bytes
