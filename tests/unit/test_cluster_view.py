"""The driver's view of the clusters (:class:`ClusterView`): the subscription it reads from the
metadata, each reconciliation's offsets, the clusters, topics and partitions that come and go, the
data loss it reports or fails on, and its log lines.

The metadata is a real file service on a ``tmp_path`` file that the tests edit between
reconciliations (``metadataDiscoveryIntervalMs=0``: read again every time, or an injected clock).
The cluster side is test_reconcile's scripted lister (:class:`~tests.unit.test_reconcile._Lister`):
partitions added to a topic, an offset that goes back and an absent topic cannot be produced on
the test broker on demand; the integration tests run them on real brokers.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from tests.unit.test_reconcile import (
    DISCOVERY_EARLIEST,
    _Lister,
    orders_on_two_clusters,
    write_orders,
)

from pyspark_dynamic_kafka.errors import DataLossError
from pyspark_dynamic_kafka.source.config.options import parse_options
from pyspark_dynamic_kafka.source.driver.cluster_view import ClusterView
from pyspark_dynamic_kafka.source.driver.discovery import Discovery
from pyspark_dynamic_kafka.source.driver.reconcile import Loss
from pyspark_dynamic_kafka.source.driver.start_policy import LATEST_RULE
from pyspark_dynamic_kafka.source.driver.went_back import WENT_BACK

E0, E1, W0 = ("east", "orders", 0), ("east", "orders", 1), ("west", "orders", 0)


def _view(path: Path, lister: _Lister, **extra: str) -> ClusterView:
    options = {
        "metadataService": "file",
        "metadataService.path": str(path),
        "streamIds": "orders",
        "metadataDiscoveryIntervalMs": "0",
        **extra,
    }
    return ClusterView(parse_options(options), lister)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """The metadata file: stream ``orders`` on east."""
    path = tmp_path / "streams.yaml"
    write_orders(path, {"cluster": "east", "topics": ["orders"]})
    return path


@pytest.fixture
def lister() -> _Lister:
    """:func:`~tests.unit.test_reconcile.orders_on_two_clusters`."""
    return orders_on_two_clusters()


def test_the_first_reconciliation_places_every_partition_and_logs_where_it_starts(
    path: Path, lister: _Lister, caplog: pytest.LogCaptureFixture
) -> None:
    view = _view(path, lister)
    with caplog.at_level(logging.INFO, "pyspark_dynamic_kafka.source.driver.cluster_view"):
        state = view.reconcile({}, DISCOVERY_EARLIEST)
    assert state.offsets == {E0: 2, E1: 0}
    assert state.entered == {E0: 2, E1: 0}
    assert state.latest == {E0: 10, E1: 5}
    assert state.losses == [] and view.generation == 0 and view.rewound == {}
    assert "Partition east/orders/0 starts at offset 2" in caplog.messages
    assert "Partition east/orders/1 starts at offset 0" in caplog.messages


def test_a_target_that_is_not_entering_logs_no_starting_points(
    path: Path, lister: _Lister, caplog: pytest.LogCaptureFixture
) -> None:
    view = _view(path, lister)
    with caplog.at_level(logging.INFO, "pyspark_dynamic_kafka.source.driver.cluster_view"):
        state = view.reconcile({}, LATEST_RULE, entering=False)
    assert state.offsets == {E0: 10, E1: 5}  # the AvailableNow target: the latest offsets
    assert not [r for r in caplog.records if "starts at offset" in r.getMessage()]


def test_a_cluster_added_to_the_metadata_enters_and_its_absent_topic_is_warned_of_once(
    path: Path, lister: _Lister, caplog: pytest.LogCaptureFixture
) -> None:
    view = _view(path, lister)
    first = view.reconcile({}, DISCOVERY_EARLIEST)
    write_orders(
        path,
        {"cluster": "east", "topics": ["orders"]},
        {"cluster": "west", "topics": ["orders", "later"]},
    )
    previous = {E0: 6, E1: 5}
    with caplog.at_level(logging.WARNING, "pyspark_dynamic_kafka.source.driver.cluster_view"):
        second = view.reconcile(previous, DISCOVERY_EARLIEST)
        third = view.reconcile(second.offsets, DISCOVERY_EARLIEST)
    assert first.offsets == {E0: 2, E1: 0}
    assert second.offsets == {E0: 10, E1: 5, W0: 0}  # known ones advance to their latest
    assert second.entered == {W0: 0}
    assert second.absent == {"east": frozenset(), "west": frozenset({"later"})}
    assert third.entered == {} and third.offsets == {E0: 10, E1: 5, W0: 7}
    absent = [r.getMessage() for r in caplog.records if "has no topic(s)" in r.getMessage()]
    assert absent == ["Cluster 'west' has no topic(s) ['later']; they are read once they exist."]


def test_an_absent_topic_is_warned_of_again_after_it_existed(
    path: Path, lister: _Lister, caplog: pytest.LogCaptureFixture
) -> None:
    write_orders(path, {"cluster": "east", "topics": ["orders", "later"]})
    view = _view(path, lister)
    with caplog.at_level(logging.WARNING, "pyspark_dynamic_kafka.source.driver.cluster_view"):
        view.reconcile({}, DISCOVERY_EARLIEST)
        lister.topics["east"]["later"] = {0: (0, 1)}
        state = view.reconcile({E0: 2, E1: 0}, DISCOVERY_EARLIEST)
        del lister.topics["east"]["later"]  # before any of it was read (else: data loss)
        view.reconcile({E0: 10, E1: 5}, DISCOVERY_EARLIEST)
    absent = [r.getMessage() for r in caplog.records if "has no topic(s)" in r.getMessage()]
    assert (
        absent == ["Cluster 'east' has no topic(s) ['later']; they are read once they exist."] * 2
    )
    assert state.entered == {("east", "later", 0): 0}


def test_a_cluster_removed_from_the_metadata_leaves_without_data_loss(
    path: Path, lister: _Lister
) -> None:
    write_orders(
        path, {"cluster": "east", "topics": ["orders"]}, {"cluster": "west", "topics": ["orders"]}
    )
    view = _view(path, lister)
    view.reconcile({}, DISCOVERY_EARLIEST)
    write_orders(path, {"cluster": "west", "topics": ["orders"]})
    state = view.reconcile({E0: 4, E1: 3, W0: 1}, DISCOVERY_EARLIEST)
    assert state.offsets == {W0: 7}
    assert state.losses == [] and view.recent_losses == [] and view.generation == 0
    assert sorted(view.subscription()) == ["west"]


def test_partitions_added_to_a_topic_enter_at_the_rule_position(
    path: Path, lister: _Lister
) -> None:
    view = _view(path, lister)
    view.reconcile({}, DISCOVERY_EARLIEST)
    lister.topics["east"]["orders"][2] = (4, 9)
    state = view.reconcile({E0: 3, E1: 1}, DISCOVERY_EARLIEST)
    assert state.offsets == {E0: 10, E1: 5, ("east", "orders", 2): 4}
    assert state.entered == {("east", "orders", 2): 4}


def test_a_topic_removed_from_the_metadata_leaves_its_partitions(
    path: Path, lister: _Lister
) -> None:
    lister.topics["east"]["refunds"] = {0: (0, 3)}
    write_orders(path, {"cluster": "east", "topics": ["orders", "refunds"]})
    view = _view(path, lister)
    assert view.reconcile({}, DISCOVERY_EARLIEST).offsets == {
        E0: 2,
        E1: 0,
        ("east", "refunds", 0): 0,
    }
    write_orders(path, {"cluster": "east", "topics": ["orders"]})
    state = view.reconcile({E0: 2, E1: 0, ("east", "refunds", 0): 1}, DISCOVERY_EARLIEST)
    assert state.offsets == {E0: 10, E1: 5}
    assert state.losses == []


def test_without_refresh_the_subscription_is_the_last_one_read(path: Path, lister: _Lister) -> None:
    view = _view(path, lister, metadataDiscoveryIntervalMs="60000")
    now = [0.0]
    view.discovery = Discovery(view.options, clock=lambda: now[0])  # the test moves the clock
    assert sorted(view.subscription(refresh=False)) == ["east"]  # none yet: read once
    write_orders(path, {"cluster": "west", "topics": ["orders"]})
    now[0] = 61.0
    assert sorted(view.subscription(refresh=False)) == ["east"]
    assert sorted(view.subscription()) == ["west"]  # the interval elapsed: read again
    now[0] = 62.0
    write_orders(path, {"cluster": "east", "topics": ["orders"]})
    assert sorted(view.subscription()) == ["west"]  # within the interval: the snapshot


def test_an_offset_that_went_back_is_a_loss_logged_once_and_a_new_generation(
    path: Path, lister: _Lister, caplog: pytest.LogCaptureFixture
) -> None:
    view = _view(path, lister, failOnDataLoss="false")
    previous = {E0: 12, E1: 5}  # east/orders/0 latest is 10 now: its offsets went back
    with caplog.at_level(logging.WARNING):
        state = view.reconcile(previous, DISCOVERY_EARLIEST)
        view.reconcile(previous, DISCOVERY_EARLIEST)
    assert state.losses == [Loss(E0, WENT_BACK, 12, 10)]
    assert state.offsets == {E0: 10, E1: 5}
    assert view.rewound == {E0: 2}  # read again from the earliest offset (no topic ids)
    assert view.generation == 2  # pooled consumers are not reused after either listing
    assert view.recent_losses == [Loss(E0, WENT_BACK, 12, 10)]
    logged = [
        r.getMessage() for r in caplog.records if "east/orders/0: its latest" in r.getMessage()
    ]
    assert len(logged) == 1


def test_losses_fail_the_query_by_default_naming_partition_and_offsets(
    path: Path, lister: _Lister
) -> None:
    view = _view(path, lister)
    with pytest.raises(DataLossError) as info:
        view.reconcile({E0: 12, E1: 5}, DISCOVERY_EARLIEST)
    assert str(info.value).startswith(
        "Data loss: records the query has not read are gone: east/orders/0: its latest offset "
        "went back (next offset to read 12, latest offset now 10)."
    )
    assert view.recent_losses == [] and view.generation == 0


def test_only_the_last_eight_losses_are_kept_for_the_progress(path: Path, lister: _Lister) -> None:
    view = _view(path, lister, failOnDataLoss="false")
    losses = [Loss(("east", "orders", p), WENT_BACK, 10, 1) for p in range(10)]
    view.report(losses[:6])
    view.report(losses[:6])  # the same again: nothing new
    view.report(losses[6:])
    assert view.recent_losses == losses[2:]


def test_topic_ids_listed_are_kept_and_a_cluster_without_them_is_said_once(
    path: Path, lister: _Lister, caplog: pytest.LogCaptureFixture
) -> None:
    write_orders(
        path, {"cluster": "east", "topics": ["orders"]}, {"cluster": "west", "topics": ["orders"]}
    )
    lister.ids["east"] = {"orders": "A"}
    view = _view(path, lister)
    with caplog.at_level(logging.WARNING, "pyspark_dynamic_kafka.source.driver.cluster_view"):
        state = view.reconcile({}, DISCOVERY_EARLIEST)
        view.reconcile(state.offsets, DISCOVERY_EARLIEST)
    assert view.topic_ids == {("east", "orders"): "A"}
    assert [m for m in caplog.messages if "reports no topic id" in m] == [
        "Cluster 'west' reports no topic id for ['orders'] (brokers before Kafka 2.8): an offset "
        "that goes back is read again from the earliest offset, whether the topic was recreated "
        "or its log truncated."
    ]
