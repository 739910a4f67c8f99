"""The suite's patient query start (``tests/query_start.py``): a query that failed initializing
because its Python worker connected back too late is started again; nothing else is.

The queries here are stand-ins (the one mock of this module): a real late worker needs an
interpreter that takes more than Spark's fixed 10 s to start, which no test should pay for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests import query_start


@dataclass
class StandIn:
    """A query as :func:`query_start.failed_initializing` sees it: its status, activity,
    progress and error, already settled."""

    error: str | None
    progress: list[dict[str, Any]] = field(default_factory=list)
    message: str = "Stopped"
    isActive: bool = False
    name: str = "q"

    @property
    def status(self) -> dict[str, Any]:
        return {"message": self.message}

    @property
    def recentProgress(self) -> list[dict[str, Any]]:
        return self.progress

    def exception(self) -> str | None:
        return self.error


LATE = f"{query_start.SLOW_WORKER}.\n=== Streaming Query ==="


def starts(*outcomes: StandIn) -> tuple[Any, list[StandIn]]:
    """A patient start over queries that end as ``outcomes``, in order, and the ones started."""
    started: list[StandIn] = []

    def start(writer: object) -> StandIn:
        started.append(outcomes[len(started)])
        return started[-1]

    return query_start.patient(start), started


def test_a_late_worker_at_initialization_starts_the_query_again() -> None:
    start, started = starts(StandIn(LATE), StandIn(None, isActive=True, message="Waiting"))
    assert start(object()) is started[1]
    assert len(started) == 2


def test_it_gives_up_after_three_starts() -> None:
    start, started = starts(StandIn(LATE), StandIn(LATE), StandIn(LATE), StandIn(None))
    assert start(object()) is started[2]
    assert len(started) == 3


def test_other_failures_and_failures_after_progress_are_the_tests_own() -> None:
    for outcome in (
        StandIn("pyspark_dynamic_kafka ... needs PySpark 4.2"),
        StandIn(LATE, progress=[{"batchId": 0}]),
        StandIn(None),
    ):
        start, started = starts(outcome, StandIn(None))
        assert start(object()) is outcome
        assert started == [outcome]


def test_a_query_still_initializing_at_the_deadline_is_returned() -> None:
    slow = StandIn(None, isActive=True, message="Initializing sources")
    assert not query_start.failed_initializing(slow, deadline=0.05)


def test_a_scripts_output_shows_a_query_that_failed_initializing_only_with_its_state() -> None:
    """What a whole run of a user's script printed (tests/integration/test_newcomer.py)."""
    initializing = f"{LATE}\nCurrent Committed Offsets: {{}}\nCurrent State: INITIALIZING\n"
    assert query_start.failed_initializing_in(initializing)
    assert not query_start.failed_initializing_in(initializing.replace("INITIALIZING", "ACTIVE"))
    assert not query_start.failed_initializing_in("Current State: INITIALIZING\nsome other error")
