"""The one admin access path (kafka.admin.ClusterAdmin): fetchOffset.numRetries /
retryIntervalMs on driver listings, and secrets in client errors, for the source's listings, the
singleCluster metadata service and consumer-group lookups alike.

A request that fails a few times and then succeeds, or a broker error quoting a secret, cannot be
produced on demand with a real broker, so the admin client is scripted in those tests; a client
that cannot be created is a real one.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from pyspark_dynamic_kafka.errors import KafkaClientError, MetadataError
from pyspark_dynamic_kafka.kafka.admin import ClusterAdmin
from pyspark_dynamic_kafka.metadata import SingleClusterMetadataService
from pyspark_dynamic_kafka.offset_spec import PositionKind
from pyspark_dynamic_kafka.source.group.admin_offsets import group_offsets

LATEST, EARLIEST = PositionKind.LATEST, PositionKind.EARLIEST

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


class _Failed:
    """A ``describe_topics`` future that failed."""

    def __init__(self, error: KafkaError) -> None:
        self.error = error

    def result(self) -> Any:
        raise KafkaException(self.error)


class _Client:
    """Scripted as confluent-kafka's ``AdminClient``: the first ``failures`` Metadata requests
    fail with ``code``, then the first ``describe_failures`` DescribeTopics requests with a
    client-side error (the controller librdkafka sends them to did not answer)."""

    def __init__(
        self,
        failures: int,
        code: int = KafkaError.BROKER_NOT_AVAILABLE,
        describe_failures: int = 0,
    ) -> None:
        self.failures = failures
        self.code = code
        self.describe_failures = describe_failures
        self.calls = 0
        self.describes = 0
        self.waits: list[float] = []

    def list_topics(self, timeout: float) -> _Metadata:
        self.calls += 1
        if self.calls <= self.failures:
            raise KafkaException(KafkaError(self.code, f"broker said no ({SENTINEL})"))
        return _Metadata()

    def describe_topics(self, topics: Any, request_timeout: float) -> dict[str, Any]:
        """As confluent-kafka answers: a future per topic, failed with the topic's error, or
        each with the request's error (a client-side one, negative) when it failed."""
        self.describes += 1
        self.waits.append(request_timeout)
        if self.describes <= self.describe_failures:
            failed = _Failed(KafkaError(KafkaError._TIMED_OUT, "waiting for controller"))
            return dict.fromkeys(topics.topic_names, failed)
        known = _Metadata().topics
        answers: dict[str, Any] = {}
        for name in topics.topic_names:
            topic = known.get(name)
            if topic is None:
                answers[name] = _Failed(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))
            elif topic.error is not None:
                answers[name] = _Failed(topic.error)
            else:
                partitions = [SimpleNamespace(id=p) for p in topic.partitions]
                described = SimpleNamespace(partitions=partitions, topic_id=None)
                answers[name] = _Future(described)
        return answers


class _Partition:
    def __init__(self, topic: str, partition: int, offset: int) -> None:
        self.topic, self.partition, self.offset, self.error = topic, partition, offset, None


class _Future:
    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self) -> Any:
        return self.value


class _GroupClient(_Client):
    def list_consumer_group_offsets(self, request: Any, request_timeout: float) -> Any:
        self.calls += 1
        if self.calls <= self.failures:
            raise KafkaException(KafkaError(self.code, f"group said no ({SENTINEL})"))
        (group,) = request
        # partition 0 committed offset 7; the others nothing (-1001): left out of the answer
        answer = [
            _Partition(tp.topic, tp.partition, 7 if tp.partition == 0 else -1001)
            for tp in group.topic_partitions
        ]
        return {group.group_id: _Future(SimpleNamespace(topic_partitions=answer))}


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


def test_a_listing_whose_topic_ids_timed_out_fails_then_asks_any_broker_again() -> None:
    # A timeout is not retried by the retries; within a listing of 1 s (shorter than one
    # DescribeTopics' wait of 3 s) it is not asked again either. The next listing (the next
    # micro-batch) sends a Metadata request first, which names librdkafka a live controller.
    client = _Client(failures=0, describe_failures=1)
    admin = _admin(client, retries=3)
    with pytest.raises(KafkaClientError, match="waiting for controller"):
        admin.list_topics(["orders"])
    assert (client.calls, client.describes) == (1, 1)
    assert admin.list_topics(["orders"]).partitions == {"orders": (0, 1)}
    assert (client.calls, client.describes) == (2, 2)


