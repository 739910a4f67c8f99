"""Each bug the property-based tests found, pinned by a plain example (test_fuzz_*.py find them;
these keep them fixed whatever the generators draw)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from pyspark_dynamic_kafka.errors import MetadataValidationError, OffsetsError, OptionsError
from pyspark_dynamic_kafka.metadata import (
    load_metadata_file,
    parse_metadata_document,
    write_metadata_file,
)
from pyspark_dynamic_kafka.metadata.http import HttpMetadataService
from pyspark_dynamic_kafka.metadata.http_api.transport import HttpRequest, HttpResponse
from pyspark_dynamic_kafka.metadata.http_api.wire import error_text, parse_cluster_status
from pyspark_dynamic_kafka.server.app import create_app
from pyspark_dynamic_kafka.source.checkpoint import decode
from pyspark_dynamic_kafka.source.config.options import parse_options
from pyspark_dynamic_kafka.source.config.position_options import parse_offsets_spec, parse_timestamp

HUGE = 10**5000
SECRET = "SENTINEL-pinned-secret-91ab"


def _document(**east: Any) -> dict[str, Any]:
    return {"clusters": {"east": {"bootstrap.servers": "h:1", **east}}, "streams": {}}


@pytest.mark.parametrize(
    ("document", "path"),
    [
        (_document(retries=HUGE), "clusters.east.retries"),
        ({"clusters": {HUGE: {"bootstrap.servers": "h:1"}}, "streams": {}}, "clusters"),
        ({"clusters": {}, "streams": {}, HUGE: 1}, '["<an integer of'),
        (_document(**{"bootstrap.servers": False}), 'clusters.east["bootstrap.servers"]'),
    ],
    ids=["huge-value", "huge-key", "huge-top-level-key", "boolean-bootstrap"],
)
def test_odd_values_are_validation_problems(document: dict[str, Any], path: str) -> None:
    with pytest.raises(MetadataValidationError) as caught:
        parse_metadata_document(document, "pinned")
    assert any(p.startswith(path) for p in caught.value.problems), caught.value.problems


def test_a_self_referencing_document_is_refused_not_recursed() -> None:
    streams: dict[str, Any] = {}
    streams["orders"] = streams
    with pytest.raises(MetadataValidationError, match=r"streams\.orders: must be a list"):
        parse_metadata_document({"clusters": {}, "streams": streams}, "pinned")


def test_a_starting_timestamp_beyond_int64_is_refused() -> None:
    document = {
        "clusters": {"east": {"bootstrap.servers": "h:1"}},
        "streams": {
            "s": [{"cluster": "east", "topics": [], "startingOffsets": {"timestamp": 2**63}}]
        },
    }
    with pytest.raises(MetadataValidationError, match=r"startingOffsets\.timestamp: must be"):
        parse_metadata_document(document, "pinned")


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("date.yaml", "clusters: {}\nstreams: {}\nwhen: 2020-13-01\n"),
        ("int.yaml", 'clusters: {}\nstreams: {a: !!int ""}\n'),
        ("stamp.yaml", "clusters: {}\nstreams: {a: !!timestamp x}\n"),
        ("digits.yaml", f"clusters: {{}}\nstreams: {{a: {'1' * 5000}}}\n"),
        ("digits.json", '{"clusters": {}, "streams": {"a": ' + "1" * 5000 + "}}"),
        ("deep.json", "[" * 100_000),
        ("deep.yaml", "[" * 1100),
    ],
)
def test_undecodable_files_are_validation_errors(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(MetadataValidationError) as caught:
        load_metadata_file(path)
    assert str(path) in str(caught.value)


def test_a_long_token_in_a_broken_file_is_reported_quickly(tmp_path: Path) -> None:
    # The secret scan of a syntax error took quadratic time on a run of key characters.
    path = tmp_path / "long.yaml"
    path.write_text("clusters: [\n" + "a" * 200_000 + "\n")
    started = time.monotonic()
    with pytest.raises(MetadataValidationError):
        load_metadata_file(path)
    assert time.monotonic() - started < 30  # seconds; it took hours before, milliseconds now


def test_a_secret_inside_a_flow_mapping_is_masked_in_a_syntax_error(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(f"clusters:\n  east: {{sasl.password: {SECRET}, !bad}}\nstreams: {{}}\n")
    with pytest.raises(MetadataValidationError) as caught:
        load_metadata_file(path)
    assert SECRET not in str(caught.value)


def test_ids_with_a_next_line_character_survive_a_yaml_write(tmp_path: Path) -> None:
    parsed = parse_metadata_document(
        {"clusters": {"east": {"bootstrap.servers": "h:1"}}, "streams": {"0\x850": []}}, "pinned"
    )
    path = tmp_path / "nel.yaml"
    write_metadata_file(path, parsed)
    assert load_metadata_file(path) == parsed


@pytest.mark.parametrize(
    "document",
    [
        {"version": HUGE},
        {"version": 1, "clusters": HUGE},
        {"version": 1, "clusters": {"c": {"t": {"0": HUGE}}}},
        {"version": 1, "clusters": {"c": {"t": {"0": 2**63}}}},
        {"version": 1, "clusters": {"c": {"t": {str(2**31): 5}}}},
        {"version": 1, "clusters": {"c": {"t": {"1": 5, "01": 6}}}},
    ],
    ids=["huge-version", "huge-clusters", "huge-offset", "int64", "int32-partition", "twice"],
)
def test_checkpointed_offsets_out_of_range_are_offsets_errors(document: dict[str, Any]) -> None:
    with pytest.raises(OffsetsError, match="heckpointed offset"):
        decode(document)


@pytest.mark.parametrize(
    "value",
    [
        "[" * 100_000,
        '{"c": {"t": {"0": ' + "1" * 5000 + "}}}",
        '{"c": {"t": {"0": 9223372036854775808}}}',
    ],
)
def test_offset_options_out_of_range_are_offsets_errors(value: str) -> None:
    with pytest.raises(OffsetsError, match="'startingOffsets'"):
        parse_offsets_spec(value, "startingOffsets")


def test_a_start_timestamp_beyond_int64_is_refused() -> None:
    with pytest.raises(OffsetsError, match="'startingTimestamp'"):
        parse_timestamp(str(2**63), "startingTimestamp")


@pytest.mark.parametrize("pattern", ["(" * 2000 + ")" * 2000, "a{99999999999999999999}"])
def test_an_unusable_stream_pattern_is_an_options_error(pattern: str) -> None:
    with pytest.raises(OptionsError, match="'streamPattern'"):
        parse_options({"metadataService": "file", "streamPattern": pattern})


def test_an_error_answer_quoting_client_properties_hides_their_secrets() -> None:
    body = f'{{"clusters": {{"east": {{"bootstrap.servers": "h", "sasl.password": "{SECRET}"}}}}}}'

    def transport(request: HttpRequest) -> HttpResponse:
        return HttpResponse(500, {}, body.encode())

    service = HttpMetadataService("http://127.0.0.1:1", transport=transport)
    with pytest.raises(Exception) as caught:
        service.get_all_streams()
    assert SECRET not in str(caught.value)
    assert "******" in str(caught.value)
    assert SECRET not in error_text(f"sasl.password: {SECRET}".encode())


def test_answers_nested_too_deeply_or_too_long_are_metadata_errors() -> None:
    def transport(request: HttpRequest) -> HttpResponse:
        return HttpResponse(200, {}, b"[" * 100_000)

    with pytest.raises(MetadataValidationError, match="nested too deeply"):
        HttpMetadataService("http://127.0.0.1:1", transport=transport).get_all_streams()
    with pytest.raises(MetadataValidationError, match="clusterId"):
        parse_cluster_status({"clusterId": HUGE, "active": True}, "east", "pinned")


@pytest.fixture
def client(tmp_path: Path) -> Any:
    meta = tmp_path / "streams.yaml"
    meta.write_text("clusters: {east: {bootstrap.servers: 'h:1'}}\nstreams: {s: []}\n")
    with TestClient(create_app(meta, write_token="w")) as test_client:
        yield test_client


def test_server_answers_what_the_contract_lists(client: TestClient) -> None:
    auth = {"Authorization": "Bearer w"}
    assert client.get("/v1/streams?id=").status_code == 400
    assert client.get("/v1/clusters/a%0Ab").json() == {"clusterId": "a\nb", "active": False}
    assert client.delete("/v1/streams/s", headers={**auth, "If-Match": ""}).status_code == 400
    stale_invalid = client.put(
        "/v1/streams/s", json=[{"cluster": 1}], headers={**auth, "If-Match": '"old"'}
    )
    assert stale_invalid.status_code == 422
    stale_valid = client.put(
        "/v1/streams/s",
        json=[{"cluster": "east", "topics": []}],
        headers={**auth, "If-Match": '"old"'},
    )
    assert stale_valid.status_code == 412
