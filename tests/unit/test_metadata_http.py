"""The HTTP metadata client: contract, ETag cache, failures as discovery sees them, secrets.

Most tests run the client against the reference server's app in process (a transport that
hands requests to Starlette's TestClient); the socket-level ones (timeouts, refused connections,
TLS, redirects) use a real uvicorn server in a thread on a free loopback port.
"""

from __future__ import annotations

import logging
import pickle
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
import yaml
from starlette.applications import Starlette
from starlette.responses import RedirectResponse
from starlette.routing import Route
from starlette.testclient import TestClient
from tests.unit.conftest import DOCUMENT as ORDERS_DOCUMENT
from tests.unit.conftest import SECRET

from pyspark_dynamic_kafka import errors
from pyspark_dynamic_kafka.metadata.editing.edit import moved_entries
from pyspark_dynamic_kafka.metadata.factory import create_metadata_service
from pyspark_dynamic_kafka.metadata.http import STATUS_REUSE_SECONDS, HttpMetadataService
from pyspark_dynamic_kafka.metadata.http_api.transport import HttpRequest, HttpResponse
from pyspark_dynamic_kafka.server.app import create_app
from pyspark_dynamic_kafka.source.config.options import parse_options
from pyspark_dynamic_kafka.source.driver.discovery import Discovery

TOKEN = "client-token-0123456789abcdef"
URL = "http://metadata.test"

DOCUMENT: dict[str, Any] = {
    **ORDERS_DOCUMENT,
    "streams": {
        **ORDERS_DOCUMENT["streams"],
        "payments": [{"cluster": "west", "topics": ["payments"]}],
    },
}
"""The shared document with a second stream, payments on west."""


class AppTransport:
    """Sends the client's requests to an ASGI app in process and records them.

    ``override`` (when set) answers instead of the app: return a response or raise.
    """

    def __init__(self, app: Starlette) -> None:
        self.client = TestClient(app)
        self.calls: list[tuple[str, str, int, dict[str, str]]] = []
        self.override: Callable[[HttpRequest], HttpResponse] | None = None

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path = request.url[len(URL) :]
        if self.override is not None:
            response = self.override(request)
        else:
            answer = self.client.request(
                request.method, path, headers=dict(request.headers), content=request.body
            )
            headers = {k.lower(): v for k, v in answer.headers.items()}
            response = HttpResponse(answer.status_code, headers, answer.content)
        self.calls.append((request.method, path, response.status, dict(request.headers)))
        return response


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def document() -> dict[str, Any]:
    return DOCUMENT


@pytest.fixture
def transport(meta: Path) -> AppTransport:
    return AppTransport(create_app(meta, write_token=TOKEN, read_token=TOKEN))


def _service(transport: AppTransport, clock: Clock | None = None) -> HttpMetadataService:
    return HttpMetadataService(URL, TOKEN, transport=transport, clock=clock or Clock())


def _rewrite(meta: Path, document: dict[str, Any]) -> None:
    tmp = meta.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(document))
    tmp.replace(meta)


def _discovery(service: HttpMetadataService, **options: str) -> Discovery:
    parsed = parse_options(
        {
            "metadataservice": "http",
            "metadataservice.url": URL,
            "metadatadiscoveryintervalms": "0",
            **options,
        }
    )
    discovery = Discovery(parsed)
    discovery._service = service
    return discovery


# --- reads ----------------------------------------------------------------------------------


def test_streams_and_cluster_status(transport: AppTransport) -> None:
    service = _service(transport)
    assert {s.stream_id for s in service.get_all_streams()} == {"orders", "payments"}
    described = service.describe_streams(["orders", "nope"])
    assert list(described) == ["orders"]
    east = described["orders"].clusters["east"]
    assert east.topics == {"orders"} and east.properties["sasl.password"] == SECRET
    assert service.describe_streams([]) == {}
    assert all(headers["Authorization"] == f"Bearer {TOKEN}" for *_, headers in transport.calls)


def test_unchanged_metadata_costs_one_304_per_discovery(
    transport: AppTransport, meta: Path
) -> None:
    discovery = _discovery(_service(transport), streamids="orders,payments")
    first = discovery.current()
    assert set(first) == {"east", "west"}
    assert [(m, p, s) for m, p, s, _ in transport.calls] == [
        ("GET", "/v1/streams?id=orders&id=payments", 200)
    ]
    etag = transport.client.get(
        "/v1/streams?id=orders&id=payments", headers={"Authorization": f"Bearer {TOKEN}"}
    ).headers["etag"]
    for _ in range(3):
        transport.calls.clear()
        assert discovery.current() == first
        assert [(m, p, s) for m, p, s, _ in transport.calls] == [
            ("GET", "/v1/streams?id=orders&id=payments", 304)
        ]
        assert transport.calls[0][3]["If-None-Match"] == etag

    changed = dict(DOCUMENT, streams={**DOCUMENT["streams"], "orders": []})
    _rewrite(meta, changed)
    transport.calls.clear()
    assert set(discovery.current()) == {"west"}
    assert [s for _, _, s, _ in transport.calls] == [200]