def test_topic_ids_timed_out_are_asked_again_after_new_metadata_within_the_listings_timeout() -> (
    None
):
    # A listing of 10 s: each DescribeTopics waits 3 s at most (its controller may have been
    # killed, and a Metadata answer names another once the cluster fenced it), 4 in all.
    client = _Client(failures=0, describe_failures=2)
    admin = _admin(client, retries=0)
    admin.timeout_s = 10.0
    assert admin.list_topics(["orders"]).partitions == {"orders": (0, 1)}
    assert (client.calls, client.describes) == (3, 3)
    assert all(0 < wait <= 3.0 for wait in client.waits)
    client = _Client(failures=0, describe_failures=10)
    admin._client = client
    with pytest.raises(KafkaClientError, match="waiting for controller"):
        admin.list_topics(["orders"])
    assert (client.calls, client.describes) == (4, 4)


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


def test_group_offsets_go_through_the_retried_path() -> None:
    client = _GroupClient(failures=1)
    offsets = group_offsets(_admin(client, retries=1), "readers", [("orders", 0), ("orders", 1)])
    assert client.calls == 2
    assert offsets == {("orders", 0): 7}


def test_group_offsets_failure_names_the_group_without_the_secret() -> None:
    client = _GroupClient(failures=10)
    with pytest.raises(KafkaClientError) as info:
        group_offsets(_admin(client, retries=0), "readers", [("orders", 0)])
    message = str(info.value)
    assert client.calls == 1
    assert "Cluster 'east' (h:1)" in message and "group 'readers'" in message
    assert "group id is right" in message
    assert SENTINEL not in message and "******" in message


def test_single_cluster_listing_goes_through_the_admin_path_without_the_secret() -> None:
    service = SingleClusterMetadataService(
        "main", {"bootstrap.servers": "h:1", "sasl.password": SENTINEL}, request_timeout_ms=2000
    )
    service._admin._client = _Client(failures=1)
    with pytest.raises(MetadataError) as info:
        service.get_all_streams()
    message = str(info.value)
    assert "singleCluster metadata service" in message and "Cluster 'main' (h:1)" in message
    assert "metadataService.<property>" in message
    assert SENTINEL not in message and "******" in message
    assert {s.stream_id for s in service.get_all_streams()} == {"orders", "broken", "gone"}


def test_a_client_that_cannot_be_created_fails_naming_the_property() -> None:
    # A real client: librdkafka refuses the key when the client is created.
    properties = {"bootstrap.servers": "h:1", "security.protocol": "SSL", "ssl.key.pem": "x"}
    admin = ClusterAdmin("east", {**properties, "sasl.password": SENTINEL}, 1000, retries=3)
    with pytest.raises(KafkaClientError) as info:
        admin.list_topics(["orders"])
    message = str(info.value)
    assert "could not create an admin client" in message and "ssl.key.pem" in message
    assert SENTINEL not in message


class _OffsetsClient(_Client):
    """Answers ListOffsets like librdkafka while a partition's leader is lost: offset -1001
    (no error) for partition 1 in the first ``failures`` answers."""

    def list_offsets(self, specs: Any, isolation_level: Any, request_timeout: float) -> Any:
        self.calls += 1
        lost = self.calls <= self.failures
        return {
            tp: _Future(SimpleNamespace(offset=-1001 if lost and tp.partition == 1 else 40))
            for tp in specs
        }


def _offsets_clients(monkeypatch: pytest.MonkeyPatch, lost: list[int]) -> list[_OffsetsClient]:
    """The admin's clients, scripted: the i-th made answers -1001 its first ``lost[i]`` times."""
    made: list[_OffsetsClient] = []

    def make(config: Any) -> _OffsetsClient:
        made.append(_OffsetsClient(failures=lost[len(made)]))
        return made[-1]

    monkeypatch.setattr("pyspark_dynamic_kafka.kafka.admin.AdminClient", make)
    return made


def test_a_latest_offset_answered_as_none_is_retried_with_a_new_client_not_taken_for_an_offset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # librdkafka's client went on answering -1001 while its metadata named a killed leader
    # (the real case: test_data_loss.py's unclean leader election); a new one asks the new
    # leader. The clients are scripted: such an answer cannot be had on demand.
    # A timeout shorter than two short waits (kafka/waits.py) is one wait: the next attempt
    # asks the new client.
    made = _offsets_clients(monkeypatch, [1, 0])
    admin = ClusterAdmin("east", {"bootstrap.servers": "h:1"}, 100, 1, 0)
    latest = admin.list_offsets([("orders", 0), ("orders", 1)], LATEST)
    assert [c.calls for c in made] == [1, 1]
    assert latest == {("orders", 0): 40, ("orders", 1): 40}

    made = _offsets_clients(monkeypatch, [10, 10, 10])
    admin = ClusterAdmin("east", {"bootstrap.servers": "h:1"}, 100, 2, 0)
    with pytest.raises(KafkaClientError, match=r"no offset for \{'orders/1': -1001\}"):
        admin.list_offsets([("orders", 0), ("orders", 1)], EARLIEST)
    assert [c.calls for c in made] == [1, 1, 1]


