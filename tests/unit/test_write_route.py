"""The metadata's ``write: true`` marker and the sink's write route resolved from it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.testclient import TestClient
from tests.unit.conftest import DOCUMENT, SECRET

from pyspark_dynamic_kafka.cli import main
from pyspark_dynamic_kafka.errors import MetadataValidationError, WriteRouteError
from pyspark_dynamic_kafka.metadata.document import (
    dump_metadata_document,
    parse_metadata_document,
    validate_metadata_document,
)
from pyspark_dynamic_kafka.metadata.editing.edit import move_stream
from pyspark_dynamic_kafka.metadata.model import ClusterMetadata, KafkaStream
from pyspark_dynamic_kafka.server.app import create_app
from pyspark_dynamic_kafka.sink.route import WriteRoute, resolve_write_route

CLUSTERS = {
    "east": {"bootstrap.servers": "127.0.0.1:1", "sasl.password": SECRET},
    "west": {"bootstrap.servers": "127.0.0.1:2"},
}


def _document(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"clusters": copy.deepcopy(CLUSTERS), "streams": {"orders": list(entries)}}


def _streams(*entries: dict[str, Any]) -> dict[str, KafkaStream]:
    return dict(parse_metadata_document(_document(*entries), "test").streams)


# --- the metadata field -----------------------------------------------------------------------


def test_write_marks_one_cluster_and_dumps_back() -> None:
    document = _document(
        {"cluster": "east", "topics": ["orders"]},
        {"cluster": "west", "topics": ["orders-v2"], "write": True},
    )
    parsed = parse_metadata_document(document, "test")
    clusters = parsed.streams["orders"].clusters
    assert (clusters["east"].write, clusters["west"].write) == (False, True)
    assert dump_metadata_document(parsed) == document
    assert parse_metadata_document(dump_metadata_document(parsed), "again") == parsed


def test_documents_without_write_are_unchanged() -> None:
    parsed = parse_metadata_document(DOCUMENT, "old")
    assert dump_metadata_document(parsed) == DOCUMENT
    assert not any(c.write for s in parsed.streams.values() for c in s.clusters.values())
    explicit_false = _document({"cluster": "east", "topics": ["orders"], "write": False})
    dumped = dump_metadata_document(parse_metadata_document(explicit_false, "test"))
    assert dumped["streams"]["orders"] == [{"cluster": "east", "topics": ["orders"]}]


def test_merged_entries_of_one_cluster_are_marked_when_any_is() -> None:
    streams = _streams(
        {"cluster": "east", "topics": ["a"]},
        {"cluster": "east", "topics": ["b"], "write": True},
        {"cluster": "west", "topics": ["a"]},
    )
    assert streams["orders"].clusters["east"].write


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        (
            [{"cluster": "east", "topics": ["a"], "write": "yes"}],
            "streams.orders[0].write: must be true or false (true marks the cluster the stream's "
            "writers produce to), got a string 'yes'.",
        ),
        (
            [
                {"cluster": "east", "topics": ["a"], "write": True},
                {"cluster": "west", "topics": ["a"], "write": True},
            ],
            "streams.orders: more than one cluster is marked 'write: true' ('east', 'west'): a "
            "stream is written to one cluster at a time; keep the mark on one entry.",
        ),
        (
            [{"cluster": "east", "topics": ["a"], "writes": True}],
            "streams.orders[0].writes: unknown key 'writes'. Did you mean 'write'? Allowed keys "
            "in a stream entry: cluster, topics, startingOffsets, write.",
        ),
    ],
)
def test_bad_write_values_are_named_with_their_path(
    entries: list[dict[str, Any]], expected: str
) -> None:
    problems = validate_metadata_document(_document(*entries), "test")
    assert problems == [expected]
    with pytest.raises(MetadataValidationError) as caught:
        parse_metadata_document(_document(*entries), "test")
    assert SECRET not in str(caught.value)


def test_model_refuses_a_non_boolean_write() -> None:
    with pytest.raises(MetadataValidationError, match=r"ClusterMetadata\.write must be True or"):
        ClusterMetadata(frozenset({"a"}), {"bootstrap.servers": "x:1"}, write=1)  # type: ignore[arg-type]


def test_move_carries_the_write_marker_with_the_topics() -> None:
    parsed = parse_metadata_document(
        _document({"cluster": "east", "topics": ["orders"], "write": True}), "test"
    )
    moved = move_stream(parsed, "orders", "east", "west")
    assert dump_metadata_document(moved)["streams"]["orders"] == [
        {"cluster": "west", "topics": ["orders"], "write": True}
    ]


def test_validate_command_reports_a_bad_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "streams.yaml"
    path.write_text(yaml.safe_dump(_document({"cluster": "east", "topics": ["a"], "write": 1})))
    assert main(["validate", str(path)]) == 1
    err = capsys.readouterr().err
    assert "streams.orders[0].write: must be true or false" in err
    assert SECRET not in err
    path.write_text(yaml.safe_dump(_document({"cluster": "east", "topics": ["a"], "write": True})))
    assert main(["validate", str(path)]) == 0


def test_http_contract_serves_and_accepts_the_marker(tmp_path: Path) -> None:
    meta = tmp_path / "streams.yaml"
    meta.write_text(yaml.safe_dump(_document({"cluster": "east", "topics": ["orders"]})))
    auth = {"Authorization": "Bearer write-token-0123456789"}
    with TestClient(create_app(meta, write_token="write-token-0123456789")) as client:
        entries = [
            {"cluster": "east", "topics": ["orders"]},
            {"cluster": "west", "topics": ["orders"], "write": True},
        ]
        assert client.put("/v1/streams/orders", json=entries, headers=auth).status_code == 200
        assert client.get("/v1/streams/orders").json()["streams"]["orders"] == entries
        bad = client.put(
            "/v1/streams/orders",
            json=[{"cluster": "east", "topics": ["orders"], "write": "true"}],
            headers=auth,
        )
        assert bad.status_code == 422
        assert "streams.orders[0].write: must be true or false" in bad.text


# --- the route ----------------------------------------------------------------------------------


def test_route_is_the_marked_cluster() -> None:
    streams = _streams(
        {"cluster": "east", "topics": ["orders"]},
        {"cluster": "west", "topics": ["orders-v2"], "write": True},
    )
    route = resolve_write_route(streams, "orders")
    assert route == WriteRoute("orders", "west", frozenset({"orders-v2"}), route.properties)
    assert dict(route.properties) == CLUSTERS["west"]
    assert route.topic_of(None) == "orders-v2"
    assert route.topic_of("orders-v2") == "orders-v2"


def test_route_without_a_marker_is_the_only_cluster() -> None:
    route = resolve_write_route(_streams({"cluster": "east", "topics": ["a", "b"]}), "orders")
    assert (route.cluster_id, route.topics, route.default_topic) == ("east", {"a", "b"}, None)
    assert SECRET not in repr(route)
    with pytest.raises(WriteRouteError) as caught:
        route.topic_of(None)
    assert str(caught.value) == (
        "A row has no topic and the write route stream 'orders' -> cluster 'east' (topics: "
        "'a', 'b') has several topics: add a 'topic' column naming one of them."
    )


def test_a_topic_outside_the_route_is_named() -> None:
    route = resolve_write_route(_streams({"cluster": "east", "topics": ["a"]}), "orders")
    with pytest.raises(WriteRouteError) as caught:
        route.topic_of("payments")
    assert str(caught.value) == (
        "A row's topic 'payments' is not in the write route stream 'orders' -> cluster 'east' "
        "(topics: 'a'): a 'topic' value must name one of the route's topics (or drop the "
        "column)."
    )


def test_ambiguous_unknown_and_empty_routes_are_clear_errors() -> None:
    two = _streams({"cluster": "east", "topics": ["a"]}, {"cluster": "west", "topics": ["a"]})
    with pytest.raises(WriteRouteError) as caught:
        resolve_write_route(two, "orders")
    assert str(caught.value) == (
        "Ambiguous write route for stream 'orders': it is on clusters 'east', 'west' and none of "
        "its clusters is marked 'write: true'. Mark exactly one entry of the stream with "
        "'write: true' in the metadata."
    )
    with pytest.raises(
        WriteRouteError, match=r"Unknown stream 'refunds'.*streams it described: 'orders'"
    ):
        resolve_write_route(two, "refunds")
    empty = _streams({"cluster": "east", "topics": [], "write": True})
    with pytest.raises(WriteRouteError, match="cluster 'east', where the stream has no topic"):
        resolve_write_route(empty, "orders")
    with pytest.raises(WriteRouteError, match="is on no cluster"):
        resolve_write_route({"orders": KafkaStream("orders", {})}, "orders")
    # Two marks from a service that does not validate documents (a user class) are ambiguous too.
    marked = ClusterMetadata(frozenset({"a"}), {"bootstrap.servers": "x:1"}, write=True)
    stream = KafkaStream("orders", {"east": marked, "west": marked})
    with pytest.raises(WriteRouteError, match="2 of its clusters are marked"):
        resolve_write_route({"orders": stream}, "orders")
