"""The reference metadata server: the HTTP contract (v1) over one metadata file, on Starlette.

Routes (see ``docs/metadata-service-openapi.yaml``):

=======  ==============================  ==========================================
GET      ``/v1/health``                  liveness, no authentication
GET      ``/v1/streams[?id=..&id=..]``   metadata document of every / the named streams
GET      ``/v1/streams/{streamId}``      one stream (404 when unknown)
PUT      ``/v1/streams/{streamId}``      replace (or create) a stream's entries
DELETE   ``/v1/streams/{streamId}``      remove a stream
GET      ``/v1/clusters``                every active cluster
GET      ``/v1/clusters/{clusterId}``    one cluster's status (``active: false`` when unknown)
PUT      ``/v1/clusters/{clusterId}``    add a cluster or replace its client properties
DELETE   ``/v1/clusters/{clusterId}``    remove a cluster no stream uses
=======  ==============================  ==========================================
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.convertors import Convertor, register_url_convertor
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from pyspark_dynamic_kafka.errors import (
    MetadataConflictError,
    MetadataError,
    MetadataNotFoundError,
    MetadataUnavailableError,
    MetadataValidationError,
)
from pyspark_dynamic_kafka.metadata.document import ParsedMetadata, unique_json_object
from pyspark_dynamic_kafka.metadata.editing.edit import (
    Edit,
    put_cluster,
    remove_cluster,
    remove_stream,
    replace_stream,
)
from pyspark_dynamic_kafka.metadata.http_api.wire import (
    CLUSTERS_PATH,
    HEALTH_PATH,
    STREAMS_PATH,
    cluster_body,
    clusters_body,
    compute_etag,
    error_body,
    etag_matches,
    stream_body,
    streams_body,
)
from pyspark_dynamic_kafka.server.auth import Authorizer
from pyspark_dynamic_kafka.server.store import MetadataStore, Precondition, guarded_edit

__all__ = ["MAX_BODY_BYTES", "create_app"]

_log = logging.getLogger(__name__)

#: Largest write body accepted.
MAX_BODY_BYTES = 1024 * 1024
_CACHE_CONTROL = "private, no-cache"
_REJECTED = "The edit was rejected and nothing was changed"


class _AnyText(Convertor[str]):
    """A stream or cluster id in a path: any text, line breaks included (Starlette's ``path``
    convertor stops at one, and such an id then answered a 404 the contract does not list)."""

    regex = "[\\s\\S]*"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("anytext", _AnyText())


def _error(
    status: int,
    message: str,
    problems: tuple[str, ...] = (),
    extra_headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    headers = {**(extra_headers or {}), "Cache-Control": "no-store"}
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="dynamic-kafka"'
    return JSONResponse(error_body(message, problems), status_code=status, headers=headers)


def _json(request: Request, body: dict[str, Any], status: int = 200) -> Response:
    """A JSON answer with its ETag, or ``304`` when ``If-None-Match`` names that ETag."""
    etag = compute_etag(body)
    headers = {"ETag": etag, "Cache-Control": _CACHE_CONTROL}
    if request.method in ("GET", "HEAD") and etag_matches(
        request.headers.get("if-none-match"), etag, weak=True
    ):
        return Response(status_code=304, headers=headers)
    return JSONResponse(body, status_code=status, headers=headers)


async def _json_body(request: Request) -> object:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise HTTPException(413, f"The body is larger than {MAX_BODY_BYTES} bytes.")
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        raise HTTPException(413, f"The body is larger than {MAX_BODY_BYTES} bytes.")
    try:
        return json.loads(raw.decode("utf-8"), object_pairs_hook=unique_json_object)
    except (UnicodeDecodeError, ValueError) as exc:
        raise HTTPException(
            400, f"The body is not valid JSON ({exc}); nothing was changed."
        ) from None


def _summary(parsed: ParsedMetadata, stream_id: str) -> str:
    clusters = parsed.streams[stream_id].clusters
    parts = [
        f"{cid}: {', '.join(sorted(c.topics)) or '(no topics)'}" for cid, c in clusters.items()
    ]
    return "; ".join(parts) or "(no clusters)"


class _Api:
    """The endpoints, bound to one store and one authorizer."""

    def __init__(self, store: MetadataStore, auth: Authorizer) -> None:
        self.store = store
        self.auth = auth

    def _allow(self, request: Request, write: bool) -> None:
        decision = self.auth.check(request.headers.get("authorization"), write)
        if decision is not None:
            raise HTTPException(decision[0], decision[1])

    async def _read(self, request: Request) -> ParsedMetadata:
        self._allow(request, write=False)
        return await run_in_threadpool(self.store.current)

    async def _write(
        self,
        request: Request,
        resource: str,
        representation: Callable[[ParsedMetadata], dict[str, Any] | None],
        edit: Edit,
    ) -> tuple[ParsedMetadata, ParsedMetadata]:
        if_match, if_none_match = (request.headers.get(h) for h in ("if-match", "if-none-match"))
        for name, value in (("If-Match", if_match), ("If-None-Match", if_none_match)):
            if value is not None and not value.strip():
                raise HTTPException(
                    400,
                    f"Header {name} is empty: give the ETag last read, or '*'; nothing changed.",
                )
        precondition = Precondition(if_match, if_none_match)
        guarded = guarded_edit(precondition, resource, representation, edit)
        return await run_in_threadpool(self.store.update, guarded)

    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"}, headers={"Cache-Control": "no-store"})

    async def streams(self, request: Request) -> Response:
        parsed = await self._read(request)
        ids = request.query_params.getlist("id")
        if not all(ids):  # the contract: an id has minLength 1
            raise HTTPException(
                400, "Query parameter 'id' is empty: give stream ids (?id=orders&id=payments)."
            )
        return _json(request, streams_body(parsed, ids or None))

    async def _put_or_delete(
        self,
        request: Request,
        resource: str,
        representation: Callable[[ParsedMetadata], dict[str, Any] | None],
        remove: Edit,
        put: Callable[[ParsedMetadata, object, str], ParsedMetadata],
        announce: Callable[[ParsedMetadata, bool], None],
    ) -> Response:
        """DELETE ``resource`` (204, logged), or PUT it: 201 when ``representation`` found none
        before, 200 otherwise; ``announce`` logs the metadata after and whether it was created."""
        self._allow(request, write=True)
        if request.method == "DELETE":
            await self._write(request, resource, representation, remove)
            _log.info("%s removed.", resource[0].upper() + resource[1:])
            return Response(status_code=204)
        value = await _json_body(request)
        source = f"PUT {request.url.path}"
        edit = await self._write(request, resource, representation, lambda p: put(p, value, source))
        before, after = edit
        created = representation(before) is None
        announce(after, created)
        return _json(request, representation(after) or {}, status=201 if created else 200)

    async def stream(self, request: Request) -> Response:
        stream_id: str = request.path_params["stream_id"]
        if request.method == "GET" or request.method == "HEAD":
            body = stream_body(await self._read(request), stream_id)
            if body is None:
                raise MetadataNotFoundError(f"Stream {stream_id!r} is not in the metadata.")
            return _json(request, body)

        def announce(after: ParsedMetadata, created: bool) -> None:
            verb = "created" if created else "replaced"
            _log.info("Stream %r %s: %s.", stream_id, verb, _summary(after, stream_id))

        return await self._put_or_delete(
            request,
            f"stream {stream_id!r}",
            lambda p: stream_body(p, stream_id),
            lambda p: remove_stream(p, stream_id),
            lambda p, entries, source: replace_stream(p, stream_id, entries, source),
            announce,
        )

    async def clusters(self, request: Request) -> Response:
        return _json(request, clusters_body(await self._read(request)))

    async def cluster(self, request: Request) -> Response:
        cluster_id: str = request.path_params["cluster_id"]
        if request.method == "GET" or request.method == "HEAD":
            return _json(request, cluster_body(await self._read(request), cluster_id))

        def representation(parsed: ParsedMetadata) -> dict[str, Any] | None:
            return cluster_body(parsed, cluster_id) if cluster_id in parsed.clusters else None

        def announce(after: ParsedMetadata, created: bool) -> None:
            _log.info("Cluster %r %s.", cluster_id, "added" if created else "replaced")

        return await self._put_or_delete(
            request,
            f"cluster {cluster_id!r}",
            representation,
            lambda p: remove_cluster(p, cluster_id),
            lambda p, properties, source: put_cluster(p, cluster_id, properties, source),
            announce,
        )


async def _on_http_exception(request: Request, exc: Exception) -> Response:
    if not isinstance(exc, HTTPException):  # pragma: no cover - registered for it only
        raise exc
    return _error(exc.status_code, str(exc.detail), extra_headers=exc.headers)


async def _on_metadata_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, MetadataUnavailableError):
        _log.error("Cannot serve the metadata: %s", exc)
        return _error(503, f"The metadata is unavailable: {exc}")
    if isinstance(exc, MetadataNotFoundError):
        return _error(404, str(exc))
    if isinstance(exc, MetadataConflictError):
        return _error(412, f"{exc} {_REJECTED}.")
    if isinstance(exc, MetadataValidationError):
        _log.warning("Rejected %s %s: invalid result.", request.method, request.url.path)
        if exc.problems:
            return _error(422, f"{_REJECTED}: the metadata would be invalid.", exc.problems)
        return _error(422, f"{_REJECTED}: {exc}")
    _log.error("%s %s failed: %s", request.method, request.url.path, exc)
    return _error(500, f"{_REJECTED} (the previous metadata is kept): {exc}")


def create_app(
    metadata: str | os.PathLike[str],
    *,
    write_token: str | None = None,
    read_token: str | None = None,
) -> Starlette:
    """Build the ASGI application serving ``metadata``.

    Parameters
    ----------
    metadata:
        The metadata file (``.yaml``, ``.yml`` or ``.json``); re-read when it changes.
    write_token:
        Bearer token that writes need; ``None`` makes the server read-only.
    read_token:
        Bearer token that reads need (the write token reads too); ``None`` for open reads.

    Raises
    ------
    MetadataError
        When the file has an unsupported extension.
    """
    api = _Api(MetadataStore(metadata), Authorizer(read_token, write_token))
    endpoint = Callable[[Request], Awaitable[Response]]
    routes: list[tuple[str, endpoint, list[str]]] = [
        (HEALTH_PATH, api.health, ["GET"]),
        (STREAMS_PATH, api.streams, ["GET"]),
        (STREAMS_PATH + "/{stream_id:anytext}", api.stream, ["GET", "PUT", "DELETE"]),
        (CLUSTERS_PATH, api.clusters, ["GET"]),
        (CLUSTERS_PATH + "/{cluster_id:anytext}", api.cluster, ["GET", "PUT", "DELETE"]),
    ]
    return Starlette(
        routes=[Route(path, fn, methods=methods) for path, fn, methods in routes],
        exception_handlers={
            HTTPException: _on_http_exception,
            MetadataError: _on_metadata_error,
        },
    )
