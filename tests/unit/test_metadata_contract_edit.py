"""The HTTP contract's pure parts (bodies, ETags, conditions) and the metadata edits."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from tests.unit.conftest import DOCUMENT as ORDERS_DOCUMENT
from tests.unit.conftest import SECRET

from pyspark_dynamic_kafka.errors import (
    MetadataError,
    MetadataNotFoundError,
    MetadataValidationError,
)
from pyspark_dynamic_kafka.metadata.document import ParsedMetadata, parse_metadata_document
from pyspark_dynamic_kafka.metadata.editing.edit import (
    edit_metadata_file,
    move_stream,
    moved_entries,
    put_cluster,
    remove_cluster,
    remove_stream,
    replace_stream,
)
from pyspark_dynamic_kafka.metadata.file import load_metadata_file
from pyspark_dynamic_kafka.metadata.http_api.wire import (
    cluster_body,
    clusters_body,
    compute_etag,
    error_body,
    error_text,
    etag_matches,
    parse_cluster_status,
    stream_body,
    stream_path,
    streams_body,
)

DOCUMENT: dict[str, Any] = {
    "clusters": {**ORDERS_DOCUMENT["clusters"], "south": {"bootstrap.servers": "127.0.0.1:3"}},
    "streams": {
        "orders": [{"cluster": "east", "topics": ["orders"], "startingOffsets": "earliest"}],
        "payments": [
            {"cluster": "east", "topics": ["payments-v1"]},
            {"cluster": "west", "topics": ["payments"]},
        ],
    },
}
"""The shared document's clusters and a third, south; orders starts at the earliest offsets, and
payments is on two clusters."""


@pytest.fixture
def document() -> dict[str, Any]:
    return DOCUMENT


def _parsed() -> ParsedMetadata:
    return parse_metadata_document(DOCUMENT, "test")


# --- bodies ---------------------------------------------------------------------------------


def test_streams_body_is_the_document_and_parses_back() -> None:
    parsed = _parsed()
    body = streams_body(parsed)
    assert set(body["clusters"]) == {"east", "west", "south"}
    assert parse_metadata_document(body, "body") == parsed


def test_streams_body_of_ids_holds_known_streams_and_only_their_clusters() -> None:
    body = streams_body(_parsed(), ["orders", "nope"])
    assert list(body["streams"]) == ["orders"]
    assert list(body["clusters"]) == ["east"]
    assert body["streams"]["orders"][0]["startingOffsets"] == "earliest"
    parse_metadata_document(body, "body")  # valid on its own


def test_stream_body_and_cluster_bodies() -> None:
    parsed = _parsed()
    assert stream_body(parsed, "nope") is None
    one = stream_body(parsed, "payments")
    assert one is not None and set(one["clusters"]) == {"east", "west"}
    assert cluster_body(parsed, "west") == {
        "clusterId": "west",
        "active": True,
        "properties": {"bootstrap.servers": "127.0.0.1:2"},
    }
    assert cluster_body(parsed, "north") == {"clusterId": "north", "active": False}
    assert set(clusters_body(parsed)["clusters"]) == {"east", "west", "south"}


def test_stream_path_encodes_the_id() -> None:
    assert stream_path("a/b c") == "/v1/streams/a%2Fb%20c"


# --- ETags and conditions -------------------------------------------------------------------


def test_etag_is_quoted_and_ignores_key_order_but_not_content() -> None:
    a = {"x": 1, "y": [1, 2]}
    b = json.loads('{"y": [1, 2], "x": 1}')
    assert compute_etag(a) == compute_etag(b)
    assert compute_etag(a) != compute_etag({"x": 1, "y": [2, 1]})
    assert compute_etag(a).startswith('"') and compute_etag(a).endswith('"')


@pytest.mark.parametrize(
    ("header", "weak", "exists", "expected"),
    [
        (None, True, True, False),
        ("", True, True, False),
        ('"abc"', True, True, True),
        ('"abc"', False, True, True),
        ('W/"abc"', True, True, True),
        ('W/"abc"', False, True, False),  # If-Match compares strongly
        ('"x", "abc"', False, True, True),
        ('"x","y"', True, True, False),
        ("*", False, True, True),
        ("*", False, False, False),
        ("abc", True, True, False),  # unquoted is not the same tag
    ],
)
def test_etag_matches(header: str | None, weak: bool, exists: bool, expected: bool) -> None:
    assert etag_matches(header, '"abc"', weak=weak, exists=exists) is expected


def test_parse_cluster_status_checks_the_body() -> None:
    assert parse_cluster_status({"clusterId": "east", "active": True}, "east", "u") is True
    assert parse_cluster_status({"clusterId": "east", "active": False}, "east", "u") is False
    with pytest.raises(MetadataValidationError, match=r"clusterId: must be 'east'"):
        parse_cluster_status({"clusterId": "west", "active": True}, "east", "u")
    with pytest.raises(MetadataValidationError, match=r"active: must be true or false"):
        parse_cluster_status({"clusterId": "east", "active": "yes"}, "east", "u")
    with pytest.raises(MetadataValidationError, match=r"must be an object"):
        parse_cluster_status([1], "east", "u")


def test_error_text_reads_error_bodies_and_falls_back_to_raw_text() -> None:
    body = json.dumps(error_body("rejected", ["a: bad", "b: worse"])).encode()
    assert error_text(body) == "rejected\n  - a: bad\n  - b: worse"
    assert error_text(b"<html>502 Bad Gateway</html>") == "<html>502 Bad Gateway</html>"
    assert len(error_text(b"x" * 5000, limit=100)) == 100


# --- edits ----------------------------------------------------------------------------------


def test_replace_stream_adds_or_replaces_and_leaves_the_input_alone() -> None:
    parsed = _parsed()
    edited = replace_stream(parsed, "refunds", [{"cluster": "south", "topics": ["refunds"]}])
    assert edited.streams["refunds"].clusters["south"].topics == {"refunds"}
    assert "refunds" not in parsed.streams
    edited = replace_stream(parsed, "orders", [{"cluster": "west", "topics": ["orders"]}])
    assert set(edited.streams["orders"].clusters) == {"west"}
    assert set(parsed.streams["orders"].clusters) == {"east"}


def test_replace_stream_lists_every_problem_with_its_path_and_hides_secrets() -> None:
    entries = [{"cluster": "north", "topics": "orders"}, {"cluster": "east", "topic": [SECRET]}]
    with pytest.raises(MetadataValidationError) as info:
        replace_stream(_parsed(), "orders", entries, "PUT /v1/streams/orders")
    problems = info.value.problems
    assert any(p.startswith("streams.orders[0].cluster: unknown cluster 'north'") for p in problems)
    assert any(p.startswith("streams.orders[0].topics: must be a list") for p in problems)
    assert any(p.startswith("streams.orders[1].topic: unknown key") for p in problems)
    assert any(p.startswith("streams.orders[1]: missing required key 'topics'") for p in problems)
    assert "PUT /v1/streams/orders" in str(info.value)
    assert SECRET not in str(info.value)


def test_remove_stream_and_unknown_stream() -> None:
    assert "orders" not in remove_stream(_parsed(), "orders").streams
    with pytest.raises(MetadataNotFoundError, match=r"'nope'.*known streams: 'orders'"):
        remove_stream(_parsed(), "nope")


def test_put_cluster_adds_and_replaces_properties_of_its_streams() -> None:
    edited = put_cluster(_parsed(), "north", {"bootstrap.servers": "127.0.0.1:4", "x": 1})
    assert edited.clusters["north"] == {"bootstrap.servers": "127.0.0.1:4", "x": "1"}
    edited = put_cluster(_parsed(), "west", {"bootstrap.servers": "10.0.0.9:9092"})
    assert edited.streams["payments"].clusters["west"].bootstrap_servers == "10.0.0.9:9092"
    with pytest.raises(MetadataValidationError, match=r"clusters\.west: missing required"):
        put_cluster(_parsed(), "west", {"sasl.password": SECRET})


def test_remove_cluster_refuses_while_a_stream_uses_it() -> None:
    assert "south" not in remove_cluster(_parsed(), "south").clusters
    with pytest.raises(
        MetadataValidationError, match=r"still used by stream\(s\) orders, payments"
    ):
        remove_cluster(_parsed(), "east")
    with pytest.raises(MetadataNotFoundError, match=r"'north'"):
        remove_cluster(_parsed(), "north")


def test_move_stream_to_a_new_cluster_keeps_topics_and_starting_offsets() -> None:
    moved = move_stream(_parsed(), "orders", "east", "west")
    assert set(moved.streams["orders"].clusters) == {"west"}
    assert moved.streams["orders"].clusters["west"].topics == {"orders"}
    assert moved.starting_offsets[("orders", "west")].kind == "earliest"
    assert moved.streams["payments"] == _parsed().streams["payments"]


def test_move_stream_onto_a_cluster_it_already_uses_merges_topics() -> None:
    moved = move_stream(_parsed(), "payments", "east", "west")
    assert set(moved.streams["payments"].clusters) == {"west"}
    assert moved.streams["payments"].clusters["west"].topics == {"payments", "payments-v1"}


def test_moved_entries_keeps_the_position_and_other_entries() -> None:
    entries = [
        {"cluster": "a", "topics": ["t1"]},
        {"cluster": "b", "topics": ["t2"]},
        {"cluster": "c", "topics": ["t3"], "startingOffsets": "latest"},
    ]
    assert moved_entries(entries, "s", "a", "d") == [
        {"cluster": "d", "topics": ["t1"]},
        {"cluster": "b", "topics": ["t2"]},
        {"cluster": "c", "topics": ["t3"], "startingOffsets": "latest"},
    ]
    assert moved_entries(entries, "s", "a", "c") == [
        {"cluster": "c", "topics": ["t3", "t1"], "startingOffsets": "latest"},
        {"cluster": "b", "topics": ["t2"]},
    ]
    assert entries[0] == {"cluster": "a", "topics": ["t1"]}  # input untouched


@pytest.mark.parametrize(
    ("stream", "source", "target", "error", "match"),
    [
        ("nope", "east", "west", MetadataNotFoundError, r"Stream 'nope' is not in the metadata"),
        ("orders", "west", "south", MetadataValidationError, r"no entry on cluster 'west'"),
        ("orders", "east", "east", MetadataValidationError, r"to itself"),
        ("orders", "east", "north", MetadataValidationError, r"'north'.*Add the cluster first"),
    ],
)
def test_move_stream_errors(
    stream: str, source: str, target: str, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        move_stream(_parsed(), stream, source, target)


def test_edit_metadata_file_writes_atomically_and_a_failed_edit_changes_nothing(
    tmp_path: Path, meta: Path
) -> None:
    path = meta
    os.chmod(path, 0o640)
    before = path.read_bytes()
    with pytest.raises(MetadataValidationError):
        edit_metadata_file(path, lambda p: move_stream(p, "orders", "east", "north"))
    assert path.read_bytes() == before
    inode = path.stat().st_ino
    edit_metadata_file(path, lambda p: move_stream(p, "orders", "east", "west"))
    assert path.stat().st_ino != inode  # replaced by a rename, not rewritten in place
    assert path.stat().st_mode & 0o777 == 0o640
    assert set(load_metadata_file(path).streams["orders"].clusters) == {"west"}
    assert sorted(p.name for p in tmp_path.iterdir()) == [".streams.yaml.lock", "streams.yaml"]


def test_edit_metadata_file_of_a_broken_file_raises(tmp_path: Path) -> None:
    path = tmp_path / "streams.json"
    path.write_text("{")
    with pytest.raises(MetadataError, match=r"JSON syntax error"):
        edit_metadata_file(path, lambda p: p)
    assert path.read_text() == "{"
