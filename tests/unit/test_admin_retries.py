"""fetchOffset.numRetries / retryIntervalMs on driver listings, and secrets in client errors.

A listing that fails a few times and then succeeds cannot be produced on demand with a real broker,
so the admin client is scripted here.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from pyspark_dynamic_kafka.errors import KafkaClientError
from pyspark_dynamic_kafka.kafka.admin import ClusterAdmin

SENTINEL = "pw-SENTINEL-9f2c"


class _Topic:
    def __init__(self, partitions: int, error: KafkaError | None = None) -> None:
        self.partitions = dict.fromkeys(range(partitions))
        self.error = error


class _Metadata:
    def __init__(self) -> None:
        self.topics = {
            "orders": _Topic(2),
            "broken": _Topic(1, KafkaError(KafkaError.LEADER_NOT_AVAILABLE)),
            "gone": _Topic(0, KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)),
        }


class _Client:
    def __init__(self, failures: int, code: int = KafkaError.BROKER_NOT_AVAILABLE) -> None:
        self.failures = failures
        self.code = code
        self.calls = 0

    def list_topics(self, timeout: float) -> _Metadata:
        self.calls += 1
        if self.calls <= self.failures:
            raise KafkaException(KafkaError(self.code, f"broker said no ({SENTINEL})"))
        return _Metadata()


def _admin(client: Any, retries: int) -> ClusterAdmin:
    admin = ClusterAdmin(
        "east", {"bootstrap.servers": "h:1", "sasl.password": SENTINEL}, 1000, retries, 0
    )
    admin._client = client
    return admin


def test_listing_is_retried_then_succeeds() -> None:
    client = _Client(failures=2)
    listing = _admin(client, retries=3).list_topics(["orders", "broken", "gone", "never"])
    assert client.calls == 3
    assert listing.partitions == {"orders": (0, 1)}
    assert listing.absent == frozenset({"gone", "never"})
    assert listing.unavailable == frozenset({"broken"})


def test_retries_exhausted_fail_naming_the_cluster_without_the_secret() -> None:
    client = _Client(failures=10)
    with pytest.raises(KafkaClientError) as info:
        _admin(client, retries=2).list_topics(["orders"])
    assert client.calls == 3
    assert "Cluster 'east' (h:1)" in str(info.value)
    assert SENTINEL not in str(info.value)


def test_a_timeout_is_not_retried() -> None:
    client = _Client(failures=10, code=KafkaError._TIMED_OUT)
    with pytest.raises(KafkaClientError):
        _admin(client, retries=5).list_topics(["orders"])
    assert client.calls == 1
