"""Bearer tokens of the reference server: checking each request against them.

- Writes need the *write token* (``--token-file``); without one the server is read-only.
- Reads are open unless a *read token* is set (``--read-token-file``); the write token may read
  too. Protect reads whenever the metadata holds secrets (``sasl.password``, ...).

Tokens are compared in constant time and never logged or echoed.
"""

from __future__ import annotations

import hmac

__all__ = ["AuthDecision", "Authorizer"]

#: ``(status, message)`` of a refused request, or ``None`` when it may proceed.
AuthDecision = tuple[int, str] | None


def _bearer(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def _same(presented: str, expected: str | None) -> bool:
    return expected is not None and hmac.compare_digest(
        presented.encode("utf-8"), expected.encode("utf-8")
    )


class Authorizer:
    """Decides whether a request's ``Authorization`` header allows a read or a write.

    Parameters
    ----------
    read_token:
        Token required to read, or ``None`` for open reads.
    write_token:
        Token required to write, or ``None`` to refuse every write.
    """

    def __init__(self, read_token: str | None, write_token: str | None) -> None:
        self._read = read_token
        self._write = write_token

    @property
    def writes_enabled(self) -> bool:
        """Whether the server accepts writes at all."""
        return self._write is not None

    @property
    def reads_protected(self) -> bool:
        """Whether reads need a token."""
        return self._read is not None

    def __repr__(self) -> str:
        return (
            f"Authorizer(reads_protected={self.reads_protected}, "
            f"writes_enabled={self.writes_enabled})"
        )

    def check(self, authorization: str | None, write: bool) -> AuthDecision:
        """Return ``None`` when the request may proceed, else ``(status, message)``.

        ``401`` for a missing or unknown token, ``403`` for a token that may not do this.
        """
        presented = _bearer(authorization)
        if write:
            if self._write is None:
                return (
                    403,
                    "Writes are disabled on this server: start it with --token-file to accept "
                    "writes authenticated with that token.",
                )
            if presented is not None and _same(presented, self._write):
                return None
            if presented is not None and _same(presented, self._read):
                return 403, "This token may only read; writes need the write token."
            return 401, "Writes need the write token: send 'Authorization: Bearer <token>'."
        if self._read is None:
            return None
        if presented is not None and (
            _same(presented, self._read) or _same(presented, self._write)
        ):
            return None
        return 401, "Reads need a token: send 'Authorization: Bearer <token>'."
