"""Reconciliation of checkpointed offsets with each cluster, data loss, entering positions.

The cluster side is a scripted lister: partition-count changes cannot be produced on the test
broker (Tansu has no CreatePartitions), and a transient per-topic error cannot be produced on
demand; the integration tests cover deletion, recreation and backwards offsets on real brokers.
The scripted lister keeps :class:`OffsetLister`'s own bookkeeping of clusters that cannot be
listed (``unreachableClusterTimeoutMs``), on a clock the test moves; a whole cluster down is
tested on real brokers in ``tests/integration/test_cluster_outage.py``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import KafkaError, KafkaException
from tests.unit.conftest import FakeAdmin

from pyspark_dynamic_kafka.errors import (
    ClusterUnreachableError,
    DataLossError,
    KafkaClientError,
    OffsetsError,
)
from pyspark_dynamic_kafka.kafka.admin import ClusterAdmin, TopicListing
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.metadata.model import StartingPosition
from pyspark_dynamic_kafka.offset_spec import (
    EARLIEST_POSITION,
    LATEST_POSITION,
    NoMatch,
    PositionSpec,
)
from pyspark_dynamic_kafka.source.config.options import parse_options
from pyspark_dynamic_kafka.source.config.position_options import parse_timestamp
from pyspark_dynamic_kafka.source.driver.discovery import ClusterSubscription
from pyspark_dynamic_kafka.source.driver.listing import ClusterSnapshot, OffsetLister
from pyspark_dynamic_kafka.source.driver.reconcile import Loss, reconcile, report_losses
from pyspark_dynamic_kafka.source.driver.start_policy import PositionRule

TP = tuple[str, int]
NO_OPTION = PositionSpec({}, None, "")


class _Lister(OffsetLister):
    """Answers for one or more clusters: topics -> {partition: (earliest, latest)}; ``now`` is
    the clock (seconds) of the unreachable-cluster bookkeeping."""

    def __init__(self, unreachable_timeout_ms: str = "120000") -> None:
        options = {
            "metadataService": "file",
            "metadataService.path": "streams.yaml",
            "streamIds": "orders",
            "unreachableClusterTimeoutMs": unreachable_timeout_ms,
        }
        super().__init__(parse_options(options), clock=lambda: self.now)
        self.now = 0.0
        self.topics: dict[str, dict[str, dict[int, tuple[int, int]]]] = {}
        self.unavailable: dict[str, set[str]] = {}
        self.down: set[str] = set()
        self.electing: set[str] = set()  # clusters that answer "leader not available"
        self.stamps: dict[tuple[str, str, int], dict[int, int]] = {}
        self.ids: dict[str, dict[str, str]] = {}  # cluster -> topic -> topic id (KIP-516)

    def snapshot(self, cluster_id: str, cluster: ClusterSubscription) -> ClusterSnapshot:
        if cluster_id in self.down:
            raise KafkaClientError(f"Cluster '{cluster_id}': could not list topics")
        if cluster_id in self.electing:
            error = KafkaClientError(f"Cluster '{cluster_id}': leader not available")
            error.answered = True
            raise error
        have = self.topics.get(cluster_id, {})
        bad = self.unavailable.get(cluster_id, set())
        partitions = {t: tuple(sorted(ps)) for t, ps in have.items() if t in cluster.topics}
        partitions = {t: ps for t, ps in partitions.items() if t not in bad}
        absent = frozenset(t for t in cluster.topics if t not in have)
        ids = {t: i for t, i in self.ids.get(cluster_id, {}).items() if t in partitions}
        listing = TopicListing(partitions, absent, frozenset(bad & set(cluster.topics)), ids)
        latest = {(t, p): have[t][p][1] for t, ps in partitions.items() for p in ps}
        return ClusterSnapshot(listing, latest)

    def admin(self, cluster_id: str, cluster: ClusterSubscription) -> FakeAdmin:  # type: ignore[override]
        have = self.topics.get(cluster_id, {})
        earliest = {(t, p): lo for t, ps in have.items() for p, (lo, _) in ps.items()}
        stamps = {(t, p): v for (c, t, p), v in self.stamps.items() if c == cluster_id}
        return FakeAdmin(
            earliest=earliest.__getitem__, found=lambda tp, ms: stamps.get(tp, {}).get(ms, -1)
        )


#: The clusters of the driver unit tests' metadata files (nobody listens there: the lister is a
#: script, :func:`orders_on_two_clusters`).
CLUSTERS = {
    "east": {"bootstrap.servers": "127.0.0.1:1"},
    "west": {"bootstrap.servers": "127.0.0.1:2"},
}


def write_orders(path: Path, *entries: dict[str, Any]) -> None:
    """The metadata file ``path``: stream ``orders`` read from ``entries`` (cluster and topics
    each) on :data:`CLUSTERS`."""
    path.write_text(yaml.safe_dump({"clusters": CLUSTERS, "streams": {"orders": list(entries)}}))


def orders_on_two_clusters() -> _Lister:
    """east/orders has partitions 0 (offsets 2..10) and 1 (0..5); west/orders partition 0
    (0..7): the driver unit tests' estate."""
    lister = _Lister()
    lister.topics["east"] = {"orders": {0: (2, 10), 1: (0, 5)}}
    lister.topics["west"] = {"orders": {0: (0, 7)}}
    return lister


