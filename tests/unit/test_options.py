"""Option parsing: every error names the key and the value; keys match case-insensitively."""

from __future__ import annotations

from dataclasses import fields

import pytest
from tests.unit.conftest import BASE, rejection

from pyspark_dynamic_kafka.errors import OffsetsError, OptionsError
from pyspark_dynamic_kafka.offset_spec import EARLIEST_POSITION, LATEST_POSITION, Position
from pyspark_dynamic_kafka.source.config.formats import FORMAT_OPTIONS
from pyspark_dynamic_kafka.source.config.options import OPTIONS, SourceOptions, parse_options
from pyspark_dynamic_kafka.source.config.validation import ENDING_KEYS, STARTING_KEYS


def test_defaults_and_lowercased_keys() -> None:
    parsed = parse_options(BASE)
    assert parsed.metadata_service == "file"
    assert parsed.metadata_options == {"path": "/tmp/x.yaml"}
    assert parsed.stream_ids == ("orders",)
    assert parsed.stream_pattern is None
    assert parsed.starting.default == LATEST_POSITION
    assert parsed.discovery_starting_offsets == "earliest"
    assert parsed.discovery_interval_ms == 10000
    assert parsed.discovery_failure_threshold == 1


def test_camel_case_keys_work_too() -> None:
    parsed = parse_options(
        {
            "metadataService": "file",
            "metadataService.path": "/p.yaml",
            "streamPattern": "^ord",
            "startingOffsets": "earliest",
            "metadataDiscoveryIntervalMs": "0",
            "kafka.fetch.min.bytes": "10",
        }
    )
    assert parsed.stream_pattern is not None and parsed.stream_pattern.search("orders")
    assert parsed.starting.default == EARLIEST_POSITION
    assert parsed.discovery_interval_ms == 0
    assert dict(parsed.kafka_properties) == {"fetch.min.bytes": "10"}


def test_stream_ids_are_split_and_deduplicated() -> None:
    parsed = parse_options({**BASE, "streamids": " orders, payments ,orders,"})
    assert parsed.stream_ids == ("orders", "payments")


def test_unknown_key_suggests_the_closest() -> None:
    message = rejection({**BASE, "startingoffset": "earliest"})
    message = message
    assert "'startingoffset'" in message
    assert "Did you mean 'startingOffsets'?" in message


def test_both_stream_ids_and_pattern_rejected() -> None:
    message = rejection({**BASE, "streampattern": "^o"})
    assert "streamIds='orders'" in message
    assert "streamPattern='^o'" in message


def test_neither_stream_ids_nor_pattern_rejected() -> None:
    with pytest.raises(OptionsError, match="exactly one of 'streamIds' and 'streamPattern'"):
        parse_options({"metadataservice": "file"})


def test_missing_metadata_service() -> None:
    with pytest.raises(OptionsError, match="'metadataService' is required"):
        parse_options({"streamids": "a"})


@pytest.mark.parametrize(
    "options",
    [
        {**BASE, "metadatadiscoveryintervalms": "soon"},
        {**BASE, "metadatadiscoveryfailurethreshold": "-1"},
        {**BASE, "discoverystartingoffsets": "middle"},
        {"metadataservice": "file", "streampattern": "("},
    ],
)
def test_bad_values_name_key_and_value(options: dict[str, str]) -> None:
    key, value = list(options.items())[-1]
    message = rejection(options)
    assert repr(value) in message
    assert key in message.lower()  # under its canonical spelling (metadataDiscoveryIntervalMs)


def test_bad_offsets_json_names_option_and_value() -> None:
    message = rejection(
        {**BASE, "startingoffsets": '{"east": {"orders": {"0": "x"}}}'}, OffsetsError
    )
    assert "startingOffsets" in message
    assert "'x'" in message
    message = rejection({**BASE, "startingoffsets": "{not json"}, OffsetsError)
    assert "{not json" in message


def test_sparks_offsets_json_is_recognised_and_shown_with_the_cluster_level() -> None:
    message = rejection({**BASE, "startingoffsets": '{"orders": {"0": 0}}'}, OffsetsError)
    assert "startingOffsets" in message
    assert "in Spark's form, topics first" in message
    assert '{"<cluster id>": {"orders": {"0": 0}}}' in message


def test_offsets_json_parsed() -> None:
    parsed = parse_options({**BASE, "startingoffsets": '{"east": {"orders": {"0": 23, "1": -2}}}'})
    spec = parsed.starting
    assert spec.specific == {
        ("east", "orders", 0): Position("offset", 23),
        ("east", "orders", 1): EARLIEST_POSITION,
    }
    assert spec.position(("east", "orders", 0), EARLIEST_POSITION) == Position("offset", 23)
    assert spec.position(("east", "orders", 7), LATEST_POSITION) == LATEST_POSITION


def test_forbidden_client_properties() -> None:
    with pytest.raises(OptionsError, match=r"kafka\.enable\.auto\.commit"):
        parse_options({**BASE, "kafka.enable.auto.commit": "true"})


def test_every_option_is_documented() -> None:
    for spec in OPTIONS.values():
        assert spec.doc and spec.key[0].islower()


def test_every_declared_option_fills_a_settings_attribute_or_a_rule() -> None:
    attrs = [spec.attr for spec in OPTIONS.values() if spec.attr is not None]
    assert len(attrs) == len(set(attrs))
    by_rules = {"starting", "ending", "metadata_options", "kafka_properties"}
    by_rules |= {"key_format", "value_format"}
    assert {f.name for f in fields(SourceOptions)} == set(attrs) | by_rules
    combined = {key for key, spec in OPTIONS.items() if spec.attr is None}
    formats = {spec.key for spec in FORMAT_OPTIONS if spec.attr is None}
    assert combined == set(STARTING_KEYS) | set(ENDING_KEYS) | formats


def test_defaults_come_from_the_declarations() -> None:
    parsed = parse_options(BASE)
    for spec in OPTIONS.values():
        if spec.attr is not None and spec.key.lower() not in BASE:
            expected = None if spec.default is None else spec.parse(spec.default)
            assert getattr(parsed, spec.attr) == expected, spec.key


@pytest.mark.parametrize(
    ("option", "value", "hint"),
    [
        ("startingOffsets", "earlist", "Did you mean 'earliest'?"),
        ("endingOffsets", "lates", "Did you mean 'latest'?"),
        ("discoveryStartingOffsets", "lastest", "(did you mean 'latest'?)"),
    ],
)
def test_position_values_get_a_suggestion(option: str, value: str, hint: str) -> None:
    base = {"metadataService": "file", "metadataService.path": "s.yaml", "streamIds": "a"}
    with pytest.raises(OptionsError) as raised:
        parse_options({**base, option: value}, "batch")
    assert f"'{value}'" in str(raised.value) and option in str(raised.value)
    assert hint in str(raised.value)
