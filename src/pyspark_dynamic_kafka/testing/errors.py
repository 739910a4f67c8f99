"""The errors of :mod:`pyspark_dynamic_kafka.testing` (each a :class:`KafkaTestingError`), and
what they are raised about, shared by its modules: deadlines, log tails, free ports, cluster
names, the record and property types, and the environment variables that name brokers."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

from confluent_kafka import KafkaException

from pyspark_dynamic_kafka.errors import DynamicKafkaError

__all__ = [
    "BROKER_ENV_VAR",
    "ENV_VAR",
    "LISTENER_ENV_VAR",
    "BrokersEnvError",
    "ClusterStartError",
    "ConfigValue",
    "KafkaTestingError",
    "ProduceError",
    "RecordLike",
    "SparkStartError",
    "check_names",
    "free_ports",
    "log_tail",
    "seconds_left",
    "wait_for",
]

ENV_VAR = "DYNAMIC_KAFKA_TEST_BROKERS"
"""Names existing brokers to test against: ``east=host:port,west=host:port``."""

BROKER_ENV_VAR = "DYNAMIC_KAFKA_TEST_BROKER"
"""Names the kind of local broker :func:`open_clusters` starts (``kafka`` unless set)."""

LISTENER_ENV_VAR = "DYNAMIC_KAFKA_TEST_LISTENER"
"""The listener clients of local Apache Kafka clusters use unless told: ``PLAINTEXT`` (unset),
or ``SASL_SSL`` (TLS and SASL PLAIN, as production estates run)."""

ConfigValue: TypeAlias = str | int | float | bool
"""A librdkafka client property value."""

KeyOrValue: TypeAlias = str | bytes | None

RecordLike: TypeAlias = tuple[KeyOrValue, KeyOrValue] | Mapping[str, Any]
"""A record to produce: ``(key, value)`` or a mapping with the keys ``key``, ``value``, ``headers``,
``timestamp`` (milliseconds since the epoch) and ``partition``; every key is optional."""


class KafkaTestingError(DynamicKafkaError):
    """Root of the errors raised by :mod:`pyspark_dynamic_kafka.testing`."""


class ClusterStartError(KafkaTestingError):
    """A local cluster did not start or did not answer metadata requests in time."""


class SparkStartError(KafkaTestingError):
    """A local Spark process (standalone master or worker, Connect server) did not start in
    time or exited."""


class ProduceError(KafkaTestingError):
    """Records could not be produced, or are not all visible below the high watermark."""


class BrokersEnvError(KafkaTestingError, ValueError):
    """``DYNAMIC_KAFKA_TEST_BROKERS`` is malformed or names too few clusters."""


def seconds_left(deadline: float) -> float:
    """Seconds until ``deadline`` (monotonic), at least 0.1 so that a last attempt is made."""
    return max(deadline - time.monotonic(), 0.1)


def check_names(names: Sequence[str]) -> None:
    """Refuse a string or repeated names where cluster names are expected."""
    if isinstance(names, str):
        raise TypeError("names must be a sequence of cluster names, not a string")
    duplicates = sorted({n for n in names if list(names).count(n) > 1})
    if duplicates:
        raise ValueError(f"duplicate cluster names: {duplicates}")


def wait_for(condition: Callable[[], bool], deadline: float, what: str) -> None:
    """Poll ``condition`` until it holds; a Kafka error counts as "not yet".

    Parameters
    ----------
    condition:
        Called every 50 ms until it returns true.
    deadline:
        ``time.monotonic()`` value after which waiting fails.
    what:
        What is awaited, for the error message.

    Raises
    ------
    KafkaTestingError
        If ``condition`` still fails at the deadline (the last Kafka error is named).
    """
    last_error: Exception | None = None
    while True:
        try:
            if condition():
                return
        except KafkaException as exc:
            last_error = exc
        if time.monotonic() >= deadline:
            detail = f" (last error: {last_error})" if last_error else ""
            raise KafkaTestingError(f"timed out waiting for {what}{detail}")
        time.sleep(0.05)


#: How much of the end of a broker's log failure messages show.
LOG_TAIL_BYTES = 6000


def free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports (all held open while choosing)."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sockets.append(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sockets[-1].bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def log_tail(path: Path, offset: int = 0, limit: int | None = LOG_TAIL_BYTES) -> str:
    """The text of ``path`` from byte ``offset`` on, only its last ``limit`` bytes when given."""
    if not path.exists():
        return "(no log)"
    with open(path, "rb") as log:
        size = log.seek(0, os.SEEK_END)
        log.seek(offset if limit is None else max(size - limit, offset))
        return log.read().decode("utf-8", errors="replace") or "(empty log)"
