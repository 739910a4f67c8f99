"""``assignment=group`` without Spark: two readers' group ownerships (two "apps") on one real
cluster, driven trigger by trigger as the stream reader drives them, so each handoff step is
checked exactly: a revoked partition waits for its micro-batch's commit, the next owner starts
at the committed offset, a stop hands everything over at once."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from tests.integration.helpers import EstateFactory, on_tansu, produce, wait_until

from pyspark_dynamic_kafka.offset_spec import PartitionKey
from pyspark_dynamic_kafka.source.config.options import parse_options
from pyspark_dynamic_kafka.source.driver.discovery import Discovery
from pyspark_dynamic_kafka.source.driver.listing import OffsetLister
from pyspark_dynamic_kafka.source.driver.reconcile import reconcile
from pyspark_dynamic_kafka.source.driver.start_policy import StartPolicy
from pyspark_dynamic_kafka.source.group.ownership import GroupOwnership

Offsets = dict[PartitionKey, int]


class App:
    """What a stream reader does with its group ownership at each trigger."""

    def __init__(self, options: Any) -> None:
        self.options = options
        self.subscription = Discovery(options).current()
        self.lister = OffsetLister(options)
        self.policy = StartPolicy.of(options)
        self.ownership = GroupOwnership(self.lister, self.policy)
        self.end: Offsets = {}
        self.read: list[tuple[PartitionKey, int, int]] = []

    def trigger(self) -> Offsets:
        """latestOffset(start=end of the last batch), then the batch runs and completes."""
        available = reconcile(
            self.subscription, self.end, self.lister, self.policy.assigned
        ).offsets
        offsets, _ = self.ownership.owned_offsets(self.end, available, self.subscription)
        self.ownership.planned(offsets)
        for key, stop in offsets.items():
            if key in self.end and stop > self.end[key]:
                self.read.append((key, self.end[key], stop))
        self.end = offsets
        return offsets


def _records(read: list[tuple[PartitionKey, int, int]]) -> list[tuple[PartitionKey, int]]:
    return [(key, o) for key, start, stop in read for o in range(start, stop)]


def _until(app: App, condition: Any, what: str) -> None:
    def step() -> bool:
        app.trigger()
        return bool(condition())

    wait_until(step, timeout=300, what=what)


def test_two_ownerships_share_and_hand_over_exactly(estate: EstateFactory) -> None:
    if on_tansu():
        pytest.skip("consumer group rebalancing is Apache Kafka's (Tansu: not checked)")
    setup = estate("east", partitions=4)
    east = setup["east"]
    options = parse_options(
        setup.options(
            assignment="group",
            **{"kafka.group.id": "owners", "kafka.session.timeout.ms": "10000"},
        )
    )
    produce(east, "orders", [f"a{i}" for i in range(40)], partitions=4)
    first = App(options)
    first.trigger()  # joins: owns every partition, each enters at the start (earliest)
    assert first.end == {("east", "orders", p): 0 for p in range(4)}
    first.trigger()
    assert first.end == {("east", "orders", p): 10 for p in range(4)}

    second = App(options)
    joined = threading.Thread(target=second.trigger)  # waits for its first assignment
    joined.start()
    # The first app's next trigger commits 10 for the partitions it gives up, then lets them go.
    _until(first, lambda: len(first.end) == 2, "the first app giving up two partitions")
    joined.join(timeout=300)
    _until(second, lambda: len(second.end) == 2, "the second app taking two partitions")
    assert set(first.end).isdisjoint(second.end)
    assert set(second.end.values()) == {10}  # the group's offsets, not the start

    produce(east, "orders", [f"b{i}" for i in range(40)], partitions=4)
    for app in (first, second, first, second):
        app.trigger()
    assert set(first.end.values()) == set(second.end.values()) == {20}

    # The second app stops: its last batch is committed, it leaves, the first takes over.
    produce(east, "orders", [f"c{i}" for i in range(40)], partitions=4)
    second.trigger()
    second.ownership.completed(second.end)  # what the listener reports
    second.ownership.shutdown()
    _until(first, lambda: len(first.end) == 4, "the first app owning everything again")
    first.trigger()
    first.ownership.shutdown()
    assert first.end == {("east", "orders", p): 30 for p in range(4)}

    everything = [(("east", "orders", p), o) for p in range(4) for o in range(30)]
    both = _records(first.read) + _records(second.read)
    assert sorted(both) == sorted(everything)  # each record read once, by one of the two
