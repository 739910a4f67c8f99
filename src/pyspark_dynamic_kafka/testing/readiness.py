"""When a starting cluster is ready: its own sign of life, then open ports, then a metadata answer
that lists the expected brokers of the expected cluster."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaException

from pyspark_dynamic_kafka.testing.errors import ClusterStartError, seconds_left
from pyspark_dynamic_kafka.testing.tcp import accepts_connections

__all__ = ["Readiness"]

#: Seconds one metadata request of the readiness poll may take.
_METADATA_ATTEMPT_SECONDS = 2.0


@dataclass(frozen=True)
class Readiness:
    """What a ready cluster shows.

    Parameters
    ----------
    brokers:
        How many brokers the metadata must list, or the node ids it must list.
    cluster_id:
        The cluster id the metadata must show, if any.
    servers:
        The ``host:port`` addresses that must accept connections.
    """

    brokers: int | Collection[int]
    cluster_id: str | None
    servers: list[str]

    def wait(
        self,
        metadata: Callable[[float], Any],
        deadline: float,
        problem: Callable[[], str | None],
        pending: Callable[[], str | None],
        failure: Callable[[str], str],
    ) -> None:
        """Poll until ready: ``pending`` first, then ports (cheap, and keeps librdkafka from
        logging refused connections), then ``metadata(timeout)``, a metadata answer.

        Raises
        ------
        ClusterStartError
            With ``failure(what was missing)`` at the deadline, or ``failure(reason)`` as soon
            as ``problem`` gives a reason.
        """
        closed = list(self.servers)
        waiting_for: str | None = "a first look"
        last_error = "no answer"
        while True:
            reason = problem()
            if reason is not None:
                raise ClusterStartError(failure(reason))
            if waiting_for is not None:
                waiting_for = pending()
            if waiting_for is not None:
                last_error = waiting_for
            elif closed := [server for server in closed if not accepts_connections(server)]:
                last_error = f"port(s) not open: {', '.join(closed)}"
            else:
                try:
                    answer = metadata(min(seconds_left(deadline), _METADATA_ATTEMPT_SECONDS))
                    last_error = self._missing(answer)
                    if not last_error:
                        return
                except KafkaException as exc:
                    last_error = f"no metadata answer ({exc})"
            if time.monotonic() >= deadline:
                raise ClusterStartError(failure(last_error))
            time.sleep(0.05)

    def _missing(self, answer: Any) -> str:
        """What the metadata answer lacks ("" when nothing)."""
        listed = set(answer.brokers)
        if isinstance(self.brokers, int):
            enough = len(listed) >= self.brokers
        else:
            enough = listed >= {*self.brokers}
        if enough and self.cluster_id in (None, answer.cluster_id):
            return ""
        return f"cluster id {answer.cluster_id!r}, brokers {sorted(listed)}"