def test_a_client_whose_request_failed_at_the_transport_is_replaced_by_the_next_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A librdkafka client that stays unable to reach a broker that came back cannot be made
    on demand: the clients are scripted (the first fails at the transport, every one after it
    answers), and the request after a transport failure must use a new one."""
    made: list[_Client] = []

    def factory(config: Any) -> _Client:
        made.append(_Client(failures=1 if not made else 0, code=KafkaError._TRANSPORT))
        return made[-1]

    monkeypatch.setattr("pyspark_dynamic_kafka.kafka.admin.AdminClient", factory)
    admin = ClusterAdmin("east", {"bootstrap.servers": "h:1"}, 1000, 3, 0)
    with pytest.raises(KafkaClientError, match="could not list"):
        admin.list_topics(["orders"])
    assert admin.list_topics(["orders"]).partitions == {"orders": (0, 1)}
    assert admin.list_topics(["orders"]).partitions == {"orders": (0, 1)}
    assert [c.calls for c in made] == [1, 2]


def test_a_partition_answered_without_an_offset_at_once_is_asked_by_a_new_client_once_a_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A client that answers -1001 at once (no leader at all) must not be replaced in a tight
    # loop: one new client per wait (kafka/waits.py: 3 s, 3 s, then the 4 s left of 10 s).
    # The clock is the test's: the waits are 10 s of it.
    now = [0.0]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds

    clock = SimpleNamespace(monotonic=lambda: now[0], sleep=sleep)
    monkeypatch.setattr("pyspark_dynamic_kafka.kafka.admin.time", clock)
    made = _offsets_clients(monkeypatch, [10, 10, 10, 10])
    admin = ClusterAdmin("east", {"bootstrap.servers": "h:1"}, 10_000, 0, 0)
    with pytest.raises(KafkaClientError, match=r"no offset for \{'orders/1': -1001\} within 10 s"):
        admin.list_offsets([("orders", 0), ("orders", 1)], LATEST)
    assert [c.calls for c in made[:3]] == [1, 1, 1] and len(made) == 3
    assert sleeps == [3.0, 3.0]


def test_a_short_wait_that_timed_out_is_asked_again_and_only_the_last_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A new client may not learn the partitions' leaders within a 3 s wait ("Failed to query
    # partition leaders", seen after a broker was killed): the next wait asks again; a timeout
    # at the last wait fails the listing as before (not retried).
    now = [0.0]
    monkeypatch.setattr(
        "pyspark_dynamic_kafka.kafka.admin.time",
        SimpleNamespace(monotonic=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s)),
    )
    timed_out = _Failed(KafkaError(KafkaError._TIMED_OUT, "Failed to query partition leaders"))

    class _Slow(_Client):
        def list_offsets(self, specs: Any, isolation_level: Any, request_timeout: float) -> Any:
            self.calls += 1
            late = self.calls <= self.failures
            return {tp: timed_out if late else _Future(SimpleNamespace(offset=40)) for tp in specs}

    made: list[_Slow] = []
    answers = iter([1, 0])
    monkeypatch.setattr(
        "pyspark_dynamic_kafka.kafka.admin.AdminClient",
        lambda config: made.append(_Slow(failures=next(answers))) or made[-1],
    )
    admin = ClusterAdmin("east", {"bootstrap.servers": "h:1"}, 10_000, 3, 0)
    assert admin.list_offsets([("orders", 0)], LATEST) == {("orders", 0): 40}
    assert [c.calls for c in made] == [1, 1]

    made.clear()
    answers = iter([10] * 10)
    admin = ClusterAdmin("east", {"bootstrap.servers": "h:1"}, 10_000, 3, 0)
    with pytest.raises(KafkaClientError, match="Failed to query partition leaders"):
        admin.list_offsets([("orders", 0)], LATEST)
    assert len(made) == 3  # 3 s, 3 s and the last 4 s; the timeout is not retried
