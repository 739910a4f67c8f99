"""OffsetCommitter: one background commit in flight per cluster, failures retried next time.

The commit function is injected: a slow or failing cluster is simulated by a function that
waits on an event or raises, which no real broker does on request.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

from pyspark_dynamic_kafka.errors import KafkaClientError
from pyspark_dynamic_kafka.kafka.admin import ClusterAdmin
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.source.driver.discovery import ClusterSubscription
from pyspark_dynamic_kafka.source.group.committer import OffsetCommitter
from pyspark_dynamic_kafka.source.group.query_commits import GroupCommits

PROPS = {c: FrozenProperties({"bootstrap.servers": f"{c}:9092"}) for c in ("east", "west")}


class _Clusters:
    """Records each commit; ``slow`` clusters block until released, ``down`` ones fail."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, dict[tuple[str, int], int]]] = []
        self.slow: dict[str, threading.Event] = {}
        self.down: set[str] = set()

    def __call__(
        self, admin: ClusterAdmin, group: str, offsets: Mapping[tuple[str, int], int]
    ) -> None:
        gate = self.slow.get(admin.cluster_id)
        if gate is not None:
            gate.wait(60)
        if admin.cluster_id in self.down:
            raise KafkaClientError(f"Cluster '{admin.cluster_id}': could not commit")
        self.sent.append((admin.cluster_id, group, dict(offsets)))


def _wait(condition: object, what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_a_slow_cluster_delays_only_its_own_commits() -> None:
    clusters = _Clusters()
    clusters.slow["east"] = threading.Event()
    committer = OffsetCommitter("billing", 1000, commit=clusters)
    started = time.monotonic()
    committer.submit({"east": {("o", 0): 5}, "west": {("o", 0): 7}}, PROPS)
    committer.submit({"east": {("o", 0): 6}, "west": {("o", 0): 8}}, PROPS)
    committer.submit({"east": {("o", 0): 9}, "west": {("o", 0): 8}}, PROPS)
    assert time.monotonic() - started < 5  # submit never waits for a cluster
    _wait(lambda: committer.committed().get("west") == {("o", 0): 8}, "west's commits")
    assert "east" not in committer.committed()
    clusters.slow["east"].set()
    assert committer.flush(60)
    # east: the one in flight, then only the newest of those submitted meanwhile
    assert [o for c, _, o in clusters.sent if c == "east"] == [{("o", 0): 5}, {("o", 0): 9}]
    assert committer.committed() == {"east": {("o", 0): 9}, "west": {("o", 0): 8}}


def test_a_failed_commit_is_retried_with_the_next_submit_and_unchanged_offsets_are_not_sent() -> (
    None
):
    clusters = _Clusters()
    clusters.down.add("east")
    committer = OffsetCommitter("billing", 1000, commit=clusters)
    committer.submit({"east": {("o", 0): 5}, "west": {("o", 0): 5}}, PROPS)
    assert committer.flush(60)
    assert committer.failures() == {"east": 1} and "east" not in committer.committed()
    committer.submit({"east": {("o", 0): 5}, "west": {("o", 0): 5}}, PROPS)
    assert committer.flush(60)
    assert committer.failures() == {"east": 2}
    clusters.down.clear()
    committer.submit({"east": {("o", 0): 6}, "west": {("o", 0): 5}}, PROPS)
    assert committer.flush(60)
    assert committer.failures() == {}
    assert [(c, o) for c, _, o in clusters.sent] == [
        ("west", {("o", 0): 5}),
        ("east", {("o", 0): 6}),
    ]


def test_a_clusters_own_group_id_wins_and_removed_clusters_get_their_last_position() -> None:
    clusters = _Clusters()
    commits = GroupCommits(OffsetCommitter("billing", 1000, commit=clusters))
    own = FrozenProperties({**PROPS["west"], "group.id": "west-billing"})
    both = {
        "east": ClusterSubscription(PROPS["east"], frozenset({"o"})),
        "west": ClusterSubscription(own, frozenset({"o"})),
    }
    commits.submit({("east", "o", 0): 3, ("west", "o", 0): 4}, both)
    assert commits.committer.flush(60)
    # east left the metadata; the position still holds its last offsets: committed once more
    commits.submit({("east", "o", 0): 5, ("west", "o", 0): 4}, {"west": both["west"]})
    assert commits.committer.flush(60)
    commits.submit({("west", "o", 0): 6}, {"west": both["west"]})
    assert commits.committer.flush(60)
    assert sorted(clusters.sent, key=lambda sent: (sent[0], sorted(sent[2].items()))) == [
        ("east", "billing", {("o", 0): 3}),
        ("east", "billing", {("o", 0): 5}),
        ("west", "west-billing", {("o", 0): 4}),
        ("west", "west-billing", {("o", 0): 6}),
    ]
    assert set(commits.committer.committed()) == {"west"}