def test_pattern_discovery_uses_the_full_listing(transport: AppTransport) -> None:
    discovery = _discovery(_service(transport), streampattern="^pay")
    assert set(discovery.current()) == {"west"}
    transport.calls.clear()
    discovery.current()
    assert [(p, s) for _, p, s, _ in transport.calls] == [("/v1/streams", 304)]


def test_cluster_status_is_asked_when_no_recent_answer_covers_it(transport: AppTransport) -> None:
    clock = Clock()
    service = _service(transport, clock)
    assert service.is_cluster_active("east") is True  # nothing fetched yet: asks
    assert service.is_cluster_active("north") is False
    assert [p for _, p, _, _ in transport.calls] == ["/v1/clusters/east", "/v1/clusters/north"]
    transport.calls.clear()
    service.describe_streams(["orders"])  # lists east only
    assert service.is_cluster_active("east") is True
    assert service.is_cluster_active("west") is True  # not in that answer: asks
    assert [p for _, p, _, _ in transport.calls] == ["/v1/streams?id=orders", "/v1/clusters/west"]
    transport.calls.clear()
    service.get_all_streams()  # a full listing answers for every cluster
    assert service.is_cluster_active("north") is False
    clock.now += STATUS_REUSE_SECONDS + 1
    assert service.is_cluster_active("east") is True  # too old: asks again (a 304)
    assert [(p, s) for _, p, s, _ in transport.calls] == [
        ("/v1/streams", 200),
        ("/v1/clusters/east", 304),
    ]


# --- failures as discovery sees them --------------------------------------------------------


def _answer(status: int, body: bytes = b"") -> Callable[[HttpRequest], HttpResponse]:
    return lambda _request: HttpResponse(status, {}, body)


def _raise(exc: BaseException) -> Callable[[HttpRequest], HttpResponse]:
    def fail(_request: HttpRequest) -> HttpResponse:
        raise exc

    return fail


def test_5xx_timeouts_and_malformed_bodies_are_tolerated_up_to_the_threshold(
    transport: AppTransport,
) -> None:
    discovery = _discovery(
        _service(transport), streamids="orders", metadatadiscoveryfailurethreshold="3"
    )
    good = discovery.current()
    for failure in (
        _answer(503, b'{"message": "maintenance", "problems": []}'),
        _raise(TimeoutError("timed out")),
        _answer(200, b'{"clusters": {}, "streams": {"orders": 3}}'),
    ):
        transport.override = failure
        assert discovery.current() == good  # the last good metadata
    with pytest.raises(errors.DiscoveryError) as info:
        discovery.current()
    message = str(info.value)
    assert "metadataDiscoveryFailureThreshold=3" in message
    assert f"{URL}/v1/streams?id=orders" in message
    transport.override = None
    # The count resets after a success.
    fresh = _discovery(
        _service(transport), streamids="orders", metadatadiscoveryfailurethreshold="1"
    )
    fresh.current()
    transport.override = _answer(500)
    fresh.current()
    transport.override = None
    fresh.current()
    transport.override = _answer(502)
    fresh.current()


@pytest.mark.parametrize("status", [401, 403])
def test_401_and_403_fail_at_once_even_with_a_snapshot(
    transport: AppTransport, status: int
) -> None:
    discovery = _discovery(
        _service(transport), streamids="orders", metadatadiscoveryfailurethreshold="100"
    )
    discovery.current()
    transport.override = _answer(status, b'{"message": "no", "problems": []}')
    with pytest.raises(errors.MetadataAccessError) as info:
        discovery.current()
    assert f"HTTP {status}" in str(info.value)
    assert "token" in str(info.value)


def test_wrong_token_is_refused_clearly(meta: Path) -> None:
    transport = AppTransport(create_app(meta, read_token=TOKEN))
    with pytest.raises(errors.MetadataAccessError, match=r"HTTP 401.*no token was sent"):
        HttpMetadataService(URL, transport=transport).get_all_streams()
    with pytest.raises(errors.MetadataAccessError, match=r"HTTP 401.*wrong"):
        HttpMetadataService(URL, "nope", transport=transport).get_all_streams()


