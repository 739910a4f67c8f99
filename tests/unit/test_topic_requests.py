"""testing/topic_requests.py: a topic's creation or deletion asked again until the cluster
answers.

The admin clients here are stand-ins: what is tested is an answer no real cluster gives on
demand (a request that reaches no broker, an earlier attempt found done by a later one). The
real requests run in every integration test that creates a topic.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from pyspark_dynamic_kafka.testing import topic_requests
from pyspark_dynamic_kafka.testing.errors import KafkaTestingError
from pyspark_dynamic_kafka.testing.topic_requests import change_topic

#: The futures each new client's request returns, in order: None never completes.
Answers = list[KafkaError | str | None]


class Cluster:
    """Stand-in admin clients: the n-th client's request answers ``answers[n]`` (``"ok"``: done,
    ``None``: never, else that error), and how long each attempt may wait is recorded."""

    def __init__(self, answers: Answers) -> None:
        self.answers = answers
        self.waits: list[float] = []
        self.open = 0

    @contextlib.contextmanager
    def admin(self) -> Iterator[Any]:
        self.open += 1
        try:
            yield object()
        finally:
            self.open -= 1

    def request(self, client: object, seconds: float) -> dict[str, Any]:
        self.waits.append(seconds)
        answer = self.answers[len(self.waits) - 1]
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        if isinstance(answer, KafkaError):
            future.set_exception(KafkaException(answer))
        elif answer == "ok":
            future.set_result(None)
        return {"orders": future}


@pytest.fixture(autouse=True)
def _short_attempts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(topic_requests, "ATTEMPT_SECONDS", 0.2)
    monkeypatch.setattr(topic_requests, "GRACE_SECONDS", 0.0)


def _ask(cluster: Cluster, verb: str, seconds: float = 5.0) -> None:
    change_topic(cluster.admin, verb, "orders", cluster.request, time.monotonic() + seconds, "east")


def test_a_request_that_gets_no_answer_is_asked_again_on_a_new_client() -> None:
    cluster = Cluster([None, None, "ok"])
    _ask(cluster, "create")
    assert len(cluster.waits) == 3
    assert all(0 < w <= 0.2 for w in cluster.waits)
    assert cluster.open == 0


@pytest.mark.parametrize(
    ("verb", "code"),
    [("create", KafkaError.TOPIC_ALREADY_EXISTS), ("delete", KafkaError.UNKNOWN_TOPIC_OR_PART)],
)
def test_a_repeated_request_that_finds_its_earlier_attempt_done_is_done(
    verb: str, code: int
) -> None:
    cluster = Cluster([KafkaError(KafkaError.REQUEST_TIMED_OUT), KafkaError(code)])
    _ask(cluster, verb)
    assert len(cluster.waits) == 2


@pytest.mark.parametrize(
    ("verb", "code"),
    [("create", KafkaError.TOPIC_ALREADY_EXISTS), ("delete", KafkaError.UNKNOWN_TOPIC_OR_PART)],
)
def test_the_first_attempts_refusal_is_the_callers_error(verb: str, code: int) -> None:
    cluster = Cluster([KafkaError(code, "said by the broker")])
    with pytest.raises(KafkaTestingError) as raised:
        _ask(cluster, verb)
    assert f"cluster 'east' could not {verb} topic 'orders': " in str(raised.value)
    assert "said by the broker" in str(raised.value)
    assert isinstance(raised.value.__cause__, KafkaException)
    assert len(cluster.waits) == 1


def test_a_refusal_that_is_not_a_timeout_is_not_asked_again() -> None:
    cluster = Cluster([None, KafkaError(KafkaError.INVALID_REPLICATION_FACTOR, "3 > 1 broker")])
    with pytest.raises(KafkaTestingError, match=r"could not create topic 'orders': .*3 > 1 broker"):
        _ask(cluster, "create")
    assert len(cluster.waits) == 2


def test_no_answer_by_the_deadline_says_how_many_attempts_were_made() -> None:
    cluster = Cluster([None] * 100)
    with pytest.raises(KafkaTestingError, match=r"no answer in (\d+) attempt\(s\)") as raised:
        _ask(cluster, "delete", seconds=0.5)
    attempts = len(cluster.waits)
    assert 2 <= attempts <= 4
    assert f"no answer in {attempts} attempt(s)" in str(raised.value)
    assert cluster.open == 0
