"""A topic's creation or deletion asked of a test cluster until it answers.

A CreateTopics or DeleteTopics request goes to the broker the metadata names controller, which
forwards it in KRaft. On a cluster that just started, on a loaded machine, an admin client's
request sometimes reaches no broker at all within its timeout (CI: no broker of a fresh 3-broker
cluster logged the request in 30 s). So each attempt has its own admin client, whose metadata is
new, and a bounded wait; an attempt that timed out is asked again until the deadline. A repeated
request may find its own earlier attempt done: a creation then sees the topic exist, a deletion
sees it gone, and both count as done.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from pyspark_dynamic_kafka.testing.errors import KafkaTestingError, seconds_left

__all__ = ["ATTEMPT_SECONDS", "GRACE_SECONDS", "change_topic"]

#: Seconds one attempt waits for the cluster's answer before a new client asks again.
ATTEMPT_SECONDS = 10.0

#: Seconds the wait for an attempt's future outlasts the client's own timeout (which answers
#: first, with its error, where the client is not stuck).
GRACE_SECONDS = 1.0

#: What a repeated request answers when an earlier attempt of it took effect.
_DONE_BEFORE = {
    "create": KafkaError.TOPIC_ALREADY_EXISTS,
    "delete": KafkaError.UNKNOWN_TOPIC_OR_PART,
}

#: Errors after which the request is asked again (the broker may still carry it out).
_AGAIN = {KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT, KafkaError.NOT_CONTROLLER}


def change_topic(
    admin: Callable[[], contextlib.AbstractContextManager[Any]],
    verb: str,
    name: str,
    request: Callable[[Any, float], dict[str, Any]],
    deadline: float,
    cluster: str,
) -> None:
    """Ask ``request`` (an admin client and the seconds it may take, to the futures by topic)
    of a new client from ``admin`` until the cluster answers topic ``name`` or ``deadline``
    (monotonic) passes.

    Raises
    ------
    KafkaTestingError
        The cluster refused (``verb``, ``create`` or ``delete``, the topic ``name`` on cluster
        ``cluster``), or gave no answer by the deadline.
    """
    attempt = 0
    while True:
        attempt += 1
        wait = min(seconds_left(deadline), ATTEMPT_SECONDS)
        failed: KafkaException | None = None
        with admin() as client:
            futures = request(client, wait)
            try:
                futures[name].result(timeout=wait + GRACE_SECONDS)
                return
            except KafkaException as exc:
                failed = exc
            except concurrent.futures.TimeoutError:
                failed = None
            del client, futures  # raised from here, the traceback would keep the client open
        error: KafkaError | None = None if failed is None else failed.args[0]
        if error is not None and attempt > 1 and error.code() == _DONE_BEFORE[verb]:
            return
        if error is not None and error.code() not in _AGAIN and not error.retriable():
            raise KafkaTestingError(
                f"cluster {cluster!r} could not {verb} topic {name!r}: {error}"
            ) from failed
        if time.monotonic() >= deadline:
            raise KafkaTestingError(
                f"cluster {cluster!r} could not {verb} topic {name!r}: no answer in {attempt} "
                f"attempt(s) by the deadline (last: {error or 'no answer'})"
            ) from failed
