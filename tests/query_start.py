"""A streaming query the suite starts is started again when Spark gave up on a Python worker
before the query's first batch, and only then.

Spark gives a Python worker that is not forked from its daemon a fixed 10 s to connect back
(``PythonWorkerFactory.createSimpleWorker``, a constant in Spark 4.0-4.3, not a setting). A
streaming query starts one such worker for each Python source while it initializes
(``PythonStreamingSourceRunner``): the interpreter starts and imports PySpark (0.5 s on a quiet
machine). On a loaded 2-core machine that can take longer than 10 s, and the query fails in
``INITIALIZING``, before any batch, with "Python worker failed to connect back" (seen once in a
full suite run beside a fuzz run and two compiler builds). That is the machine, not the code
under test, and a user's scheduler starts such a query again; so does :func:`install`, at most
twice per start, for that error only, and only when the failed query made no progress. Any
other failure, and this one after the first batch, reaches the test as it is.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any

_log = logging.getLogger(__name__)

SLOW_WORKER = "Python worker failed to connect back"
ATTEMPTS = 3
# How long a query may stay initializing before the start returns it as it is (generous: a
# loaded machine; a query that initializes longer fails or passes in the test's own waits).
INITIALIZING_DEADLINE = 120.0


def failed_initializing(query: Any, deadline: float = INITIALIZING_DEADLINE) -> bool:
    """Whether ``query`` ended while initializing because a Python worker connected back too
    late: waits while the query initializes (status "Initializing ..."), up to ``deadline``
    seconds."""
    end = time.monotonic() + deadline
    delay = 0.02
    while query.isActive and str(query.status["message"]).startswith("Initializing"):
        if time.monotonic() > end:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.5)
    if query.isActive or query.recentProgress:
        return False
    error = query.exception()
    return error is not None and SLOW_WORKER in str(error)


def failed_initializing_in(output: str) -> bool:
    """Whether a process's ``output`` shows a streaming query that ended while initializing
    because a Python worker connected back too late (Spark's message of that query's error),
    for a process that does not install :func:`patient` (a user's script run whole)."""
    return SLOW_WORKER in output and "Current State: INITIALIZING" in output


def patient(start: Callable[..., Any]) -> Callable[..., Any]:
    """``DataStreamWriter.start`` that starts the query again after :func:`failed_initializing`."""

    @functools.wraps(start)
    def start_patiently(self: Any, *args: Any, **kwargs: Any) -> Any:
        for attempt in range(1, ATTEMPTS + 1):
            query = start(self, *args, **kwargs)
            if attempt == ATTEMPTS or not failed_initializing(query):
                return query
            _log.warning(
                "query %s failed initializing (%s); starting it again (attempt %d of %d)",
                query.name,
                SLOW_WORKER,
                attempt + 1,
                ATTEMPTS,
            )
        raise AssertionError("unreachable")  # pragma: no cover

    start_patiently.__wrapped_by_suite__ = True  # type: ignore[attr-defined]
    return start_patiently


def install() -> None:
    """Make ``DataStreamWriter.start`` :func:`patient` in this process (once)."""
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    if not getattr(DataStreamWriter.start, "__wrapped_by_suite__", False):
        DataStreamWriter.start = patient(DataStreamWriter.start)  # type: ignore[method-assign]
