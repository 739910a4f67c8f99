"""Asking a cluster's schema registry for schemas, over Confluent Schema Registry's REST API.

Writer schemas are fetched by (registry, id), or by GUID, and cached for the process: an id
never changes its schema within a registry, and ids of different registries are never mixed (a
cache entry is keyed by the registry's URLs). A reader schema is fetched by subject and version
(``latest`` the newest). A writer's schema is registered under a subject (or, when the registry
refuses the writer permission to register, looked up there), as Confluent's serializers do with
``auto.register.schemas``; that id is cached too, by (registry, subject, schema). Credentials
(``user:password`` for basic authentication, or a bearer token) may be secret references,
resolved each time a request is made, so a rotated secret file is read again; an https://
registry is verified against ``schema.registry.ssl.ca.location`` or the system's CAs. Several
URLs are tried in order when one cannot be reached. Every failure is a
:class:`~pyspark_dynamic_kafka.errors.SchemaRegistryError` naming the cluster, the URL and what
was asked, never a credential.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from pyspark_dynamic_kafka.errors import SchemaRegistryError
from pyspark_dynamic_kafka.kafka.config import redact
from pyspark_dynamic_kafka.kafka.references import resolve
from pyspark_dynamic_kafka.registry.endpoint import BEARER, USER_INFO, RegistryEndpoint

__all__ = ["RegisteredSchema", "RegistryClient", "canonical_text"]

_ACCEPT = "application/vnd.schemaregistry.v1+json, application/json"
#: Writer schemas by (registry URLs, id or GUID): shared by every client of the process.
_SCHEMAS: dict[tuple[tuple[str, ...], str], RegisteredSchema] = {}
_LOCK = threading.Lock()


@dataclass(frozen=True)
class RegisteredSchema:
    """A schema as a registry holds it: its text, its type (``AVRO`` unless said), its id, and
    its subject version when it was asked for by subject."""

    schema: str
    schema_type: str = "AVRO"
    schema_id: int | None = None
    version: int | None = None


class RegistryClient:
    """The schema registry of one cluster.

    Parameters
    ----------
    endpoint:
        Where the registry is and how to authenticate (the cluster's metadata entry).
    cluster_id:
        The cluster, for messages.
    timeout_s:
        Seconds one request may take.
    """

    def __init__(self, endpoint: RegistryEndpoint, cluster_id: str, timeout_s: float = 10.0):
        self.endpoint = endpoint
        self.cluster_id = cluster_id
        self.timeout_s = timeout_s

    def schema_by_id(self, schema_id: int) -> RegisteredSchema:
        """The schema registered under ``schema_id`` (cached once fetched)."""
        path, what = f"schemas/ids/{schema_id}", f"schema id {schema_id}"
        return self._cached(str(schema_id), path, what, schema_id)

    def schema_by_guid(self, guid: str) -> RegisteredSchema:
        """The schema whose GUID is ``guid`` (cached once fetched)."""
        return self._cached(guid, f"schemas/guids/{quote(guid, safe='')}", f"schema {guid}")

    def subject_version(self, subject: str, version: int | str = "latest") -> RegisteredSchema:
        """Version ``version`` (a number, or ``latest``) of ``subject``, with its id."""
        answer = self._get(
            f"subjects/{quote(subject, safe='')}/versions/{version}",
            f"version {version} of subject {subject!r}",
        )
        return _registered(answer, version=int(answer["version"]))

    def register(self, subject: str, schema: str) -> RegisteredSchema:
        """The id of the Avro ``schema`` under ``subject``: registered there (a registry answers
        an already registered schema with its id), or, when the registry refuses the
        credentials permission to register (HTTP 403), looked up there. Cached once known."""
        entry = (self.endpoint.urls, f"subject:{subject}:{canonical_text(schema)}")
        with _LOCK:
            found = _SCHEMAS.get(entry)
        if found is not None:
            return found
        body = {"schema": schema}
        path = f"subjects/{quote(subject, safe='')}"
        what = f"the registration of a schema under subject {subject!r}"
        try:
            answer = self._request(f"{path}/versions", what, body)
        except SchemaRegistryError as exc:
            if exc.status != 403:
                raise
            answer = self._request(path, f"a schema under subject {subject!r}", body)
        registered = RegisteredSchema(schema, "AVRO", int(answer["id"]), _version(answer))
        with _LOCK:
            _SCHEMAS[entry] = registered
        return registered

    def _cached(
        self, key: str, path: str, what: str, schema_id: int | None = None
    ) -> RegisteredSchema:
        entry = (self.endpoint.urls, key)
        with _LOCK:
            found = _SCHEMAS.get(entry)
        if found is not None:
            return found
        registered = _registered(self._get(path, what), schema_id)
        with _LOCK:
            _SCHEMAS[entry] = registered
        return registered

    def _get(self, path: str, what: str) -> dict[str, Any]:
        answer = self._request(path, what)
        if "schema" not in answer:
            url = ", ".join(self.endpoint.urls)
            raise self._error(url, f"answered {what} without a schema", reachable=True)
        return answer

    def _request(self, path: str, what: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """The registry's JSON object for ``path`` (a POST of ``body`` when given, else a GET),
        from the first URL that answers."""
        headers, secrets = self._authorization()
        if body is not None:
            headers["Content-Type"] = "application/vnd.schemaregistry.v1+json"
        data = None if body is None else json.dumps(body).encode()
        context = (
            ssl.create_default_context(cafile=self.endpoint.ca_location)
            if self.endpoint.ca_location
            else None
        )
        unreachable: list[str] = []
        for url in self.endpoint.urls:
            request = urllib.request.Request(
                f"{url.rstrip('/')}/{path}", data, headers={"Accept": _ACCEPT, **headers}
            )
            try:
                with urllib.request.urlopen(
                    request, timeout=self.timeout_s, context=context
                ) as response:
                    answer = json.loads(response.read())
            except urllib.error.HTTPError as exc:
                raise self._refusal(url, what, exc, secrets) from None
            except (OSError, ValueError) as exc:
                unreachable.append(f"{url}: {redact(str(exc), secrets)}")
                continue
            if not isinstance(answer, dict) or ("id" not in answer and "schema" not in answer):
                raise self._error(url, f"answered {what} with no schema nor id", reachable=True)
            return answer
        raise self._error(
            ", ".join(self.endpoint.urls),
            f"could not be reached for {what} ({'; '.join(unreachable)})",
        )

    def _authorization(self) -> tuple[dict[str, str], list[str]]:
        """The request's ``Authorization`` header (secret references resolved now), and the
        secrets that must not show in a message."""
        given = {
            k: v
            for k, v in ((USER_INFO, self.endpoint.user_info), (BEARER, self.endpoint.bearer_token))
            if v
        }
        values = resolve(given, self.cluster_id) if given else {}
        if USER_INFO in values:
            token = base64.b64encode(values[USER_INFO].encode()).decode()
            return {"Authorization": f"Basic {token}"}, [values[USER_INFO], token]
        if BEARER in values:
            return {"Authorization": f"Bearer {values[BEARER]}"}, [values[BEARER]]
        return {}, []

    def _refusal(
        self, url: str, what: str, exc: urllib.error.HTTPError, secrets: list[str]
    ) -> SchemaRegistryError:
        try:
            body = json.loads(exc.read() or b"{}")
        except ValueError:
            body = {}
        message = redact(str(body.get("message", exc.reason)), secrets)
        code = body.get("error_code", exc.code)
        if exc.code in (401, 403):
            said = f"refused the credentials (HTTP {exc.code}) when asked for {what}"
        elif exc.code == 404:
            said = f"does not hold {what} (error {code}: {message})"
        else:
            said = f"answered HTTP {exc.code} for {what} (error {code}: {message})"
        error = self._error(url, said, reachable=exc.code < 500)
        error.status = exc.code
        return error

    def _error(self, url: str, said: str, reachable: bool = False) -> SchemaRegistryError:
        error = SchemaRegistryError(f"Cluster '{self.cluster_id}': schema registry {url} {said}.")
        error.reachable = reachable
        return error


def canonical_text(schema: str) -> str:
    """One text for one schema however it is spaced or its keys ordered (JSON compared as JSON;
    defaults and docs count: they change how records decode); text that is not JSON as it is."""
    try:
        return json.dumps(json.loads(schema), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return schema


def _version(answer: dict[str, Any]) -> int | None:
    version = answer.get("version")
    return int(version) if version is not None else None


def _registered(
    answer: dict[str, Any], schema_id: int | None = None, version: int | None = None
) -> RegisteredSchema:
    """A registry's answer about one schema (its id from the answer where it gives one)."""
    answered = answer.get("id")
    return RegisteredSchema(
        str(answer["schema"]),
        str(answer.get("schemaType") or "AVRO"),
        int(answered) if answered is not None else schema_id,
        version,
    )
