"""``schemaTrackingLocation``: the reader schemas a stream's subjects named at its first start,
recorded and taken again by later ``load()`` calls and starts, whatever version is latest then.
Registries are the testing kit's (the Confluent REST API over real HTTP); locations are real
directories, and fsspec's in-memory filesystem for a URI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.unit.avro_schemas import ORDER_V1, ORDER_V2, ORDERS_SOURCE

from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.registry.endpoint import RegistryEndpoint
from pyspark_dynamic_kafka.source.config.options import SourceOptions, parse_options
from pyspark_dynamic_kafka.source.driver.reader_schemas import (
    check_declared,
    check_recorded,
    fingerprint,
    reader_schemas,
    track,
)
from pyspark_dynamic_kafka.source.driver.schema_tracking import RECORD
from pyspark_dynamic_kafka.source.schema import spark_schema
from pyspark_dynamic_kafka.testing.schema_registry import LocalSchemaRegistry

KEY = {"type": "record", "name": "Key", "fields": [{"name": "k", "type": "string"}]}


@pytest.fixture
def west() -> Iterator[LocalSchemaRegistry]:
    with LocalSchemaRegistry(1000) as registry:
        yield registry


@pytest.fixture
def location(tmp_path: Path) -> str:
    """A test's ``schemaTrackingLocation``: a directory that does not exist yet."""
    return str(tmp_path / "schemas")


def _recorded(location: str) -> Any:
    """The record of reader schemas at ``location``."""
    return json.loads(Path(location, RECORD).read_text())


def _registries(registry: LocalSchemaRegistry) -> dict[str, RegistryEndpoint | None]:
    return {"west": RegistryEndpoint((registry.url,))}


def _options(location: str, **extra: str) -> SourceOptions:
    return parse_options(
        {
            **ORDERS_SOURCE,
            "valueFormat": "avro",
            "valueSubject": "orders-value",
            "schemaTrackingLocation": location,
            **extra,
        }
    )


def test_a_restart_takes_the_first_starts_schema_whatever_version_is_latest(
    west: LocalSchemaRegistry, location: str
) -> None:
    options = _options(location)
    west.register("orders-value", json.dumps(ORDER_V1))
    first = reader_schemas(options, _registries(west))
    track(options, first)
    record = _recorded(location)
    assert record == {
        "format": 1,
        "columns": {
            "value": {
                "subject": "orders-value",
                "version": 1,
                "fingerprint": fingerprint(json.dumps(ORDER_V1)),
                "schema": first.columns.value.reader_schema,  # type: ignore[union-attr]
            }
        },
    }
    declared = spark_schema(False, first.columns)

    west.register("orders-value", json.dumps(ORDER_V2))  # latest is v2 now, with another column
    again = reader_schemas(options, _registries(west))
    assert again.named == first.named and again.columns == first.columns
    check_declared(again.columns, declared, False)  # load()'s columns are v1's
    assert check_recorded(again, dict(first.named), _registries(west)) == again
    track(options, again)
    assert _recorded(location) == record

    pinned = _options(location, valueSubjectVersion="1")
    assert reader_schemas(pinned, _registries(west)).named == first.named
    # Without the option the same restart is refused, and the refusal names the option.
    plain = parse_options({**ORDERS_SOURCE, "valueFormat": "avro", "valueSubject": "orders-value"})
    with pytest.raises(OptionsError, match="with schemaTrackingLocation, a stream keeps"):
        check_recorded(
            reader_schemas(plain, _registries(west)), dict(first.named), _registries(west)
        )


def test_another_subject_or_pinned_version_than_recorded_is_refused_naming_the_record(
    west: LocalSchemaRegistry, location: str
) -> None:
    west.register("orders-value", json.dumps(ORDER_V1))
    west.register("orders-value", json.dumps(ORDER_V2))
    west.register("payments-value", json.dumps(ORDER_V1))
    options = _options(location, valueSubjectVersion="1")
    track(options, reader_schemas(options, _registries(west)))
    record = str(Path(location, RECORD))

    other_version = _options(location, valueSubjectVersion="2")
    with pytest.raises(OptionsError) as refused:
        reader_schemas(other_version, _registries(west))
    assert str(refused.value) == (
        f"Option 'valueSubjectVersion' (2): schemaTrackingLocation {location!r} records version "
        f"1 of 'orders-value' as the value column's reader schema ({record}), and a stream "
        "keeps its reader schema. Remove valueSubjectVersion, or give a new "
        "schemaTrackingLocation (with a new checkpoint) to read with another version."
    )
    other_subject = _options(location, valueSubject="payments-value")
    with pytest.raises(OptionsError, match="records the reader schema of subject 'orders-value'"):
        reader_schemas(other_subject, _registries(west))


def test_a_column_named_later_is_added_beside_the_recorded_one(
    west: LocalSchemaRegistry, location: str
) -> None:
    west.register("orders-value", json.dumps(ORDER_V1))
    west.register("orders-key", json.dumps(KEY))
    options = _options(location)
    track(options, reader_schemas(options, _registries(west)))
    west.register("orders-value", json.dumps(ORDER_V2))
    both = _options(location, keyFormat="avro", keySubject="orders-key")
    resolved = reader_schemas(both, _registries(west))
    track(both, resolved)
    columns = _recorded(location)["columns"]
    assert {c: (v["subject"], v["version"]) for c, v in columns.items()} == {
        "key": ("orders-key", 1),
        "value": ("orders-value", 1),
    }


def test_a_location_given_as_a_uri_and_a_record_that_is_not_one(
    west: LocalSchemaRegistry, tmp_path: Path
) -> None:
    west.register("orders-value", json.dumps(ORDER_V1))
    uri = f"memory://{tmp_path.name}/schemas"  # fsspec's in-memory filesystem, this process
    options = _options(uri)
    first = reader_schemas(options, _registries(west))
    track(options, first)
    west.register("orders-value", json.dumps(ORDER_V2))
    assert reader_schemas(options, _registries(west)).named == first.named

    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / RECORD).write_text('{"columns": []}')
    with pytest.raises(OptionsError) as refused:
        reader_schemas(_options(str(damaged)), _registries(west))
    assert str(refused.value).startswith(
        f"Option 'schemaTrackingLocation' ({str(damaged)!r}): {damaged}/{RECORD} is not a "
        "record of reader schemas (format None, expected 1); give schemaTrackingLocation a "
        "directory of its own."
    )


def test_nothing_is_recorded_for_a_reader_schema_given_whole(location: str) -> None:
    options = parse_options(
        {
            **ORDERS_SOURCE,
            "valueFormat": "avro",
            "valueSchema": json.dumps(ORDER_V1),
            "schemaTrackingLocation": location,
        }
    )
    track(options, reader_schemas(options, None))
    assert not Path(location).exists()
