"""Bearer tokens: read from a file, checked for shape; their values are never shown."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from pyspark_dynamic_kafka.errors import OptionsError

__all__ = ["check_token", "load_token"]

_log = logging.getLogger(__name__)


def _printable(token: str) -> bool:
    return all(33 <= ord(ch) < 127 for ch in token)


def check_token(token: str | None) -> str | None:
    """Return ``token`` stripped, or ``None`` when it is blank.

    Raises
    ------
    OptionsError
        When it is not one line of printable ASCII without spaces (the value is not shown).
    """
    if token is None or not token.strip():
        return None
    token = token.strip()
    if not _printable(token):
        raise OptionsError(
            "Invalid metadata service token (metadataService.token; value not shown): a bearer "
            "token is one line of printable ASCII without spaces."
        )
    return token


def load_token(path: str | os.PathLike[str], option: str) -> str:
    """Read a bearer token from a file (surrounding whitespace stripped).

    Parameters
    ----------
    path:
        The token file.
    option:
        The command-line option that named it, for messages.

    Raises
    ------
    OptionsError
        When the file cannot be read, is empty, or holds more than one line.
    """
    source = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
        mode = os.stat(path).st_mode
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise OptionsError(f"{option} {source}: cannot read the token file ({reason}).") from None
    token = text.strip()
    if not token:
        raise OptionsError(f"{option} {source}: the token file is empty; put the token in it.")
    if not _printable(token):
        raise OptionsError(
            f"{option} {source}: the token must be one line of printable ASCII without spaces "
            "(value not shown)."
        )
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        _log.warning("%s %s is readable by other users; restrict it (chmod 600).", option, source)
    return token
