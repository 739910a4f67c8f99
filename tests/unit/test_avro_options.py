"""The Avro option family (:mod:`pyspark_dynamic_kafka.avro.options`), one declaration for the
source and the sink: the same names, parsers and defaults on both sides, and one rule for a
subject's version (``latest`` or a number from 1), where the source's ``latest`` is what no
version is: the latest when the query first starts, with the same restart refusal."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from pyspark_dynamic_kafka.avro.options import Side, avro_options, subject_version
from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.registry.endpoint import RegistryEndpoint
from pyspark_dynamic_kafka.sink.config.options import SINK_OPTIONS, parse_sink_options
from pyspark_dynamic_kafka.source.config.options import OPTIONS, parse_options
from pyspark_dynamic_kafka.source.driver.reader_schemas import check_recorded, reader_schemas
from pyspark_dynamic_kafka.testing.schema_registry import LocalSchemaRegistry

SOURCE = {"metadataService": "file", "metadataService.path": "m.yaml", "streamIds": "orders"}
SINK = {"metadataService": "file", "metadataService.path": "m.yaml", "streamId": "orders"}
V1 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "qty", "type": "int", "default": 1}]}


@pytest.mark.parametrize("side", ["key", "value"])
def test_both_sides_declare_the_family_with_the_same_parsers_and_defaults(side: Side) -> None:
    source = {k: OPTIONS[k] for k in OPTIONS if k.startswith(side)}
    sink = {k: s for k, s in SINK_OPTIONS.specs.items() if k.startswith(side)}
    assert set(sink) == set(source) - {f"{side}Mode"}
    for key, spec in sink.items():
        assert (spec.parse, spec.default) == (source[key].parse, source[key].default), key
    assert [s.key for s in avro_options(side, "read")] == list(source)


@pytest.mark.parametrize(
    ("value", "parsed"), [("latest", "latest"), (" LATEST ", "latest"), ("3", 3)]
)
def test_a_subject_version_is_latest_or_a_number_from_one(value: str, parsed: object) -> None:
    assert subject_version(value) == parsed


@pytest.mark.parametrize("value", ["0", "-1", "x", "1.5", "", "²", "+3"])
def test_a_subject_version_is_refused_alike_on_both_sides_naming_the_key(value: str) -> None:
    given = {"valueFormat": "avro", "valueSubject": "s", "valueSubjectVersion": value}
    with pytest.raises(OptionsError) as source:
        parse_options({**SOURCE, **given})
    with pytest.raises(OptionsError) as sink:
        parse_sink_options({**SINK, **given})
    for refused in (source, sink):
        message = str(refused.value)
        assert "option 'valueSubjectVersion'" in message
        assert "must be 'latest' or a version number from 1" in message


def test_the_sources_latest_is_no_pin() -> None:
    avro = {"valueFormat": "avro", "valueSubject": "orders-value"}
    latest = parse_options({**SOURCE, **avro, "valueSubjectVersion": "Latest"}).value_format
    assert latest == parse_options({**SOURCE, **avro}).value_format
    assert latest is not None and latest.version is None
    pinned = parse_options({**SOURCE, **avro, "valueSubjectVersion": "2"}).value_format
    assert pinned is not None and pinned.version == 2
    with pytest.raises(OptionsError, match="is a version of 'keySubject'"):
        parse_options(
            {**SOURCE, "keyFormat": "avro", "keySchema": '"long"', "keySubjectVersion": "latest"}
        )
    sink = parse_sink_options({**SINK, **avro, "valueSubjectVersion": "LATEST"}).value_avro
    assert sink is not None and sink.version == "latest"


@pytest.fixture
def west() -> Iterator[LocalSchemaRegistry]:
    with LocalSchemaRegistry(1000) as registry:
        yield registry


def test_a_restart_with_latest_is_refused_as_one_without_a_version(
    west: LocalSchemaRegistry,
) -> None:
    options = parse_options(
        {
            **SOURCE,
            "valueFormat": "avro",
            "valueSubject": "orders-value",
            "valueSubjectVersion": "latest",
        }
    )
    endpoints = {"west": RegistryEndpoint((west.url,))}
    west.register("orders-value", json.dumps(V1))
    recorded = dict(reader_schemas(options, endpoints).named)
    west.register("orders-value", json.dumps(V2))
    newest = reader_schemas(options, endpoints)
    assert newest.named["value"].version == 2
    with pytest.raises(OptionsError, match="Set valueSubjectVersion=1 to decode as before"):
        check_recorded(newest, recorded, endpoints)
