"""Property-based tests of the HTTP contract's bodies, both ways.

- What the source reads: any answer of a service (status, body bytes) makes
  ``HttpMetadataService`` return metadata or raise a ``MetadataError`` naming the URL; never
  another exception, never the bearer token nor a cluster's secret. A misbehaving service is
  what no real part here produces on demand, so a transport returns the fuzzed answers.
- What the reference server accepts: any PUT body (a stream's entries, a cluster's properties)
  gives the edited metadata or a ``MetadataValidationError`` listing paths, never a secret.
- Round trips: the bodies the server builds parse back to the same metadata (document -> model
  -> body -> model), and the cluster status body to the same flag.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.unit.fuzz_documents import broken_values, corrupt, ids, valid_documents
from tests.unit.fuzz_support import (
    TOKEN,
    assert_no_secret,
    deep_nesting,
    json_values,
    mutated,
    secrets_still_secret,
)

from pyspark_dynamic_kafka.errors import MetadataError, MetadataValidationError
from pyspark_dynamic_kafka.metadata import parse_metadata_document
from pyspark_dynamic_kafka.metadata.editing.edit import put_cluster, replace_stream
from pyspark_dynamic_kafka.metadata.http import HttpMetadataService
from pyspark_dynamic_kafka.metadata.http_api.transport import HttpRequest, HttpResponse
from pyspark_dynamic_kafka.metadata.http_api.wire import (
    cluster_body,
    compute_etag,
    parse_cluster_status,
    stream_body,
    streams_body,
)

URL = "http://127.0.0.1:1"


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    """A response body: a document (valid or broken) as JSON, edited bytes, or anything."""
    how = draw(st.sampled_from(["document", "broken", "edited", "nested", "bytes", "echo"]))
    if how == "bytes":
        return draw(st.binary(max_size=40))
    if how == "nested":
        return draw(deep_nesting()).encode()
    if how == "echo":  # an error page quoting the request, token included
        return json.dumps({"message": f"bad token Bearer {TOKEN}", "problems": [TOKEN]}).encode()
    document: Any = draw(valid_documents())
    if how != "document":
        document = corrupt(document, draw(st.data()))
    try:
        text = json.dumps(document, default=repr, skipkeys=True)
    except (ValueError, RecursionError):
        text = "{" + "1" * 5000 + "}"
    if how == "edited":
        text = mutated(text, draw(st.data()), '{}[],:"01-eE \\u')
    return text.encode("utf-8", errors="surrogatepass")


@st.composite
def answers(draw: st.DrawFn) -> HttpResponse:
    status = draw(st.sampled_from([200, 200, 200, 304, 404, 412, 422, 500, 503, 401, 302]))
    headers = draw(st.sampled_from([{}, {"etag": '"e1"'}, {"etag": ""}]))
    return HttpResponse(status, headers, draw(bodies()))


@given(answer=answers(), call=st.sampled_from(["all", "describe", "active", "stream"]))
def test_any_service_answer_gives_metadata_or_a_metadata_error(
    answer: HttpResponse, call: str
) -> None:
    def transport(request: HttpRequest) -> HttpResponse:
        return answer

    service = HttpMetadataService(URL, TOKEN, transport=transport)
    try:
        if call == "all":
            result: object = service.get_all_streams()
        elif call == "describe":
            result = service.describe_streams(["east", "orders", "b.c"])
        elif call == "active":
            result = service.is_cluster_active("east")
        else:
            result = service.get_stream("east")
    except MetadataError as error:
        message = str(error)
        assert URL in message, message
        if secrets_still_secret(answer.body.decode("utf-8", errors="replace")):
            assert_no_secret(message)
        assert len(message) < 3000, "an error quotes at most 2,000 characters of a body"
    else:
        assert_no_secret(repr(result))


@given(body=st.one_of(json_values(), st.fixed_dictionaries({"clusterId": ids | json_values()})))
def test_any_cluster_status_body_is_read_or_refused(body: object) -> None:
    try:
        active = parse_cluster_status(body, "east", URL)
    except MetadataValidationError as error:
        assert URL in str(error)
        assert error.problems
    else:
        assert isinstance(active, bool)


@pytest.fixture(scope="module")
def base() -> Any:
    return parse_metadata_document(
        {
            "clusters": {
                "east": {
                    "bootstrap.servers": "h:1",
                    "sasl.password": "SENTINEL-sasl-password-5b1f0c",
                },
                "west": {"bootstrap.servers": "h:2"},
            },
            "streams": {"orders": [{"cluster": "east", "topics": ["orders"]}]},
        },
        "base",
    )


@given(
    target=st.sampled_from(["stream", "cluster"]),
    resource=st.one_of(ids, st.sampled_from(["orders", "east", " x", ""])),
    document=valid_documents(),
    data=st.data(),
)
def test_any_put_body_gives_valid_metadata_or_paths(
    base: Any, target: str, resource: str, document: dict[str, Any], data: st.DataObject
) -> None:
    if target == "stream":
        body = corrupt(next(iter(document["streams"].values()), []), data)
        edit = replace_stream
    else:
        body = corrupt(next(iter(document["clusters"].values()), {}), data)
        edit = put_cluster
    body = data.draw(st.sampled_from([body, body, data.draw(broken_values)]), label="body")
    try:
        edited = edit(base, resource, body, "PUT /v1/x")
    except MetadataValidationError as error:
        assert error.problems, str(error)
        assert all(p.startswith(("clusters", "streams")) for p in error.problems), error.problems
        assert_no_secret(str(error))
    else:
        assert parse_metadata_document(streams_body(edited), "again") == edited


@given(document=valid_documents(), data=st.data())
def test_contract_bodies_round_trip(document: dict[str, Any], data: st.DataObject) -> None:
    parsed = parse_metadata_document(document, "doc")
    assert parse_metadata_document(streams_body(parsed), URL) == parsed
    assert compute_etag(streams_body(parsed)) == compute_etag(
        json.loads(json.dumps(streams_body(parsed)))
    )
    known = sorted(parsed.streams)
    wanted = data.draw(st.lists(st.sampled_from([*known, "unknown"]), max_size=3), label="ids")
    subset = parse_metadata_document(streams_body(parsed, wanted), URL)
    assert set(subset.streams) == (set(wanted) & set(known) if wanted else set(known))
    for sid in subset.streams:
        assert subset.streams[sid] == parsed.streams[sid]
        one = stream_body(parsed, sid)
        assert one is not None
        assert parse_metadata_document(one, URL).streams == {sid: parsed.streams[sid]}
    for cid in [*parsed.clusters, "unknown"]:
        assert parse_cluster_status(cluster_body(parsed, cid), cid, URL) is (cid in parsed.clusters)
