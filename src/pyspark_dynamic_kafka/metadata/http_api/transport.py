"""How one request of the metadata contract is sent: request, response, transport.

The default transport is ``urllib.request`` with redirects disabled (a redirect could carry the
bearer token to another origin); tests may pass their own :data:`Transport`.
"""

from __future__ import annotations

import http.client
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["HttpRequest", "HttpResponse", "Transport", "urllib_transport"]

_MAX_BODY_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class HttpRequest:
    """One request as handed to a :data:`Transport`."""

    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes | None
    timeout_s: float
    ssl_context: ssl.SSLContext | None

    def __repr__(self) -> str:  # headers hold the bearer token
        return f"HttpRequest({self.method} {self.url})"


@dataclass(frozen=True)
class HttpResponse:
    """A response: status, headers (names lowercased) and body."""

    status: int
    headers: Mapping[str, str]
    body: bytes


#: Sends one request; raises ``OSError`` (incl. timeouts) or ``http.client.HTTPException`` when
#: no response arrives. The default is :func:`urllib_transport`; tests may pass their own.
Transport = Callable[[HttpRequest], HttpResponse]


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Never follow a redirect (it could carry the token elsewhere): a 3xx is an answer."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _read(stream: Any) -> bytes:
    body: bytes = stream.read(_MAX_BODY_BYTES + 1)
    if len(body) > _MAX_BODY_BYTES:
        raise http.client.HTTPException(f"response body larger than {_MAX_BODY_BYTES} bytes")
    return body


def urllib_transport(request: HttpRequest) -> HttpResponse:
    """Send ``request`` with ``urllib.request`` (proxies from the environment are honoured)."""
    handlers: list[urllib.request.BaseHandler] = [_NoRedirect()]
    if request.ssl_context is not None:
        handlers.append(urllib.request.HTTPSHandler(context=request.ssl_context))
    opener = urllib.request.build_opener(*handlers)
    req = urllib.request.Request(
        request.url, data=request.body, headers=dict(request.headers), method=request.method
    )
    try:
        with opener.open(req, timeout=request.timeout_s) as response:
            headers = {k.lower(): v for k, v in response.headers.items()}
            return HttpResponse(response.status, headers, _read(response))
    except urllib.error.HTTPError as exc:  # any status urllib does not call success
        headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
        body = _read(exc) if exc.fp is not None else b""
        return HttpResponse(exc.code, headers, body)