def test_malformed_bodies_name_every_problem(transport: AppTransport) -> None:
    service = _service(transport)
    bad = b'{"clusters": {"east": {}}, "streams": {"orders": [{"cluster": "west", "topics": 1}]}}'
    transport.override = _answer(200, bad)
    with pytest.raises(errors.MetadataValidationError) as info:
        service.get_all_streams()
    message = str(info.value)
    assert f"{URL}/v1/streams" in message
    assert "clusters.east: missing required property 'bootstrap.servers'" in message
    assert "streams.orders[0].cluster: unknown cluster 'west'" in message
    assert "streams.orders[0].topics: must be a list" in message
    transport.override = _answer(200, b"<html>")
    with pytest.raises(errors.MetadataValidationError, match=r"not JSON"):
        service.get_all_streams()
    transport.override = _answer(200, b'{"clusterId": "east"}')
    with pytest.raises(errors.MetadataValidationError, match=r"active: must be true or false"):
        service.is_cluster_active("east")


def test_a_304_without_a_cached_answer_is_an_error(transport: AppTransport) -> None:
    transport.override = _answer(304)
    with pytest.raises(errors.MetadataError, match=r"HTTP 304"):
        _service(transport).get_all_streams()


# --- secrets --------------------------------------------------------------------------------


def test_the_token_is_never_logged_shown_or_echoed(
    transport: AppTransport, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    service = _service(transport)
    service.get_all_streams()
    service.get_all_streams()
    messages = []
    echo = f'{{"message": "bad token {TOKEN}", "problems": []}}'.encode()
    for failure in (_answer(401, echo), _answer(500, echo), _raise(OSError(f"x {TOKEN}"))):
        transport.override = failure
        with pytest.raises(errors.MetadataError) as info:
            service.get_all_streams()
        messages.append(str(info.value))
    assert all("******" in e for e in messages)
    for text in [caplog.text, repr(service), repr(service._client), *messages]:
        assert TOKEN not in text
    request_repr = repr(HttpRequest("GET", URL, {"Authorization": TOKEN}, None, 1.0, None))
    assert TOKEN not in request_repr


def test_service_pickles_without_its_cache_or_transport(transport: AppTransport) -> None:
    service = _service(transport)
    service.get_all_streams()
    copy = pickle.loads(pickle.dumps(service))
    assert copy.base_url == URL
    assert copy._client._cache == {}
    assert copy._recent is None


# --- writes ---------------------------------------------------------------------------------


def test_update_stream_reads_and_writes_with_if_match(transport: AppTransport, meta: Path) -> None:
    service = _service(transport)
    service.update_stream("orders", lambda e: moved_entries(e, "orders", "east", "west"))
    puts = [headers for method, _, _, headers in transport.calls if method == "PUT"]
    assert len(puts) == 1 and puts[0]["If-Match"].startswith('"')
    assert yaml.safe_load(meta.read_text())["streams"]["orders"] == [
        {"cluster": "west", "topics": ["orders"]}
    ]


def test_update_stream_redoes_the_edit_when_the_stream_changed_in_between(
    transport: AppTransport, meta: Path
) -> None:
    service = _service(transport)
    seen: list[list[dict[str, Any]]] = []

    def change(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        seen.append(entries)
        if len(seen) == 1:  # another writer gets in first
            other = dict(DOCUMENT)
            other["streams"] = {**DOCUMENT["streams"], "orders": [dict(entries[0], topics=["x"])]}
            _rewrite(meta, other)
        return [dict(e, topics=[*e["topics"], "added"]) for e in entries]

    service.update_stream("orders", change)
    assert len(seen) == 2
    assert [s for m, _, s, _ in transport.calls if m == "PUT"] == [412, 200]
    assert yaml.safe_load(meta.read_text())["streams"]["orders"][0]["topics"] == ["added", "x"]


def test_write_errors(transport: AppTransport) -> None:
    service = _service(transport)
    with pytest.raises(errors.MetadataNotFoundError, match=r"HTTP 404"):
        service.get_stream("nope")
    with pytest.raises(errors.MetadataValidationError, match=r"streams.orders\[0\].cluster"):
        service.put_stream("orders", [{"cluster": "north", "topics": []}])
    with pytest.raises(errors.MetadataConflictError, match=r"read it again"):
        service.put_stream("orders", [], if_match='"stale"')


# --- options --------------------------------------------------------------------------------


def test_factory_builds_the_http_service_from_options(tmp_path: Path) -> None:
    service = create_metadata_service(
        "HTTP", {"url": "https://m.example.com/base/", "token": TOKEN, "timeoutms": "2500"}
    )
    assert isinstance(service, HttpMetadataService)
    assert service.base_url == "https://m.example.com/base"
    ca = tmp_path / "ca.pem"
    ca.write_text("not a certificate")
    with_ca = create_metadata_service("http", {"url": "https://m", "cafile": str(ca)})
    assert isinstance(with_ca, HttpMetadataService)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({}, r"'metadataService\.url' is required"),
        ({"url": "ftp://x"}, r"Invalid metadata service URL 'ftp://x'"),
        ({"url": "http://u:p@x"}, r"must not hold credentials"),
        ({"url": "http://x?a=1"}, r"remove the query string"),
        ({"url": "http://x", "timeoutms": "0"}, r"'metadataService\.timeoutMs'"),
        ({"url": "http://x", "tokn": "t"}, r"Did you mean 'metadataService\.token'\?"),
        ({"url": "http://x", "cafile": "/nope.pem"}, r"only applies to https"),
        ({"url": "https://x", "cafile": "/nope.pem"}, r"does not exist"),
        ({"url": "http://x", "token": "two words"}, r"value not shown"),
    ],
)
def test_factory_rejects_bad_http_options(options: dict[str, str], match: str) -> None:
    with pytest.raises(errors.OptionsError, match=match):
        create_metadata_service("http", options)


