"""A local schema registry for tests: **a test double**, written from Confluent Schema Registry's
REST API reference, serving the part of it that confluent-kafka's ``SchemaRegistryClient``,
``AvroSerializer`` and ``AvroDeserializer`` use, and that a ``schema.registry.url`` in the
metadata points ``valueFormat=avro`` reads and writes at.

It runs in the test's own process, on loopback, with no Java: exported as
``pyspark_dynamic_kafka.testing.LocalSchemaRegistry`` for users' own tests of Avro jobs. Where
Java and Maven are at hand, ``testing/apicurio.py`` runs a real registry (Apicurio Registry,
through its Confluent-compatible API); this project's suite reads through that one and keeps
the double for what Apicurio 2.6 lacks (schema GUIDs, HTTP basic authentication). What it
serves, as the reference describes it:

* ``POST /subjects/{subject}/versions``: register (the same schema again: its id and version);
* ``POST /subjects/{subject}``: look a schema up under a subject (``40403`` when it is not there);
* ``GET /subjects``, ``GET /subjects/{subject}/versions``,
  ``GET /subjects/{subject}/versions/{version|latest}``;
* ``GET /schemas/ids/{id}``, ``GET /schemas/guids/{guid}``, ``GET /schemas/ids/{id}/versions``;
* ``GET``/``PUT /config`` and ``/config/{subject}`` (a compatibility level, stored, not enforced).

Ids are registry-wide and local to it, as a real registry's are: the same schema in two
registries has two ids (``first_id`` sets where one starts). A schema registered under a second
subject keeps its id. Each schema also has a GUID. With ``user_info`` every request needs HTTP
basic authentication (``401`` otherwise); with ``read_only`` a registration is refused with
``403`` (``40301``), as a registry refuses a principal without write permission on the subject,
while lookups answer. :meth:`down` makes the registry unreachable for a
while, as an outage does, on the same port.
"""

from __future__ import annotations

import base64
import contextlib
import json
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = ["LocalSchemaRegistry"]

_JSON = "application/vnd.schemaregistry.v1+json"


@dataclass
class _Schema:
    id: int
    guid: str
    text: str
    schema_type: str


@dataclass
class _State:
    """What a registry holds: schemas by id, each subject's versions (schema ids in order)."""

    next_id: int
    schemas: dict[int, _Schema] = field(default_factory=dict)
    by_key: dict[tuple[str, str], int] = field(default_factory=dict)
    subjects: dict[str, list[int]] = field(default_factory=dict)
    config: dict[str, str] = field(default_factory=lambda: {"": "BACKWARD"})
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Refusal(Exception):
    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _canonical(text: str, schema_type: str) -> str:
    """The key two registrations of one schema share (JSON schemas compared as JSON)."""
    if schema_type in ("AVRO", "JSON"):
        try:
            return json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
        except ValueError:
            raise _Refusal(422, 42201, "Invalid schema") from None
    return text


