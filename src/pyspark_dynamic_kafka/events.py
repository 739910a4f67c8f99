"""Structured log lines: one JSON object per event, for log pipelines to parse.

A line is ``{"event": "<name>", ...fields}``; callers pass ids, counts and messages that are
already free of secrets (client properties never reach an event).
"""

from __future__ import annotations

import json
import logging
from typing import Any

__all__ = ["log_event"]


def log_event(logger: logging.Logger, level: int, event: str, **fields: Any) -> dict[str, Any]:
    """Log ``{"event": event, **fields}`` as one JSON line and return it.

    Parameters
    ----------
    logger:
        Where the line goes.
    level:
        Its level, e.g. ``logging.INFO``.
    event:
        The event's name, e.g. ``reconciliation`` or ``discovery_failure``.
    **fields:
        JSON-serialisable values (anything else is written as its ``str``).
    """
    record = {"event": event, **fields}
    if logger.isEnabledFor(level):
        logger.log(level, "%s", json.dumps(record, default=str))
    return record
