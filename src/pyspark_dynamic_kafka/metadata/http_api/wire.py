"""The HTTP metadata contract on the wire, version 1: paths, bodies and ETags shared by client
and server.

The full contract is ``docs/metadata-service-openapi.yaml``. In short:

- ``GET /v1/streams`` answers a *metadata document* (the format of a metadata file, see
  :mod:`~pyspark_dynamic_kafka.metadata.document`) with every stream and every active cluster.
- ``GET /v1/streams?id=a&id=b`` answers a document with the known streams among the ids and the
  clusters they use; ``GET /v1/streams/{streamId}`` the same for one stream (404 when unknown).
- ``GET /v1/clusters/{clusterId}`` answers ``{"clusterId": ..., "active": ...}`` (``active`` is
  ``false`` for a cluster the service does not know); ``GET /v1/clusters`` lists the active ones.
- Every ``200`` carries a strong ``ETag``; a request whose ``If-None-Match`` names it gets
  ``304 Not Modified`` with no body.
- Writes (``PUT``/``DELETE`` of ``/v1/streams/{streamId}`` and ``/v1/clusters/{clusterId}``)
  honour ``If-Match`` (``412`` when the resource changed since it was read).
- Errors are ``{"message": ..., "problems": [...]}``.

The functions here are pure: no I/O, no framework.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from pyspark_dynamic_kafka.errors import MetadataValidationError
from pyspark_dynamic_kafka.kafka.config import redact
from pyspark_dynamic_kafka.metadata.document import ParsedMetadata, dump_metadata_document
from pyspark_dynamic_kafka.metadata.field_checks import (
    collect_secrets,
    render_value,
    secrets_in_text,
)

__all__ = [
    "API_VERSION",
    "CLUSTERS_PATH",
    "HEALTH_PATH",
    "JSON_MEDIA_TYPE",
    "STREAMS_PATH",
    "cluster_body",
    "cluster_path",
    "clusters_body",
    "compute_etag",
    "error_body",
    "error_text",
    "etag_matches",
    "parse_cluster_status",
    "stream_body",
    "stream_path",
    "streams_body",
]

#: The contract version, also the first path segment.
API_VERSION = "v1"
#: Every stream, or those named by repeated ``id`` query parameters.
STREAMS_PATH = f"/{API_VERSION}/streams"
#: Every active cluster.
CLUSTERS_PATH = f"/{API_VERSION}/clusters"
#: Liveness (no authentication): ``{"status": "ok"}``.
HEALTH_PATH = f"/{API_VERSION}/health"
#: Media type of every body.
JSON_MEDIA_TYPE = "application/json"

_ETAG_HEX_DIGITS = 32


def stream_path(stream_id: str) -> str:
    """The path of one stream (the id percent-encoded)."""
    return f"{STREAMS_PATH}/{quote(stream_id, safe='')}"


def cluster_path(cluster_id: str) -> str:
    """The path of one cluster (the id percent-encoded)."""
    return f"{CLUSTERS_PATH}/{quote(cluster_id, safe='')}"


def _subset(parsed: ParsedMetadata, stream_ids: Iterable[str]) -> ParsedMetadata:
    streams = {sid: parsed.streams[sid] for sid in stream_ids if sid in parsed.streams}
    used = {cid for stream in streams.values() for cid in stream.clusters}
    return ParsedMetadata(
        clusters={cid: p for cid, p in parsed.clusters.items() if cid in used},
        streams=streams,
        starting_offsets={k: v for k, v in parsed.starting_offsets.items() if k[0] in streams},
    )


def streams_body(parsed: ParsedMetadata, stream_ids: Sequence[str] | None = None) -> dict[str, Any]:
    """The body of ``GET /v1/streams``: a metadata document.

    Parameters
    ----------
    parsed:
        The current metadata.
    stream_ids:
        ``None`` (or empty) for every stream and every active cluster; otherwise the known
        streams among the ids and only the clusters they use.
    """
    if not stream_ids:
        return dump_metadata_document(parsed)
    return dump_metadata_document(_subset(parsed, stream_ids))


def stream_body(parsed: ParsedMetadata, stream_id: str) -> dict[str, Any] | None:
    """The body of ``GET /v1/streams/{streamId}``, or ``None`` when the stream is unknown."""
    if stream_id not in parsed.streams:
        return None
    return dump_metadata_document(_subset(parsed, [stream_id]))


def cluster_body(parsed: ParsedMetadata, cluster_id: str) -> dict[str, Any]:
    """The body of ``GET /v1/clusters/{clusterId}``: its status and, when active, its properties."""
    properties = parsed.clusters.get(cluster_id)
    if properties is None:
        return {"clusterId": cluster_id, "active": False}
    return {"clusterId": cluster_id, "active": True, "properties": dict(properties)}


def clusters_body(parsed: ParsedMetadata) -> dict[str, Any]:
    """The body of ``GET /v1/clusters``: every active cluster with its properties."""
    return {
        "clusters": {
            cid: {"active": True, "properties": dict(properties)}
            for cid, properties in parsed.clusters.items()
        }
    }


def error_body(message: str, problems: Sequence[str] = ()) -> dict[str, Any]:
    """The body of every error response."""
    return {"message": message, "problems": list(problems)}


def error_text(raw: bytes, limit: int = 2000) -> str:
    """The message (and problems) of an error body, or its raw text when it is not one; the values
    of secret properties it quotes are masked."""
    text = raw.decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, a 5,000-digit number, nested too deeply
        data = None
    secrets = secrets_in_text(text)  # a body may quote client properties: never show a secret
    collect_secrets(data, secrets)
    if isinstance(data, Mapping) and isinstance(data.get("message"), str):
        problems = data.get("problems")
        items = [p for p in problems if isinstance(p, str)] if isinstance(problems, list) else []
        text = data["message"] + "".join(f"\n  - {p}" for p in items)
    text = redact(text, secrets)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def compute_etag(body: object) -> str:
    """A strong ETag (quoted) of a JSON body: a digest of its canonical JSON form.

    Two bodies that are equal as JSON values get the same ETag, whatever their key order.
    """
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:_ETAG_HEX_DIGITS]
    return f'"{digest}"'


def _entity_tags(header: str) -> list[tuple[bool, str]]:
    """Split an ``If-Match``/``If-None-Match`` list into (weak, opaque tag) pairs."""
    tags: list[tuple[bool, str]] = []
    for raw in header.split(","):
        item = raw.strip()
        weak = item.startswith("W/")
        if weak:
            item = item[2:]
        if item:
            tags.append((weak, item))
    return tags


def etag_matches(header: str | None, etag: str, *, weak: bool, exists: bool = True) -> bool:
    """Whether a conditional header's list matches ``etag`` (RFC 9110 section 13.1).

    Parameters
    ----------
    header:
        The ``If-Match`` or ``If-None-Match`` value; ``None`` or blank never matches.
    etag:
        The current representation's (strong) ETag.
    weak:
        ``True`` for ``If-None-Match`` (weak comparison), ``False`` for ``If-Match`` (strong:
        a weak tag never matches).
    exists:
        Whether the resource exists: ``*`` matches exactly when it does.
    """
    if header is None or not header.strip():
        return False
    if header.strip() == "*":
        return exists
    for is_weak, tag in _entity_tags(header):
        if is_weak and not weak:
            continue
        if tag == etag:
            return True
    return False


def parse_cluster_status(body: object, cluster_id: str, source: str) -> bool:
    """Validate a ``GET /v1/clusters/{clusterId}`` body and return its ``active`` flag.

    Raises
    ------
    MetadataValidationError
        When the body is not an object with ``clusterId`` equal to ``cluster_id`` and a boolean
        ``active``.
    """
    if not isinstance(body, Mapping):
        problems = [f"(top level): must be an object, got {type(body).__name__}."]
    else:
        problems = []
        if body.get("clusterId") != cluster_id:
            got = render_value(body.get("clusterId"))
            problems.append(f"clusterId: must be {cluster_id!r}, got {got}.")
        active = body.get("active")
        if isinstance(active, bool) and not problems:
            return active
        if not isinstance(active, bool):
            problems.append(f"active: must be true or false, got {render_value(active)}.")
    lines = "".join(f"\n  - {p}" for p in problems)
    raise MetadataValidationError(f"Invalid cluster status from {source}:{lines}", problems)
