"""How a driver's ``list_offsets`` spends its timeout when a partition's leader may be gone: in
short waits, each by a new client, then longer ones (:class:`Waits`).

librdkafka's admin client sends ListOffsets to the leader its metadata names and, when that
broker is gone, asks again and again until the request's timeout (0.6 to 0.8 of a core while
it does, measured), never learning of the new leader. Measured on Apache Kafka
4.4 with librdkafka 2.16, three brokers, a partition's leader killed: a 30 s ``list_offsets``
answered ``-1001`` (no offset) for the partition after 30.0 s, though the cluster had elected
another leader after ~12 s; a new client asked then answered at once.

A broker that is only slow answers ``-1001`` too when the wait ends first (a leader paused for
5 s, asked with a 3 s wait), and a new client whose metadata was taken a moment before the
election waits for the killed leader as long as it is let to. So the first waits are short
(:data:`SHORT_WAIT_S`, for :data:`SHORT_FOR_S`: a cluster fences a killed broker after
``broker.session.timeout.ms``, 9 s by default, and elects another leader), then each is twice
the one before up to 30 s, the last all the time left: a broker slow for longer is still
waited for. Only one request waits at a time: two clients asking a gone leader at once (one
waiting the whole timeout, one asking again) used 1.9 cores and starved the two-core test
machine's brokers, which then elected no new leader for over a minute.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["LONGEST_WAIT_S", "SHORT_FOR_S", "SHORT_WAIT_S", "Wait", "Waits"]

#: The length of the first waits (seconds).
SHORT_WAIT_S = 3.0
#: How long the waits stay short (seconds): about the time a cluster takes to elect a new
#: leader for a killed one with ``broker.session.timeout.ms`` at its default, 9 s.
SHORT_FOR_S = 12.0
#: The longest wait but the last (seconds): a new client at least this often.
LONGEST_WAIT_S = 30.0


@dataclass(frozen=True)
class Wait:
    """One wait: ``seconds`` (at least a millisecond), and whether it is the last (it lasts
    until the deadline)."""

    seconds: float
    last: bool


class Waits:
    """The waits that spend ``timeout_s`` from now (the deadline is set when this is made):
    ``short_s`` while less than ``short_for_s`` has passed, then each twice the one before
    (:data:`LONGEST_WAIT_S` at most) while twice it is less than the time left, then all the
    time left (the last). A 30 s timeout: 3, 3, 3, 3, 6 and 12 s; a timeout under twice
    ``short_s`` is one wait.
    """

    def __init__(
        self,
        timeout_s: float,
        clock: Callable[[], float] = time.monotonic,
        short_s: float = SHORT_WAIT_S,
        short_for_s: float = SHORT_FOR_S,
    ) -> None:
        self._clock = clock
        self._start = clock()
        self.deadline = self._start + timeout_s
        self._short_for = short_for_s
        self._step = short_s

    def left(self) -> float:
        """Seconds until the deadline, at least a millisecond (a request's timeout)."""
        return max(self.deadline - self._clock(), 0.001)

    def next(self) -> Wait:
        """The next wait; after the last, what is left of the timeout again."""
        now = self._clock()
        if now - self._start >= self._short_for:
            self._step = min(self._step * 2, LONGEST_WAIT_S)
        left = self.deadline - now
        if left <= 2 * self._step:
            return Wait(max(left, 0.001), last=True)
        return Wait(self._step, last=False)