class LocalSchemaRegistry:
    """A schema registry on loopback (a test double, see the module's docstring).

    Parameters
    ----------
    first_id:
        The id the first registered schema gets (real registries' ids differ per registry).
    user_info:
        ``user:password`` every request must authenticate with, or ``None`` for none.
    read_only:
        Refuse registrations over HTTP (``403``), as for a principal without write permission
        (:meth:`register` still registers, as the registry's owner would).

    Examples
    --------
    >>> with LocalSchemaRegistry(first_id=100) as registry:  # doctest: +SKIP
    ...     SchemaRegistryClient({"url": registry.url})
    """

    def __init__(
        self, first_id: int = 1, user_info: str | None = None, read_only: bool = False
    ) -> None:
        self._state = _State(first_id)
        self._user_info = user_info
        self.read_only = read_only
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self.requests = 0

    @property
    def url(self) -> str:
        """The registry's base URL."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LocalSchemaRegistry:
        """Serve (again, on the same port after :meth:`stop`); returns itself."""
        server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self))
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, name=f"schema-registry-{self.port}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: connections are refused until :meth:`start`."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    @contextlib.contextmanager
    def down(self) -> Iterator[None]:
        """Unreachable inside the block (an outage), serving the same schemas after it."""
        self.stop()
        try:
            yield
        finally:
            self.start()

    def __enter__(self) -> LocalSchemaRegistry:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def register(self, subject: str, schema: str, schema_type: str = "AVRO") -> int:
        """Register ``schema`` under ``subject`` directly (no HTTP); its id."""
        return int(self._register(subject, {"schema": schema, "schemaType": schema_type})["id"])

    # -- the API ------------------------------------------------------------------------------

    def answer(self, method: str, path: str, body: Any) -> Any:
        """The JSON answer to one request (``_Refusal`` for an error answer)."""
        parts = [unquote(p) for p in path.strip("/").split("/")]
        state = self._state
        with state.lock:
            match method, parts:
                case "POST", ["subjects", subject, "versions"]:
                    if self.read_only:
                        raise _Refusal(
                            403, 40301, f"User is denied operation Write on Subject: {subject}"
                        )
                    return self._register(subject, body)
                case "POST", ["subjects", subject]:
                    return self._lookup(subject, body)
                case "GET", ["subjects"]:
                    return sorted(state.subjects)
                case "GET", ["subjects", subject, "versions"]:
                    return list(range(1, len(self._versions(subject)) + 1))
                case "GET", ["subjects", subject, "versions", version]:
                    return self._version(subject, version)
                case "GET", ["schemas", "ids", schema_id]:
                    return self._by_id(self._schema(schema_id))
                case "GET", ["schemas", "ids", schema_id, "versions"]:
                    found = self._schema(schema_id)
                    return [
                        {"subject": s, "version": i + 1}
                        for s, ids in sorted(state.subjects.items())
                        for i, known in enumerate(ids)
                        if known == found.id
                    ]
                case "GET", ["schemas", "guids", guid]:
                    for schema in state.schemas.values():
                        if schema.guid == guid:
                            return self._by_id(schema)
                    raise _Refusal(404, 40403, "Schema not found")
                case "GET", ["config", *subject]:
                    level = state.config.get("/".join(subject), state.config[""])
                    return {"compatibilityLevel": level}
                case "PUT", ["config", *subject]:
                    level = str((body or {}).get("compatibility", "BACKWARD"))
                    state.config["/".join(subject)] = level
                    return {"compatibility": level}
        raise _Refusal(404, 404, f"{method} /{'/'.join(parts)} is not served by this double")

    def _register(self, subject: str, body: Any) -> dict[str, Any]:
        text, schema_type = self._schema_of(body)
        key = (schema_type, _canonical(text, schema_type))
        state = self._state
        schema_id = state.by_key.get(key)
        if schema_id is None:
            schema_id = state.next_id
            state.next_id += 1
            state.schemas[schema_id] = _Schema(schema_id, str(uuid.uuid4()), text, schema_type)
            state.by_key[key] = schema_id
        versions = state.subjects.setdefault(subject, [])
        if schema_id not in versions:
            versions.append(schema_id)
        return {"id": schema_id, "guid": state.schemas[schema_id].guid}

    def _lookup(self, subject: str, body: Any) -> dict[str, Any]:
        text, schema_type = self._schema_of(body)
        schema_id = self._state.by_key.get((schema_type, _canonical(text, schema_type)))
        versions = self._versions(subject)
        if schema_id is None or schema_id not in versions:
            raise _Refusal(404, 40403, "Schema not found")
        return self._registered(subject, versions.index(schema_id) + 1)

    def _version(self, subject: str, version: str) -> dict[str, Any]:
        versions = self._versions(subject)
        number = len(versions) if version in ("latest", "-1") else int(version)
        if not 1 <= number <= len(versions):
            raise _Refusal(404, 40402, "Version not found")
        return self._registered(subject, number)

    def _registered(self, subject: str, version: int) -> dict[str, Any]:
        schema = self._state.schemas[self._versions(subject)[version - 1]]
        return {"subject": subject, "version": version, **self._by_id(schema), "id": schema.id}

    def _versions(self, subject: str) -> list[int]:
        if subject not in self._state.subjects:
            raise _Refusal(404, 40401, "Subject not found")
        return self._state.subjects[subject]

    def _schema(self, schema_id: str) -> _Schema:
        found = self._state.schemas.get(int(schema_id)) if schema_id.isdigit() else None
        if found is None:
            raise _Refusal(404, 40403, "Schema not found")
        return found

    @staticmethod
    def _by_id(schema: _Schema) -> dict[str, Any]:
        answer: dict[str, Any] = {"schema": schema.text, "guid": schema.guid}
        if schema.schema_type != "AVRO":  # a real registry leaves out the default type
            answer["schemaType"] = schema.schema_type
        return answer

    @staticmethod
    def _schema_of(body: Any) -> tuple[str, str]:
        if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
            raise _Refusal(422, 42201, "Invalid schema: the body must hold a 'schema' string")
        return body["schema"], str(body.get("schemaType") or "AVRO")

    def authorized(self, header: str | None) -> bool:
        """Whether a request's ``Authorization`` header lets it in."""
        if self._user_info is None:
            return True
        expected = base64.b64encode(self._user_info.encode()).decode()
        return header == f"Basic {expected}"


def _handler(registry: LocalSchemaRegistry) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self, method: str) -> None:
            registry.requests += 1
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                if not registry.authorized(self.headers.get("Authorization")):
                    raise _Refusal(401, 401, "Unauthorized")
                body = json.loads(raw) if raw else None
                status, answer = 200, registry.answer(method, urlsplit(self.path).path, body)
            except _Refusal as refused:
                status = refused.status
                answer = {"error_code": refused.code, "message": refused.message}
            except ValueError as exc:
                status, answer = 400, {"error_code": 400, "message": f"Bad request: {exc}"}
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", _JSON)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def do_PUT(self) -> None:
            self._serve("PUT")

        def log_message(self, format: str, *args: Any) -> None:  # quiet, as tests want
            return

    return Handler
