"""The reference server's endpoints, in process (Starlette's TestClient), over a real file."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from starlette.testclient import TestClient
from tests.unit.conftest import DOCUMENT, SECRET

from pyspark_dynamic_kafka.metadata.file import load_metadata_file
from pyspark_dynamic_kafka.server.app import MAX_BODY_BYTES, create_app

WRITE = "write-token-0123456789"
READ = "read-token-9876543210"

AUTH = {"Authorization": f"Bearer {WRITE}"}


@pytest.fixture
def client(meta: Path) -> Iterator[TestClient]:
    with TestClient(create_app(meta, write_token=WRITE)) as test_client:
        yield test_client


# --- reads ----------------------------------------------------------------------------------


def test_health_needs_no_token(meta: Path) -> None:
    with TestClient(create_app(meta, read_token=READ)) as client:
        assert client.get("/v1/health").json() == {"status": "ok"}


def test_streams_answer_the_document_with_an_etag_then_304(client: TestClient) -> None:
    response = client.get("/v1/streams")
    assert response.status_code == 200
    assert response.json() == DOCUMENT
    etag = response.headers["etag"]
    assert response.headers["cache-control"] == "private, no-cache"
    again = client.get("/v1/streams", headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == etag
    assert client.get("/v1/streams", headers={"If-None-Match": '"other"'}).status_code == 200


def test_describe_by_ids_and_one_stream(client: TestClient) -> None:
    body = client.get("/v1/streams", params=[("id", "orders"), ("id", "nope")]).json()
    assert body == {
        "clusters": {"east": DOCUMENT["clusters"]["east"]},
        "streams": DOCUMENT["streams"],
    }
    assert client.get("/v1/streams/orders").json() == body
    missing = client.get("/v1/streams/nope")
    assert missing.status_code == 404
    assert "'nope'" in missing.json()["message"]


def test_cluster_status(client: TestClient) -> None:
    assert client.get("/v1/clusters/west").json()["active"] is True
    assert client.get("/v1/clusters/north").json() == {"clusterId": "north", "active": False}
    assert set(client.get("/v1/clusters").json()["clusters"]) == {"east", "west"}


def test_a_change_of_the_file_changes_the_etag(client: TestClient, meta: Path) -> None:
    etag = client.get("/v1/streams").headers["etag"]
    changed = {**DOCUMENT, "streams": {"orders": [{"cluster": "west", "topics": ["orders"]}]}}
    tmp = meta.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(changed))
    tmp.replace(meta)
    response = client.get("/v1/streams", headers={"If-None-Match": etag})
    assert response.status_code == 200
    assert response.json() == changed


def test_an_invalid_file_is_a_503_naming_the_problem(client: TestClient, meta: Path) -> None:
    meta.write_text("clusters: {}\nstreams:\n  orders: [{cluster: east, topics: [orders]}]\n")
    response = client.get("/v1/streams")
    assert response.status_code == 503
    assert "streams.orders[0].cluster: unknown cluster 'east'" in response.json()["message"]
    write = client.put("/v1/streams/orders", json=[], headers=AUTH)
    assert write.status_code == 503


# --- auth -----------------------------------------------------------------------------------


def test_reads_are_open_without_a_read_token_and_writes_need_the_write_token(
    client: TestClient, meta: Path
) -> None:
    before = meta.read_bytes()
    entries = [{"cluster": "west", "topics": ["orders"]}]
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": WRITE}):
        response = client.put("/v1/streams/orders", json=entries, headers=headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert WRITE not in response.text
    assert client.delete("/v1/streams/orders").status_code == 401
    assert client.put("/v1/clusters/x", json={}).status_code == 401
    assert meta.read_bytes() == before
    assert client.put("/v1/streams/orders", json=entries, headers=AUTH).status_code == 200


def test_read_token_protects_reads_and_may_not_write(meta: Path) -> None:
    with TestClient(create_app(meta, write_token=WRITE, read_token=READ)) as client:
        assert client.get("/v1/streams").status_code == 401
        assert client.get("/v1/clusters/east").status_code == 401
        read = {"Authorization": f"Bearer {READ}"}
        assert client.get("/v1/streams", headers=read).status_code == 200
        assert client.get("/v1/streams", headers=AUTH).status_code == 200  # writers read too
        refused = client.put("/v1/streams/orders", json=[], headers=read)
        assert refused.status_code == 403
        assert "only read" in refused.json()["message"]


def test_without_a_write_token_the_server_is_read_only(meta: Path) -> None:
    with TestClient(create_app(meta)) as client:
        response = client.put("/v1/streams/orders", json=[], headers=AUTH)
        assert response.status_code == 403
        assert "--token-file" in response.json()["message"]


def test_tokens_never_reach_the_logs(meta: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with TestClient(create_app(meta, write_token=WRITE, read_token=READ)) as client:
        client.get("/v1/streams", headers={"Authorization": "Bearer not-the-token"})
        client.put("/v1/streams/orders", json=[{"cluster": "nope", "topics": []}], headers=AUTH)
        client.put("/v1/streams/orders", json=[{"cluster": "west", "topics": ["o"]}], headers=AUTH)
    assert "Stream 'orders' replaced" in caplog.text
    for secret in (WRITE, READ, SECRET, "not-the-token"):
        assert secret not in caplog.text


# --- writes ---------------------------------------------------------------------------------


def test_put_stream_replaces_it_persists_and_answers_the_new_representation(
    client: TestClient, meta: Path
) -> None:
    entries = [{"cluster": "west", "topics": ["orders-v2"]}]
    response = client.put("/v1/streams/orders", json=entries, headers=AUTH)
    assert response.status_code == 200
    assert response.json()["streams"] == {"orders": entries}
    assert response.headers["etag"] == client.get("/v1/streams/orders").headers["etag"]
    assert load_metadata_file(meta).streams["orders"].clusters["west"].topics == {"orders-v2"}
    created = client.put("/v1/streams/refunds", json=entries, headers=AUTH)
    assert created.status_code == 201


def test_rejected_write_leaves_file_and_served_metadata_unchanged(
    client: TestClient, meta: Path
) -> None:
    before_file = meta.read_bytes()
    before = client.get("/v1/streams")
    bad = [{"cluster": "north", "topics": ["orders"]}, {"cluster": "west", "topics": "x"}]
    response = client.put("/v1/streams/orders", json=bad, headers=AUTH)
    assert response.status_code == 422
    body = response.json()
    assert body["message"].startswith("The edit was rejected and nothing was changed")
    assert any(p.startswith("streams.orders[0].cluster: unknown cluster") for p in body["problems"])
    assert any(p.startswith("streams.orders[1].topics: must be a list") for p in body["problems"])
    assert meta.read_bytes() == before_file
    after = client.get("/v1/streams", headers={"If-None-Match": before.headers["etag"]})
    assert after.status_code == 304


def test_bad_bodies(client: TestClient, meta: Path) -> None:
    before = meta.read_bytes()
    not_json = client.put("/v1/streams/orders", content=b"{", headers=AUTH)
    assert not_json.status_code == 400
    duplicate = client.put(
        "/v1/clusters/west",
        content=b'{"bootstrap.servers": "a:1", "bootstrap.servers": "b:2"}',
        headers=AUTH,
    )
    assert duplicate.status_code == 400
    assert "duplicate key" in duplicate.json()["message"]
    huge = client.put("/v1/streams/orders", content=b" " * (MAX_BODY_BYTES + 1), headers=AUTH)
    assert huge.status_code == 413
    assert meta.read_bytes() == before


def test_if_match_prevents_lost_updates(client: TestClient, meta: Path) -> None:
    etag = client.get("/v1/streams/orders").headers["etag"]
    first = [{"cluster": "west", "topics": ["orders"]}]
    second = [{"cluster": "east", "topics": ["late", "orders"]}]
    ok = client.put("/v1/streams/orders", json=first, headers={**AUTH, "If-Match": etag})
    assert ok.status_code == 200
    stale = client.put("/v1/streams/orders", json=second, headers={**AUTH, "If-Match": etag})
    assert stale.status_code == 412
    assert "changed since you read it" in stale.json()["message"]
    assert client.get("/v1/streams/orders").json()["streams"]["orders"] == first
    # Without If-Match the last write wins.
    assert client.put("/v1/streams/orders", json=second, headers=AUTH).status_code == 200
    assert client.get("/v1/streams/orders").json()["streams"]["orders"] == second


def test_writes_to_other_streams_do_not_invalidate_an_etag(client: TestClient) -> None:
    etag = client.get("/v1/streams/orders").headers["etag"]
    other = [{"cluster": "west", "topics": ["refunds"]}]
    assert client.put("/v1/streams/refunds", json=other, headers=AUTH).status_code == 201
    mine = [{"cluster": "west", "topics": ["orders"]}]
    response = client.put("/v1/streams/orders", json=mine, headers={**AUTH, "If-Match": etag})
    assert response.status_code == 200


def test_create_only_with_if_none_match_star(client: TestClient) -> None:
    entries = [{"cluster": "west", "topics": ["t"]}]
    headers = {**AUTH, "If-None-Match": "*"}
    assert client.put("/v1/streams/new", json=entries, headers=headers).status_code == 201
    assert client.put("/v1/streams/new", json=entries, headers=headers).status_code == 412
    assert (
        client.put("/v1/streams/x", json=entries, headers={**AUTH, "If-Match": "*"}).status_code
        == 412
    )


def test_delete_stream(client: TestClient, meta: Path) -> None:
    assert client.delete("/v1/streams/orders", headers=AUTH).status_code == 204
    assert client.get("/v1/streams/orders").status_code == 404
    assert "orders" not in load_metadata_file(meta).streams
    assert client.delete("/v1/streams/orders", headers=AUTH).status_code == 404


def test_add_replace_and_remove_clusters(client: TestClient, meta: Path) -> None:
    added = client.put("/v1/clusters/north", json={"bootstrap.servers": "h:9"}, headers=AUTH)
    assert added.status_code == 201
    assert added.json() == {
        "clusterId": "north",
        "active": True,
        "properties": {"bootstrap.servers": "h:9"},
    }
    etag = added.headers["etag"]
    replaced = client.put(
        "/v1/clusters/north",
        json={"bootstrap.servers": "h:10"},
        headers={**AUTH, "If-Match": etag},
    )
    assert replaced.status_code == 200
    in_use = client.delete("/v1/clusters/east", headers=AUTH)
    assert in_use.status_code == 422
    assert "still used by stream(s) orders" in in_use.json()["message"]
    assert client.delete("/v1/clusters/north", headers=AUTH).status_code == 204
    assert client.delete("/v1/clusters/north", headers=AUTH).status_code == 404
    assert set(load_metadata_file(meta).clusters) == {"east", "west"}
    invalid = client.put("/v1/clusters/west", json={"sasl.password": SECRET}, headers=AUTH)
    assert invalid.status_code == 422
    assert SECRET not in invalid.text


def test_unknown_routes_and_methods_answer_json_errors(client: TestClient) -> None:
    missing = client.get("/v2/streams")
    assert missing.status_code == 404 and "message" in missing.json()
    wrong = client.post("/v1/streams")
    assert wrong.status_code == 405
    assert "GET" in wrong.headers["allow"]
