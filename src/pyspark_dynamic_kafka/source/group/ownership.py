"""Driver side of ``assignment=group``: plan only the partitions Kafka's consumer group assigns.

For every cluster of the subscription the reader is a member of ``kafka.group.id`` there
(:class:`~pyspark_dynamic_kafka.source.group.members.GroupMembers`).
:class:`GroupOwnership` turns the offsets reconciliation found for *every* partition into the
offsets of the partitions this query owns:

- **Partitions it owns and planned before** continue from the checkpoint.
- **A partition newly assigned** starts where the start policy says: at the group's committed
  offset, else at its start rule's position (:meth:`~pyspark_dynamic_kafka.source.driver.
  start_policy.StartPolicy.group_start`). When the checkpoint holds another offset for it (another
  member read it meanwhile) it sits out one micro-batch and then enters at the group's offset,
  so no range of a replayed micro-batch can cover what another member read.
- **A revoked partition** is handed over once the micro-batch that read it is committed: the
  next ``latestOffset(start)`` commits ``start`` to the group, releases it and leaves it out.
- **Completed micro-batches** reach the group as soon as the driver's listener reports them
  (:mod:`~pyspark_dynamic_kafka.source.group.coordinator`), at the latest at the next trigger;
  so does the last one before a ``query.stop()``: :meth:`GroupOwnership.shutdown` waits for it,
  then leaves every group, so the partitions move at once.

Commits go through the member (a group with members refuses the admin API's commits) and only
ever move a partition this query holds forward.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import replace

from pyspark_dynamic_kafka.offset_spec import PartitionKey
from pyspark_dynamic_kafka.source.driver.discovery import Subscription
from pyspark_dynamic_kafka.source.driver.listing import OffsetLister
from pyspark_dynamic_kafka.source.driver.start_policy import StartPolicy
from pyspark_dynamic_kafka.source.executor.task import OffsetRange
from pyspark_dynamic_kafka.source.group.admin_offsets import group_offsets
from pyspark_dynamic_kafka.source.group.coordinator import HandoffWatcher
from pyspark_dynamic_kafka.source.group.members import GroupMembers

__all__ = ["GroupOwnership"]

_log = logging.getLogger(__name__)

#: Planned micro-batches remembered, to recognise the listener's reports of them.
_KEPT_PLANS = 32


class GroupOwnership:
    """The group members of one query and what they let it read.

    Parameters
    ----------
    lister:
        The reader's listing clients (their admin clients read the group's offsets).
    policy:
        Where a newly assigned partition starts (:meth:`~pyspark_dynamic_kafka.source.driver.
        start_policy.StartPolicy.group_start`).
    """

    def __init__(self, lister: OffsetLister, policy: StartPolicy) -> None:
        self._lister = lister
        self._policy = policy
        self._members = GroupMembers()
        self._planned: dict[PartitionKey, int] = {}  # -> the plan it entered with
        self._plans: list[tuple[int, dict[PartitionKey, int]]] = []  # recent (index, end)
        self._committed: dict[PartitionKey, int] = {}  # asked for; failures come back:
        self._failures: deque[tuple[str, dict[tuple[str, int], int]]] = deque()
        self._last_end: dict[PartitionKey, int] = {}
        self._lock = threading.RLock()
        self._closed = False
        self._handoff = HandoffWatcher(self.completed)
        self.inbox = self._handoff.inbox

    # ------------------------------------------------------------------ membership
    def sync(self, subscription: Subscription) -> None:
        """Join the group on clusters added to ``subscription``, leave it on clusters removed."""
        with self._lock:
            for cluster_id in self._members.sync(subscription):
                self._forget(cluster_id)

    def _forget(self, cluster_id: str) -> None:
        for key in [k for k in self._planned if k[0] == cluster_id]:
            del self._planned[key]
            self._committed.pop(key, None)

    # ------------------------------------------------------------------ planning
    def owned_offsets(
        self,
        previous: Mapping[PartitionKey, int],
        available: Mapping[PartitionKey, int],
        subscription: Subscription,
    ) -> tuple[dict[PartitionKey, int], dict[PartitionKey, int]]:
        """The offsets of this query's partitions among ``available`` (every partition).

        ``previous`` is the end of the last micro-batch Spark committed: its commit to the group
        is asked for first (without waiting for it) and revoked partitions are then handed over.
        Returns the offsets and the partitions entering them (with their start).
        """
        with self._lock:
            self._commit({k: v for k, v in previous.items() if k in self._planned})
            self.sync(subscription)  # after the commit: a removed cluster got its offsets
            for _, member in self._members.items():
                member.release(member.revoking())
            owned = self._members.owned()
            offsets = {k: v for k, v in available.items() if k in owned and k in self._planned}
            acquired = sorted(k for k in available if k in owned and k not in self._planned)
            group = self._group_offsets(acquired, subscription)
            entered: dict[PartitionKey, int] = {}
            for key in acquired:
                resumed = group.get(key)
                if key in previous:
                    if resumed is None or resumed == previous[key]:
                        offsets[key] = available[key]
                    else:  # another member read it: sits out once, then enters at `resumed`
                        _log.info(
                            "Partition %s/%s/%d: the group is at %d, the checkpoint at %d; it "
                            "enters at the group's offset next micro-batch.",
                            *key,
                            resumed,
                            previous[key],
                        )
                    continue
                entered[key] = offsets[key] = self._policy.group_start(available[key], resumed)
                _log.info(
                    "Partition %s/%s/%d starts at offset %d (%s)",
                    *key,
                    entered[key],
                    "group offset" if resumed is not None else "starting position",
                )
            return offsets, entered

    def planned(self, end: Mapping[PartitionKey, int]) -> None:
        """Record what the micro-batch ending at ``end`` covers (the offset Spark logs)."""
        with self._lock:
            index = self._plans[-1][0] + 1 if self._plans else 1
            for key in set(self._planned) - set(end):
                self._committed.pop(key, None)
            self._planned = {k: self._planned.get(k, index) for k in end}
            self._plans = [*self._plans, (index, dict(end))][-_KEPT_PLANS:]
            self._last_end = dict(end)

    def trim(self, ranges: Sequence[OffsetRange], subscription: Subscription) -> list[OffsetRange]:
        """The parts of ``ranges`` this query may read.

        Ranges of a micro-batch it planned itself are kept. A micro-batch planned by an earlier
        run (Spark replays the last one after a restart) is cut to the partitions the group
        assigns now, from the group's offset where another member read further.
        """
        with self._lock:
            if all((r.cluster, r.topic, r.partition) in self._planned for r in ranges):
                return list(ranges)
            self.sync(subscription)
            owned = self._members.owned()
            foreign = [
                k
                for k in ((r.cluster, r.topic, r.partition) for r in ranges)
                if k not in self._planned and k in owned
            ]
            group = self._group_offsets(foreign, subscription)
            kept = []
            for r in ranges:
                key = (r.cluster, r.topic, r.partition)
                if key in self._planned:
                    kept.append(r)
                    continue
                if key not in owned:
                    _log.info("Replayed range %s/%s/%d: owned by another member.", *key)
                    continue
                resumed = group.get(key)
                if resumed is not None and resumed >= r.end:
                    continue
                if resumed is not None and resumed > r.start:
                    r = replace(r, start=resumed)
                kept.append(r)
                self._planned[key] = self._plans[-1][0] if self._plans else 0
            return kept

    def _group_offsets(
        self, keys: Sequence[PartitionKey], subscription: Subscription
    ) -> dict[PartitionKey, int]:
        result: dict[PartitionKey, int] = {}
        for cluster_id in sorted({k[0] for k in keys}):
            member = self._members.get(cluster_id)
            cluster = subscription.get(cluster_id)
            if member is None or cluster is None:
                continue
            pairs = [(t, p) for c, t, p in keys if c == cluster_id]
            admin = self._lister.admin(cluster_id, cluster)
            found = group_offsets(admin, member.group, pairs)
            result.update({(cluster_id, t, p): o for (t, p), o in found.items()})
        return result

    # ------------------------------------------------------------------ commits
    def _commit(self, offsets: Mapping[PartitionKey, int]) -> None:
        """Commit ``offsets`` of held partitions that move forward, without waiting: each member
        sends its commits in order, before it hands a partition over or leaves. A commit that
        fails is logged and asked again with the next micro-batch."""
        while self._failures:  # failed commits: forget them, so that they are asked again
            cluster_id, failed = self._failures.popleft()
            for (t, p), o in failed.items():
                if self._committed.get((cluster_id, t, p)) == o:
                    del self._committed[(cluster_id, t, p)]
        for cluster_id, member in self._members.items():
            wanted = {
                (t, p): o
                for (c, t, p), o in offsets.items()
                if c == cluster_id and o > self._committed.get((c, t, p), -1)
            }
            if wanted:
                self._committed.update({(cluster_id, t, p): o for (t, p), o in wanted.items()})
                member.commit(wanted, functools.partial(self._failed, cluster_id, wanted))

    def _failed(self, cluster_id: str, offsets: dict[tuple[str, int], int], reason: str) -> None:
        # on a member's poll thread: never takes the planner's lock (the driver may hold it)
        _log.warning("%s The commit is retried with the next micro-batch.", reason)
        self._failures.append((cluster_id, offsets))

    def completed(self, end: Mapping[PartitionKey, int]) -> None:
        """A micro-batch that ended at ``end`` completed: commit its offsets now.

        Only a micro-batch this reader planned counts, and only for partitions it has held
        since then (a late report never moves a partition handed over and back again).
        """
        with self._lock:
            matches = [index for index, planned in self._plans if planned == end]
            if not matches:
                return
            index = max(matches)
            self._commit({k: v for k, v in end.items() if self._planned.get(k, index + 1) <= index})

    # ------------------------------------------------------------------ the end
    def shutdown(self) -> None:
        """Commit the last completed micro-batch (waiting for the listener's word when one is
        attached), then leave every group. Idempotent."""
        with self._lock:
            if self._closed:
                return
        self._handoff.drain(self._last_planned)
        with self._lock:
            self._closed = True
            for cluster_id in self._members.clusters():
                self._members.leave(cluster_id)
                self._forget(cluster_id)
        self._handoff.close()

    def _last_planned(self) -> dict[PartitionKey, int]:
        with self._lock:
            return self._last_end
