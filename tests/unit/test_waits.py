"""``Waits``: how a driver's ``list_offsets`` spends its timeout (a clock of the test's)."""

from __future__ import annotations

import pytest

from pyspark_dynamic_kafka.kafka.waits import Wait, Waits


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _spent(timeout_s: float, between_s: float = 0.0) -> list[Wait]:
    """Every wait of ``timeout_s``, each waited whole, ``between_s`` spent after each."""
    clock = _Clock()
    waits = Waits(timeout_s, clock)
    spent: list[Wait] = []
    while not spent or not spent[-1].last:
        spent.append(waits.next())
        clock.now += spent[-1].seconds + between_s
    return spent


def test_thirty_seconds_are_short_waits_for_twelve_then_longer_ones() -> None:
    assert _spent(30.0) == [
        Wait(3.0, False),
        Wait(3.0, False),
        Wait(3.0, False),
        Wait(3.0, False),
        Wait(6.0, False),
        Wait(12.0, True),
    ]


def test_a_timeout_under_two_short_waits_is_one_wait() -> None:
    assert _spent(5.0) == [Wait(5.0, True)]
    (only,) = _spent(0.1)
    assert only.last and only.seconds == pytest.approx(0.1)


def test_time_spent_between_waits_comes_out_of_the_last() -> None:
    spent = _spent(30.0, between_s=0.5)
    assert sum(w.seconds for w in spent) + 0.5 * (len(spent) - 1) == pytest.approx(30.0)
    assert spent[-1].last and all(not w.last for w in spent[:-1])


def test_a_long_timeout_doubles_the_waits_after_the_short_ones() -> None:
    seconds = [w.seconds for w in _spent(300.0)]
    assert seconds[:4] == [3.0] * 4
    assert seconds[4:-1] == [6.0, 12.0, 24.0] + [30.0] * 7
    assert seconds[-1] == pytest.approx(300.0 - sum(seconds[:-1]))


def test_after_the_deadline_the_wait_is_the_shortest() -> None:
    clock = _Clock()
    waits = Waits(1.0, clock)
    clock.now += 5.0
    assert waits.next() == Wait(0.001, True) and waits.left() == 0.001