def _cluster(*topics: str, starting: StartingPosition | None = None) -> ClusterSubscription:
    positions = tuple((t, starting) for t in sorted(topics)) if starting else ()
    return ClusterSubscription(
        FrozenProperties({"bootstrap.servers": "h:1"}), frozenset(topics), positions
    )


DISCOVERY_EARLIEST = PositionRule(NO_OPTION, EARLIEST_POSITION, NoMatch.ERROR)


def test_new_partitions_enter_at_their_position_and_known_ones_advance() -> None:
    lister = _Lister()
    lister.topics["east"] = {"orders": {0: (2, 10), 1: (0, 5)}}
    state = reconcile(
        {"east": _cluster("orders")},
        {("east", "orders", 0): 4},
        lister,  # type: ignore[arg-type]
        DISCOVERY_EARLIEST,
    )
    assert state.offsets == {("east", "orders", 0): 10, ("east", "orders", 1): 0}
    assert state.entered == {("east", "orders", 1): 0}
    assert state.losses == []


def test_first_read_of_a_cluster_takes_its_metadata_position() -> None:
    lister = _Lister()
    lister.topics["east"] = {"orders": {0: (2, 10), 1: (2, 10)}}
    lister.topics["west"] = {"orders": {0: (3, 7)}}
    earliest = StartingPosition("earliest")
    state = reconcile(
        {
            "east": _cluster("orders", starting=earliest),
            "west": _cluster("orders", starting=earliest),
        },
        {("east", "orders", 1): 3},  # east is known (another partition), west is new
        lister,  # type: ignore[arg-type]
        PositionRule(NO_OPTION, LATEST_POSITION, NoMatch.ERROR),
    )
    # east is not read for the first time: the fallback (latest); west: the metadata (earliest)
    assert state.entered == {("east", "orders", 0): 10, ("west", "orders", 0): 3}


@pytest.mark.parametrize("no_match", [NoMatch.ERROR, NoMatch.LATEST])
def test_a_start_timestamp_without_record_fails_or_takes_the_latest_offset(
    no_match: NoMatch,
) -> None:
    lister = _Lister()
    lister.topics["east"] = {"orders": {0: (0, 10), 1: (0, 10)}}
    lister.stamps[("east", "orders", 0)] = {500: 4}
    rule = PositionRule(parse_timestamp("500", "startingTimestamp"), EARLIEST_POSITION, no_match)
    subscription = {"east": _cluster("orders")}
    if no_match is NoMatch.ERROR:
        with pytest.raises(OffsetsError, match=r"east/orders/1 \(startingTimestamp 500\)"):
            reconcile(subscription, {}, lister, rule)  # type: ignore[arg-type]
    else:
        state = reconcile(subscription, {}, lister, rule)  # type: ignore[arg-type]
        assert state.entered == {("east", "orders", 0): 4, ("east", "orders", 1): 10}


@pytest.mark.parametrize("strict", [False, True])
def test_a_batch_read_fails_on_what_a_stream_keeps(strict: bool) -> None:
    lister = _Lister()
    lister.topics["east"] = {"orders": {0: (0, 10)}, "refunds": {0: (0, 9)}}
    lister.unavailable["east"] = {"refunds"}
    lister.down = {"west"}
    for subscription, error in (
        ({"east": _cluster("orders", "refunds")}, r"topic\(s\) \['refunds'\] with an error"),
        ({"west": _cluster("orders")}, "could not list topics"),
    ):
        if strict:
            with pytest.raises(KafkaClientError, match=error):
                reconcile(subscription, {}, lister, DISCOVERY_EARLIEST, strict)  # type: ignore[arg-type]
        else:
            reconcile(subscription, {}, lister, DISCOVERY_EARLIEST, strict)  # type: ignore[arg-type]


