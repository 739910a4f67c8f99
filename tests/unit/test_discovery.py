"""Driver-side discovery: interval, failure threshold, subscription resolution."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from pyspark_dynamic_kafka.errors import (
    DiscoveryError,
    KafkaClientError,
    MetadataAccessError,
    MetadataError,
    MetadataValidationError,
    OptionsError,
)
from pyspark_dynamic_kafka.metadata.model import ClusterMetadata, KafkaStream, StartingPosition
from pyspark_dynamic_kafka.source.config.options import parse_options
from pyspark_dynamic_kafka.source.driver.discovery import Discovery


def _props(port: int) -> dict[str, str]:
    return {"bootstrap.servers": f"127.0.0.1:{port}"}


def _cluster(port: int, *topics: str, **props: str) -> ClusterMetadata:
    return ClusterMetadata(frozenset(topics), {"bootstrap.servers": f"127.0.0.1:{port}", **props})


class _Service:
    """A scripted service: returns its streams, or raises when ``fail`` is set."""

    def __init__(self, streams: Iterable[KafkaStream]) -> None:
        self.streams = {s.stream_id: s for s in streams}
        self.fail = False
        self.error: Exception = MetadataError("metadata file streams.yaml: syntax error")
        self.inactive: set[str] = set()
        self.calls = 0

    def get_all_streams(self) -> frozenset[KafkaStream]:
        self.calls += 1
        if self.fail:
            raise self.error
        return frozenset(self.streams.values())

    def describe_streams(self, stream_ids: Iterable[str]) -> Mapping[str, KafkaStream]:
        everything = {s.stream_id: s for s in self.get_all_streams()}
        return {i: everything[i] for i in stream_ids if i in everything}

    def is_cluster_active(self, cluster_id: str) -> bool:
        return cluster_id not in self.inactive

    def close(self) -> None:
        pass


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _discovery(service: _Service, **options: str) -> tuple[Discovery, _Clock]:
    parsed = parse_options({"metadataservice": "file", "metadataservice.path": "x", **options})
    clock = _Clock()
    discovery = Discovery(parsed, clock=clock)
    discovery._service = service  # type: ignore[assignment]
    return discovery, clock


ORDERS = KafkaStream("orders", {"east": _cluster(1, "orders"), "west": _cluster(2, "orders")})
PAYMENTS = KafkaStream("payments", {"east": _cluster(1, "payments-v1", "orders")})


def test_streams_merge_per_cluster_and_topics_read_once() -> None:
    discovery, _ = _discovery(_Service([ORDERS, PAYMENTS]), streamids="orders,payments")
    subscription = discovery.current()
    assert set(subscription) == {"east", "west"}
    assert subscription["east"].topics == {"orders", "payments-v1"}
    assert subscription["west"].topics == {"orders"}


def test_kafka_options_merge_under_cluster_properties() -> None:
    stream = KafkaStream("s", {"east": _cluster(1, "t", **{"client.id": "mine"})})
    discovery, _ = _discovery(
        _Service([stream]),
        streamids="s",
        **{"kafka.client.id": "q", "kafka.socket.nagle.disable": "true"},
    )
    props = discovery.current()["east"].properties
    assert props["client.id"] == "mine"
    assert props["socket.nagle.disable"] == "true"


def test_pattern_selects_by_search() -> None:
    discovery, _ = _discovery(_Service([ORDERS, PAYMENTS]), streampattern="^pay")
    assert set(discovery.current()) == {"east"}
    assert discovery.current()["east"].topics == {"payments-v1", "orders"}


def test_inactive_clusters_are_not_read() -> None:
    service = _Service([ORDERS])
    service.inactive = {"west"}
    discovery, _ = _discovery(service, streamids="orders")
    assert set(discovery.current()) == {"east"}


def test_unknown_stream_id_at_start_names_option_and_value() -> None:
    discovery, _ = _discovery(_Service([ORDERS]), streamids="orders,refunds")
    with pytest.raises(OptionsError) as info:
        discovery.current()
    assert "streamIds" in str(info.value) and "refunds" in str(info.value)
    assert "orders" in str(info.value)


@pytest.mark.parametrize(
    ("interval", "later", "rediscovers"),
    [("1000", 0.5, False), ("1000", 1.0, True), ("-1", 1e9, False)],
)
def test_interval_controls_rediscovery(interval: str, later: float, rediscovers: bool) -> None:
    service = _Service([ORDERS])
    discovery, clock = _discovery(service, streamids="orders", metadatadiscoveryintervalms=interval)
    discovery.current()
    calls = service.calls
    clock.now = later
    discovery.current()
    assert (service.calls > calls) == rediscovers


def test_first_failure_is_fatal() -> None:
    service = _Service([ORDERS])
    service.fail = True
    discovery, _ = _discovery(service, streamids="orders")
    with pytest.raises(MetadataError, match="syntax error"):
        discovery.current()


@pytest.mark.parametrize("threshold", [0, 1, 3])
def test_failures_tolerated_up_to_threshold_and_reset_by_success(threshold: int) -> None:
    service = _Service([ORDERS])
    discovery, _clock = _discovery(
        service,
        streamids="orders",
        metadatadiscoveryintervalms="0",
        metadatadiscoveryfailurethreshold=str(threshold),
    )
    good = discovery.current()
    service.fail = True
    for _ in range(threshold):
        assert discovery.current() == good  # the last good snapshot, never "all removed"
    service.fail = False
    assert discovery.current() == good  # success resets the count
    service.fail = True
    for _ in range(threshold):
        discovery.current()
    with pytest.raises(DiscoveryError) as info:
        discovery.current()
    assert f"metadataDiscoveryFailureThreshold={threshold}" in str(info.value)
    assert "syntax error" in str(info.value)


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        (MetadataError("service down"), True),
        (MetadataValidationError("bad metadata"), True),
        (KafkaClientError("cluster down"), True),
        (RuntimeError("a user's service broke"), True),
        (MetadataAccessError("HTTP 401: refused token"), False),
        (OptionsError("bad option"), False),
    ],
)
def test_only_retryable_failures_are_tolerated(error: Exception, retryable: bool) -> None:
    service = _Service([ORDERS])
    discovery, _ = _discovery(
        service,
        streamids="orders",
        metadatadiscoveryintervalms="0",
        metadatadiscoveryfailurethreshold="5",
    )
    good = discovery.current()
    service.fail, service.error = True, error
    if retryable:
        assert discovery.current() == good
    else:
        with pytest.raises(type(error)) as info:
            discovery.current()
        assert info.value is error


def test_removed_stream_during_run_is_dropped_not_fatal() -> None:
    service = _Service([ORDERS, PAYMENTS])
    discovery, _ = _discovery(service, streamids="orders,payments", metadatadiscoveryintervalms="0")
    assert set(discovery.current()) == {"east", "west"}
    del service.streams["orders"]
    assert set(discovery.current()) == {"east"}
    assert discovery.current()["east"].topics == {"payments-v1", "orders"}


def test_secret_never_in_repr_of_assignment() -> None:
    stream = KafkaStream("s", {"east": _cluster(1, "t", **{"sasl.password": "s3cr3t-SENTINEL"})})
    discovery, _ = _discovery(_Service([stream]), streamids="s")
    subscription: Any = discovery.current()
    assert "s3cr3t-SENTINEL" not in repr(subscription)
    assert subscription["east"].properties["sasl.password"] == "s3cr3t-SENTINEL"


def test_metadata_starting_positions_reach_the_assignment(caplog: pytest.LogCaptureFixture) -> None:
    latest = StartingPosition("latest")
    stamp = StartingPosition("timestamp", 1234)
    a = KafkaStream("a", {"east": ClusterMetadata(frozenset({"orders", "x"}), _props(1), latest)})
    b = KafkaStream("b", {"east": ClusterMetadata(frozenset({"orders", "y"}), _props(1), stamp)})
    plain = KafkaStream("c", {"west": _cluster(2, "z")})
    discovery, _ = _discovery(_Service([a, b, plain]), streamids="a,b,c")
    with caplog.at_level("WARNING"):
        subscription = discovery.current()
    east = subscription["east"]
    assert east.starting_position("orders") == latest  # stream a comes first in id order
    assert east.starting_position("x") == latest
    assert east.starting_position("y") == stamp
    assert subscription["west"].starting_position("z") is None
    assert any("different startingOffsets" in r.getMessage() for r in caplog.records)
    assert hash(east) == hash(discovery.current()["east"])  # hashable, compares by value


def test_security_properties_reach_only_their_cluster() -> None:
    secure = {"security.protocol": "SASL_SSL", "sasl.username": "u", "sasl.password": "pw"}
    stream = KafkaStream("s", {"east": _cluster(1, "t"), "west": _cluster(2, "t", **secure)})
    discovery, _ = _discovery(_Service([stream]), streamids="s")
    subscription = discovery.current()
    assert not any(k.startswith(("sasl.", "security.")) for k in subscription["east"].properties)
    assert {k: subscription["west"].properties[k] for k in secure} == secure