def test_token_in_bad_options_is_not_shown() -> None:
    with pytest.raises(errors.OptionsError) as info:
        create_metadata_service("http", {"url": "http://x", "token": f"{TOKEN}\nX-Evil: 1"})
    assert TOKEN not in str(info.value)


# --- real sockets ---------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def run_server() -> Iterator[Callable[..., str]]:
    """Run an ASGI app with uvicorn in a thread; return its base URL."""
    servers: list[tuple[uvicorn.Server, threading.Thread]] = []

    def start(app: Any, **config: Any) -> str:
        port = _free_port()
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **config)
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        servers.append((server, thread))
        deadline = time.monotonic() + 300  # bounds a failure: a loaded machine starts slowly
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise AssertionError("uvicorn did not start")
            time.sleep(0.05)
        scheme = "https" if "ssl_certfile" in config else "http"
        return f"{scheme}://127.0.0.1:{port}"

    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(30)


def test_no_answer_within_the_timeout_is_a_discovery_failure() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)  # accepts connections, never answers
        port = listener.getsockname()[1]
        service = HttpMetadataService(f"http://127.0.0.1:{port}", timeout_ms=300)
        with pytest.raises(errors.MetadataError, match=r"no answer within 300 ms.*timeoutMs"):
            service.get_all_streams()


def test_refused_connection_is_a_discovery_failure() -> None:
    service = HttpMetadataService(f"http://127.0.0.1:{_free_port()}", timeout_ms=2000)
    with pytest.raises(errors.MetadataError, match=r"could not get an answer.*running") as info:
        service.get_all_streams()
    assert not isinstance(info.value, errors.OptionsError)


def test_redirects_are_not_followed(run_server: Callable[..., str]) -> None:
    async def redirect(request: Any) -> RedirectResponse:
        return RedirectResponse("http://elsewhere.invalid/v1/streams", status_code=307)

    url = run_server(Starlette(routes=[Route("/v1/streams", redirect)]))
    with pytest.raises(errors.MetadataError, match=r"HTTP 307"):
        HttpMetadataService(url, TOKEN).get_all_streams()


def test_over_real_http_with_etags(run_server: Callable[..., str], meta: Path) -> None:
    url = run_server(create_app(meta, read_token=TOKEN))
    service = HttpMetadataService(url, TOKEN)
    first = service.describe_streams(["orders"])
    assert service.describe_streams(["orders"]) == first
    with pytest.raises(errors.MetadataAccessError):
        HttpMetadataService(url, "wrong-token").get_all_streams()


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is needed to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    command = [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
    command += ["-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"]
    command += ["-addext", "subjectAltName=IP:127.0.0.1"]
    subprocess.run(
        command,
        check=True,
        capture_output=True,
    )
    return cert, key


def test_tls_is_verified_and_a_private_ca_can_be_given(
    run_server: Callable[..., str], meta: Path, certificate: tuple[Path, Path]
) -> None:
    cert, key = certificate
    url = run_server(create_app(meta), ssl_certfile=str(cert), ssl_keyfile=str(key))
    with pytest.raises(errors.MetadataError, match=r"certificate verification failed.*caFile"):
        HttpMetadataService(url).get_all_streams()
    trusted = HttpMetadataService(url, ca_file=str(cert))
    assert {s.stream_id for s in trusted.get_all_streams()} == {"orders", "payments"}
    copy = pickle.loads(pickle.dumps(trusted))  # the SSL context is rebuilt after pickling
    assert {s.stream_id for s in copy.get_all_streams()} == {"orders", "payments"}