def test_data_loss_is_classified_and_named() -> None:
    lister = _Lister()
    # orders: partition 2 vanished, partition 0 went back (recreated); refunds deleted.
    lister.topics["east"] = {"orders": {0: (0, 3), 1: (0, 20)}}
    previous = {
        ("east", "orders", 0): 10,
        ("east", "orders", 1): 15,
        ("east", "orders", 2): 7,
        ("east", "refunds", 0): 4,
    }
    state = reconcile(
        {"east": _cluster("orders", "refunds")},
        previous,
        lister,  # type: ignore[arg-type]
        DISCOVERY_EARLIEST,
    )
    assert sorted(state.losses, key=lambda loss: loss.key) == [
        Loss(("east", "orders", 0), "its latest offset went back", 10, 3),
        Loss(("east", "orders", 2), "the partition no longer exists", 7),
        Loss(("east", "refunds", 0), "the topic was deleted", 4),
    ]
    assert state.offsets == {("east", "orders", 0): 3, ("east", "orders", 1): 20}
    assert state.rewound == {("east", "orders", 0): 0}
    with pytest.raises(DataLossError) as info:
        report_losses(state.losses, fail=True, reported=set())
    message = str(info.value)
    for needle in ("east/orders/0", "went back", "latest offset now 3", "east/orders/2"):
        assert needle in message
    assert "east/refunds/0: the topic was deleted (next offset to read 4)" in message
    assert "failOnDataLoss=false" in message


def test_without_fail_each_loss_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    losses = [Loss(("east", "orders", 2), "the partition no longer exists", 7)]
    reported: set[Loss] = set()
    with caplog.at_level(logging.WARNING):
        report_losses(losses, fail=False, reported=reported)
        report_losses(losses, fail=False, reported=reported)
    warnings = [r for r in caplog.records if "east/orders/2" in r.getMessage()]
    assert len(warnings) == 1


def test_removal_through_metadata_is_not_data_loss() -> None:
    lister = _Lister()
    lister.topics["east"] = {"orders": {0: (0, 10)}, "refunds": {0: (0, 4)}}
    previous = {("east", "orders", 0): 10, ("east", "refunds", 0): 4, ("west", "orders", 0): 1}
    state = reconcile(
        {"east": _cluster("orders")},  # refunds and west left the metadata
        previous,
        lister,  # type: ignore[arg-type]
        DISCOVERY_EARLIEST,
    )
    assert state.losses == []
    assert state.offsets == {("east", "orders", 0): 10}


def test_unreachable_cluster_and_unavailable_topic_keep_their_offsets() -> None:
    lister = _Lister()
    lister.topics["east"] = {"orders": {0: (0, 10)}, "refunds": {0: (0, 9)}}
    lister.unavailable["east"] = {"refunds"}
    lister.down = {"west"}
    previous = {("east", "refunds", 0): 4, ("west", "orders", 0): 3, ("east", "orders", 0): 1}
    state = reconcile(
        {"east": _cluster("orders", "refunds"), "west": _cluster("orders")},
        previous,
        lister,  # type: ignore[arg-type]
        DISCOVERY_EARLIEST,
    )
    assert state.losses == []
    assert state.offsets == {
        ("east", "orders", 0): 10,
        ("east", "refunds", 0): 4,
        ("west", "orders", 0): 3,
    }


def _down_west(lister: _Lister, seconds: float) -> str:
    """Reconcile east and west (down) ``seconds`` after the start; west's outcome."""
    lister.now = seconds
    previous = {("east", "orders", 0): 1, ("west", "orders", 0): 3}
    subscription = {"east": _cluster("orders"), "west": _cluster("orders")}
    try:
        state = reconcile(subscription, previous, lister, DISCOVERY_EARLIEST)
    except ClusterUnreachableError as exc:
        return str(exc)
    assert state.offsets == {("east", "orders", 0): 10, ("west", "orders", 0): 3}
    return "kept"


@pytest.mark.parametrize(
    ("timeout", "outcomes"),
    [
        ("5000", ["kept", "kept", "kept", "failed"]),  # failing since 0 s: 4.9 s kept, 5.1 s fails
        ("0", ["kept", "failed", "failed", "failed"]),  # the first failure only is tolerated
        ("-1", ["kept", "kept", "kept", "kept"]),  # never
    ],
)
def test_a_cluster_failing_longer_than_the_timeout_fails_the_query(
    timeout: str, outcomes: list[str]
) -> None:
    lister = _Lister(timeout)
    lister.topics["east"] = {"orders": {0: (0, 10)}}
    lister.down = {"west"}
    seen = [_down_west(lister, t) for t in (0.0, 2.0, 4.9, 5.1)]
    assert ["kept" if s == "kept" else "failed" for s in seen] == outcomes
    failed = [s for s in seen if s != "kept"]
    if timeout == "5000":
        assert failed == [
            "Cluster 'west' could not be listed for 5.1 s, longer than "
            "unreachableClusterTimeoutMs=5000 (its offsets were kept and the other clusters read "
            "meanwhile). Last error: Cluster 'west': could not list topics Bring the cluster back "
            "and restart the query from its checkpoint (it resumes exactly where it stopped), or "
            "remove the cluster from the metadata to go on without it."
        ]


