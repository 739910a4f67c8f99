"""HTTP client of the metadata contract: authentication, TLS, timeouts, errors, ETag cache.

Built on the standard library (``ssl``; requests go through a
:data:`~pyspark_dynamic_kafka.metadata.http_api.transport.Transport`). TLS certificates
are always verified (``ca_file`` adds a private CA). Redirects are not followed, so the bearer
token is only ever sent to the configured origin. The token never appears in a log record, an
error message or a ``repr``.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import logging
import os
import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import urlencode, urlsplit

from pyspark_dynamic_kafka.errors import (
    MetadataAccessError,
    MetadataConflictError,
    MetadataError,
    MetadataNotFoundError,
    MetadataValidationError,
    OptionsError,
)
from pyspark_dynamic_kafka.kafka.config import redact
from pyspark_dynamic_kafka.metadata.http_api.tokens import check_token
from pyspark_dynamic_kafka.metadata.http_api.transport import (
    HttpRequest,
    HttpResponse,
    Transport,
    urllib_transport,
)
from pyspark_dynamic_kafka.metadata.http_api.wire import JSON_MEDIA_TYPE, error_text

__all__ = ["DEFAULT_TIMEOUT_MS", "MetadataHttpClient"]

_log = logging.getLogger(__name__)

#: Default timeout of one request, in milliseconds.
DEFAULT_TIMEOUT_MS = 10000
_USER_AGENT = "pyspark-dynamic-kafka"
_URL_OPTION = "option metadataService.url"
_CA_OPTION = "option metadataService.caFile"

T = TypeVar("T")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_url(url: str) -> str:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise OptionsError(
            f"Invalid metadata service URL {url!r} ({_URL_OPTION}): expected "
            "http(s)://host[:port][/base-path], "
            "e.g. https://metadata.example.com or http://127.0.0.1:8080."
        )
    if parts.username is not None or parts.password is not None:
        raise OptionsError(
            f"Invalid metadata service URL ({_URL_OPTION}): it must not hold credentials "
            "(user:password@); pass the bearer token separately (metadataService.token)."
        )
    if parts.query or parts.fragment:
        raise OptionsError(
            f"Invalid metadata service URL {url!r} ({_URL_OPTION}): remove the query string or "
            "fragment; give the service's base URL (the client adds /v1/...)."
        )
    try:
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise OptionsError(
            f"Invalid metadata service URL {url!r} ({_URL_OPTION}): bad port."
        ) from None
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"


class MetadataHttpClient:
    """Sends requests of the metadata contract to one service.

    Parameters
    ----------
    url:
        Base URL of the service (``http(s)://host[:port][/base-path]``); paths such as
        ``/v1/streams`` are appended.
    token:
        Bearer token sent in ``Authorization``; ``None`` or blank sends none.
    timeout_ms:
        Timeout of one request (connect, and each read).
    ca_file:
        PEM file of the CA that signed the service's certificate (``https`` only); the system's
        CAs otherwise. Certificates and host names are always verified.
    transport:
        What sends a request; ``None`` for :func:`urllib_transport`.

    The defaults of these arguments are those of
    :class:`~pyspark_dynamic_kafka.metadata.http.HttpMetadataService`, the client's one user.

    Raises
    ------
    OptionsError
        For a malformed URL or token, a non-positive timeout, or an unusable ``ca_file``.
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None,
        timeout_ms: int,
        ca_file: str | None,
        transport: Transport | None,
    ) -> None:
        self._base = _check_url(url)
        self._token = check_token(token)
        if timeout_ms <= 0:
            raise OptionsError(
                f"Invalid metadata service timeout {timeout_ms!r} ms (metadataService.timeoutMs): "
                "it must be positive."
            )
        self._timeout_ms = timeout_ms
        https = self._base.startswith("https:")
        if ca_file and not https:
            raise OptionsError(
                f"A CA file ({_CA_OPTION} {ca_file}) only applies to https URLs; the URL is "
                f"{self._base}. Use https, or drop the CA file."
            )
        if ca_file and not os.path.isfile(ca_file):
            raise OptionsError(
                f"CA file {ca_file} ({_CA_OPTION}) does not exist or is not a file: fix the path."
            )
        self._ca_file = ca_file or None
        self._https = https
        self._transport = transport or urllib_transport
        self._context: ssl.SSLContext | None = None
        self._cache: dict[str, tuple[str, object]] = {}
        self._lock = threading.Lock()
        host = urlsplit(self._base).hostname or ""
        if self._token and not https and not _is_loopback(host):
            _log.warning(
                "The metadata service URL %s is plain http: the bearer token travels unencrypted. "
                "Use https.",
                self._base,
            )

    @property
    def base_url(self) -> str:
        """The service's base URL (no trailing slash)."""
        return self._base

    def __repr__(self) -> str:
        token = "******" if self._token else None
        return f"MetadataHttpClient({self._base!r}, token={token!r})"

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.update(_context=None, _cache={}, _lock=None)
        if state["_transport"] is not urllib_transport:
            state["_transport"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        if self._transport is None:
            self._transport = urllib_transport

    def _ssl_context(self) -> ssl.SSLContext | None:
        if not self._https:
            return None
        if self._context is None:
            try:
                self._context = ssl.create_default_context(cafile=self._ca_file)
            except (OSError, ssl.SSLError) as exc:
                raise OptionsError(
                    f"CA file {self._ca_file} ({_CA_OPTION}) cannot be used: {exc}. Give a PEM "
                    "file of CA certificates."
                ) from None
        return self._context

    def url(self, path: str, query: Sequence[tuple[str, str]] = ()) -> str:
        """The absolute URL of ``path`` (with ``query``)."""
        return f"{self._base}{path}" + (f"?{urlencode(list(query))}" if query else "")

    def _safe(self, text: str) -> str:
        return redact(text, [self._token] if self._token else [])

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: object = None,
        headers: Mapping[str, str] | None = None,
    ) -> HttpResponse:
        """Send one request; return any response except 401 and 403.

        Raises
        ------
        MetadataAccessError
            On 401 or 403.
        MetadataError
            When no response arrives (refused, timed out, TLS failure, broken connection).
        """
        url = self.url(path, query)
        sent = {"Accept": JSON_MEDIA_TYPE, "User-Agent": _USER_AGENT, **(headers or {})}
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            sent["Content-Type"] = JSON_MEDIA_TYPE
        if self._token:
            sent["Authorization"] = f"Bearer {self._token}"
        timeout_s = self._timeout_ms / 1000.0
        request = HttpRequest(method, url, sent, data, timeout_s, self._ssl_context())
        try:
            response = self._transport(request)
        except (OSError, http.client.HTTPException) as exc:
            raise MetadataError(self._safe(self._no_answer(method, url, exc))) from None
        if response.status in (401, 403):
            raise MetadataAccessError(self._safe(self._refused(method, url, response)))
        return response

    def _no_answer(self, method: str, url: str, exc: BaseException) -> str:
        reason: object = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        if isinstance(reason, ssl.SSLCertVerificationError):
            return (
                f"Metadata service {method} {url}: TLS certificate verification failed "
                f"({reason.verify_message or reason}). If the service's certificate is signed by "
                "a private CA, give that CA's PEM file (metadataService.caFile)."
            )
        if isinstance(reason, TimeoutError):
            return (
                f"Metadata service {method} {url}: no answer within {self._timeout_ms} ms. Check "
                "that the service is up, or raise the timeout (metadataService.timeoutMs)."
            )
        detail = getattr(reason, "strerror", None) or str(reason) or type(reason).__name__
        return (
            f"Metadata service {method} {url}: could not get an answer ({detail}). Check that "
            "the service is running and the URL is right."
        )

    def _refused(self, method: str, url: str, response: HttpResponse) -> str:
        detail = error_text(response.body, limit=500)
        what = (
            "no token was sent: set the service's token (metadataService.token)"
            if not self._token and response.status == 401
            else "the token is missing, wrong or lacks the permission for this request: fix it"
        )
        return (
            f"Metadata service {method} {url} refused the request with HTTP {response.status}"
            f"{f' ({detail})' if detail else ''}; {what}."
        )

    def fail(self, method: str, path: str, response: HttpResponse) -> MetadataError:
        """The error for an unexpected status (5xx, 404, 412, 422, other 4xx)."""
        detail = error_text(response.body) or "no details"
        message = self._safe(
            f"Metadata service {method} {self.url(path)} answered HTTP {response.status}: {detail}"
        )
        if response.status == 404:
            return MetadataNotFoundError(message)
        if response.status == 412:
            return MetadataConflictError(
                f"{message}\nThe resource changed since it was read; read it again and retry."
            )
        if response.status in (400, 422):
            return MetadataValidationError(message)
        return MetadataError(message)

    def decode(self, response: HttpResponse, source: str) -> object:
        """The JSON value of a response body.

        Raises
        ------
        MetadataValidationError
            When the body is not JSON.
        """
        try:
            return json.loads(response.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            raise MetadataValidationError(
                f"Invalid response from metadata service {source}: the body is not JSON "
                f"({reason}). The service does not follow the contract (metadata-service-openapi)."
            ) from None

    def get_cached(
        self,
        path: str,
        parse: Callable[[object, str], T],
        query: Sequence[tuple[str, str]] = (),
    ) -> T:
        """GET ``path`` conditionally: an unchanged resource costs one ``304``.

        The last good answer for each URL is kept with its ETag and sent back in
        ``If-None-Match``; ``parse(body, source)`` validates a new body (and raises
        :class:`MetadataValidationError` when it is malformed).

        Raises
        ------
        MetadataAccessError
            On 401 or 403.
        MetadataError
            For no answer, a 5xx or another unexpected status, or a malformed body.
        """
        url = self.url(path, query)
        with self._lock:
            cached = self._cache.get(url)
        headers = {"If-None-Match": cached[0]} if cached else {}
        response = self.request("GET", path, query=query, headers=headers)
        if response.status == 304 and cached is not None:
            _log.debug("Metadata service %s: not modified (%s)", url, cached[0])
            value: T = cached[1]  # type: ignore[assignment]
            return value
        if response.status != 200:
            raise self.fail("GET", path, response)
        parsed = parse(self.decode(response, url), url)
        etag = response.headers.get("etag")
        with self._lock:
            if etag:
                self._cache[url] = (etag, parsed)
            else:
                self._cache.pop(url, None)
        return parsed

    def clear_cache(self) -> None:
        """Forget every cached answer."""
        with self._lock:
            self._cache.clear()
