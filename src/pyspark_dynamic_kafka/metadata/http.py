"""Metadata from an HTTP service that follows the contract (``metadataService=http``).

Reads are conditional GETs (``If-None-Match``), so a discovery of unchanged metadata costs one
``304``: :meth:`HttpMetadataService.describe_streams` (or :meth:`get_all_streams`) makes the
request, and the :meth:`is_cluster_active` calls that follow within the same discovery are
answered from that response. Writes (used by ``dynamic-kafka move``) send ``If-Match`` so that
an edit made in between is never overwritten.

Failures, as the source's discovery sees them: no answer, a timeout, a 5xx or a malformed body
raise :class:`~pyspark_dynamic_kafka.errors.MetadataError` (a discovery failure, tolerated up to
``metadataDiscoveryFailureThreshold``); 401 and 403 raise
:class:`~pyspark_dynamic_kafka.errors.MetadataAccessError`, which fails a query at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pyspark_dynamic_kafka import optionspec
from pyspark_dynamic_kafka.errors import MetadataConflictError, MetadataValidationError
from pyspark_dynamic_kafka.metadata.document import ParsedMetadata, parse_metadata_document
from pyspark_dynamic_kafka.metadata.http_api import wire
from pyspark_dynamic_kafka.metadata.http_api.client import DEFAULT_TIMEOUT_MS, MetadataHttpClient
from pyspark_dynamic_kafka.metadata.http_api.transport import Transport
from pyspark_dynamic_kafka.metadata.model import KafkaStream

__all__ = ["DEFAULT_TIMEOUT_MS", "OPTIONS", "STATUS_REUSE_SECONDS", "HttpMetadataService"]

_log = logging.getLogger(__name__)

#: How long the clusters listed in a stream response answer :meth:`is_cluster_active` without
#: a request of their own (one discovery asks for streams, then for their clusters' status).
STATUS_REUSE_SECONDS = 5.0
_WRITE_ATTEMPTS = 3

Entries = list[dict[str, Any]]

#: The options of ``metadataService=http``, named after the arguments of
#: :class:`HttpMetadataService`.
OPTIONS = optionspec.service_options(
    "http",
    optionspec.OptionSpec(
        "url",
        optionspec.text,
        None,
        "Base URL of the service, e.g. https://metadata.example.com (the client adds /v1/...).",
        required=True,
        attr="url",
    ),
    optionspec.OptionSpec(
        "token",
        optionspec.raw,
        None,
        "Bearer token sent as Authorization: Bearer ...; never logged, masked in messages.",
        attr="token",
    ),
    optionspec.OptionSpec(
        "timeoutMs",
        optionspec.integer(1),
        str(DEFAULT_TIMEOUT_MS),
        "Timeout of one request, in milliseconds (a positive number).",
        attr="timeout_ms",
    ),
    optionspec.OptionSpec(
        "caFile",
        optionspec.optional_text,
        None,
        "PEM file of a private CA (https only); TLS certificates are always verified.",
        attr="ca_file",
    ),
)


class HttpMetadataService:
    """A :class:`~pyspark_dynamic_kafka.metadata.KafkaMetadataService` over the HTTP contract.

    Parameters
    ----------
    url:
        Base URL of the service, e.g. ``https://metadata.example.com``.
    token:
        Bearer token (never logged); ``None`` sends no ``Authorization`` header.
    timeout_ms:
        Timeout of one request.
    ca_file:
        PEM file of a private CA (``https`` only); certificates are always verified.
    transport, clock:
        For tests: what sends a request, and a monotonic clock in seconds.

    Raises
    ------
    OptionsError
        For a malformed URL or token, a non-positive timeout or an unusable CA file.
    """

    def __init__(
        self,
        url: str,
        token: str | None = None,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        ca_file: str | None = None,
        *,
        transport: Transport | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = MetadataHttpClient(
            url, token=token, timeout_ms=timeout_ms, ca_file=ca_file, transport=transport
        )
        self._clock = clock
        # (when, active clusters, whether that is every active cluster) of the last streams answer
        self._recent: tuple[float, frozenset[str], bool] | None = None

    @property
    def base_url(self) -> str:
        """The service's base URL."""
        return self._client.base_url

    def __repr__(self) -> str:
        return f"HttpMetadataService({self.base_url!r})"

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_recent"] = None
        if state["_clock"] is not time.monotonic:
            state["_clock"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self._clock is None:
            self._clock = time.monotonic

    # ------------------------------------------------------------------ reads
    def _streams(self, stream_ids: list[str] | None) -> ParsedMetadata:
        query = [("id", sid) for sid in stream_ids or []]
        parsed = self._client.get_cached(wire.STREAMS_PATH, parse_metadata_document, query)
        self._recent = (self._clock(), frozenset(parsed.clusters), stream_ids is None)
        return parsed

    def load(self) -> ParsedMetadata:
        """Every stream and every active cluster (one conditional GET)."""
        return self._streams(None)

    def get_all_streams(self) -> frozenset[KafkaStream]:
        """Return every stream the service knows (``GET /v1/streams``)."""
        return frozenset(self._streams(None).streams.values())

    def describe_streams(self, stream_ids: Iterable[str]) -> Mapping[str, KafkaStream]:
        """Return the known streams among ``stream_ids`` (``GET /v1/streams?id=...``)."""
        wanted = sorted(set(stream_ids))
        if not wanted:
            return {}
        streams = self._streams(wanted).streams
        return {sid: streams[sid] for sid in wanted if sid in streams}

    def is_cluster_active(self, cluster_id: str) -> bool:
        """Return whether ``cluster_id`` is active.

        Answered from the last streams response when it is recent and says so (a cluster it
        lists is active; one missing from a full listing is not); otherwise
        ``GET /v1/clusters/{clusterId}``.
        """
        recent = self._recent
        if recent is not None and self._clock() - recent[0] <= STATUS_REUSE_SECONDS:
            _when, active, complete = recent
            if cluster_id in active:
                return True
            if complete:
                return False
        return self._client.get_cached(
            wire.cluster_path(cluster_id),
            lambda body, source: wire.parse_cluster_status(body, cluster_id, source),
        )

    def close(self) -> None:
        """Forget the cached answers (connections are not kept open between requests)."""
        self._client.clear_cache()
        self._recent = None

    # ------------------------------------------------------------------ writes
    def get_stream(self, stream_id: str) -> tuple[Entries, str | None]:
        """One stream's entries and its ETag (``GET /v1/streams/{streamId}``, not cached).

        The ETag is ``None`` when the service sent none (then a write cannot be conditional).

        Raises
        ------
        MetadataNotFoundError
            When the service does not know the stream.
        """
        path = wire.stream_path(stream_id)
        response = self._client.request("GET", path)
        if response.status != 200:
            raise self._client.fail("GET", path, response)
        body = self._client.decode(response, self._client.url(path))
        parsed = parse_metadata_document(body, self._client.url(path))
        if stream_id not in parsed.streams or not isinstance(body, Mapping):
            raise MetadataValidationError(
                f"Invalid response from metadata service {self._client.url(path)}: it does not "
                f"describe stream {stream_id!r}."
            )
        entries: Entries = body["streams"][stream_id]
        return entries, response.headers.get("etag") or None

    def put_stream(self, stream_id: str, entries: Entries, if_match: str | None = None) -> str:
        """Replace (or create) a stream's entries; return the new ETag.

        Raises
        ------
        MetadataConflictError
            When ``if_match`` no longer matches (the stream changed since it was read).
        MetadataValidationError
            When the service rejects the entries (its problems are in the message).
        MetadataAccessError
            When the token is missing or not allowed to write.
        """
        path = wire.stream_path(stream_id)
        headers = {"If-Match": if_match} if if_match else {}
        response = self._client.request("PUT", path, body=entries, headers=headers)
        if response.status not in (200, 201):
            raise self._client.fail("PUT", path, response)
        return response.headers.get("etag", "")

    def update_stream(self, stream_id: str, change: Callable[[Entries], Entries]) -> Entries:
        """Read a stream, apply ``change`` to its entries and write them back with ``If-Match``.

        When another writer changed the stream in between (412), the read and the change are
        repeated (at most three attempts in all).

        Returns
        -------
        list[dict]
            The entries written.
        """
        attempt = 1
        while True:
            entries, etag = self.get_stream(stream_id)
            updated = change(entries)
            try:
                self.put_stream(stream_id, updated, if_match=etag)
            except MetadataConflictError:
                if attempt >= _WRITE_ATTEMPTS:
                    raise
                attempt += 1
                _log.info("Stream %r changed while it was edited; retrying.", stream_id)
                continue
            return updated