def test_a_listing_that_succeeds_or_a_removal_ends_the_outage() -> None:
    lister = _Lister("5000")
    lister.topics = {"east": {"orders": {0: (0, 10)}}, "west": {"orders": {0: (0, 7)}}}
    lister.down = {"west"}
    assert _down_west(lister, 0.0) == "kept"
    lister.down = set()
    lister.now = 4.0
    reconcile({"west": _cluster("orders")}, {}, lister, DISCOVERY_EARLIEST)  # back: forgiven
    lister.down = {"west"}
    assert _down_west(lister, 6.0) == "kept"  # failing since 6 s, not 0 s
    lister.retire_except({"east"})  # removed from the metadata: no longer waited for
    assert _down_west(lister, 12.0) == "kept"
    assert "failing for 0.0 s, unreachableClusterTimeoutMs=5000" in lister.outage("west")
    assert "could not be listed for 5.5 s" in _down_west(lister, 17.5)


def test_a_cluster_answering_that_a_leader_is_being_elected_is_never_given_up() -> None:
    """A broker killed under load can leave a partition leaderless for minutes (KIP-966): the
    cluster answers, so it is waited for as long as it takes, and its outage clock restarts."""
    lister = _Lister("5000")
    lister.topics["east"] = {"orders": {0: (0, 10)}}
    lister.down = {"west"}
    assert _down_west(lister, 0.0) == "kept"  # unreachable since 0 s
    lister.down, lister.electing = set(), {"west"}
    assert [_down_west(lister, t) for t in (4.0, 60.0, 600.0)] == ["kept"] * 3
    lister.down, lister.electing = {"west"}, set()
    assert _down_west(lister, 604.0) == "kept"  # a new outage, counted from 604 s
    assert "could not be listed for 5.5 s" in _down_west(lister, 609.5)


@pytest.mark.parametrize(
    ("code", "answered"),
    [
        (KafkaError.LEADER_NOT_AVAILABLE, True),
        (KafkaError.NOT_LEADER_FOR_PARTITION, True),
        (KafkaError._TRANSPORT, False),
        (KafkaError._ALL_BROKERS_DOWN, False),
        (KafkaError.SASL_AUTHENTICATION_FAILED, False),
    ],
)
def test_the_admin_tells_a_cluster_that_answered_from_one_that_did_not(
    code: int, answered: bool
) -> None:
    admin = ClusterAdmin("east", {"bootstrap.servers": "127.0.0.1:9"}, timeout_ms=1000)

    def call(client: object) -> None:
        raise KafkaException(KafkaError(code, "from the cluster"))

    with pytest.raises(KafkaClientError) as info:
        admin.request("list offsets", call)
    assert info.value.answered is answered


def test_a_batch_read_fails_at_the_first_failure_whatever_the_timeout() -> None:
    lister = _Lister("-1")
    lister.down = {"west"}
    with pytest.raises(KafkaClientError, match="could not list topics") as info:
        reconcile({"west": _cluster("orders")}, {}, lister, DISCOVERY_EARLIEST, strict=True)
    assert not isinstance(info.value, ClusterUnreachableError)


def test_an_unreachable_cluster_is_given_up_without_a_secret_in_the_message() -> None:
    """A real admin client (librdkafka) against a closed port, with SASL credentials."""
    secret = "pw-0f3c9a77"
    options = parse_options(
        {
            "metadataService": "file",
            "metadataService.path": "streams.yaml",
            "streamIds": "orders",
            "unreachableClusterTimeoutMs": "0",
            "kafkaAdmin.requestTimeoutMs": "200",
        }
    )
    now = [0.0]
    lister = OffsetLister(options, clock=lambda: now[0])
    properties = {
        "bootstrap.servers": "127.0.0.1:1",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "reader",
        "sasl.password": secret,
    }
    subscription = {
        "east": ClusterSubscription(FrozenProperties(properties), frozenset({"orders"}))
    }
    previous = {("east", "orders", 0): 7}
    kept = reconcile(subscription, previous, lister, DISCOVERY_EARLIEST)
    assert kept.offsets == previous
    now[0] = 1.0
    with pytest.raises(ClusterUnreachableError) as info:
        reconcile(subscription, previous, lister, DISCOVERY_EARLIEST)
    message = str(info.value)
    assert message.startswith(
        "Cluster 'east' could not be listed for 1.0 s, longer than unreachableClusterTimeoutMs=0"
    )
    assert "Last error: Cluster 'east' (127.0.0.1:1): could not list topics" in message
    assert secret not in message and secret not in repr(info.value)
    lister.close()
