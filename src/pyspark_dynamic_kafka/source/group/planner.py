"""Driver side of ``assignment=group``: plan only the partitions Kafka's consumer group assigns.

For every cluster of the subscription the reader is a member of ``kafka.group.id`` there
(:class:`~pyspark_dynamic_kafka.source.group.membership.GroupMember`). :class:`GroupPlanner` turns
the offsets reconciliation found for *every* partition into the offsets of this query:

- **Partitions it owns and planned before** continue from the checkpoint.
- **A partition newly assigned** starts at the group's committed offset (at the start rule's
  position when the group has none). When the checkpoint holds another offset for it (another
  member read it meanwhile) it sits out one micro-batch and then enters at the group's offset,
  so no range of a replayed micro-batch can cover what another member read.
- **A revoked partition** is handed over once the micro-batch that read it is committed: the
  next ``latestOffset(start)`` commits ``start`` to the group, releases it and leaves it out.
- **Completed micro-batches** reach the group as soon as the driver's listener reports them
  (:mod:`~pyspark_dynamic_kafka.source.group.handoff`), at the latest at the next trigger; so does
  the last one before a ``query.stop()``: :meth:`GroupPlanner.shutdown` waits for it, then leaves
  every group, so the partitions move at once.

Commits go through the member (a group with members refuses the admin API's commits) and only
ever move a partition this query holds forward.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace

from pyspark_dynamic_kafka.errors import KafkaClientError
from pyspark_dynamic_kafka.position import PartitionKey
from pyspark_dynamic_kafka.source.checkpoint import decode
from pyspark_dynamic_kafka.source.driver.discovery import Assignment
from pyspark_dynamic_kafka.source.driver.listing import OffsetLister
from pyspark_dynamic_kafka.source.executor.task import OffsetRange
from pyspark_dynamic_kafka.source.group.admin_offsets import group_offsets
from pyspark_dynamic_kafka.source.group.handoff import HandoffInbox
from pyspark_dynamic_kafka.source.group.membership import GroupMember

__all__ = ["GroupPlanner", "stop_on_sigterm"]

_log = logging.getLogger(__name__)

#: Longest wait for a member's first assignment before planning without it.
_JOIN_TIMEOUT_S = 60.0
#: Longest wait, at a stop, for the listener's word on the last micro-batch.
_STOP_WAIT_S = 5.0
#: Planned micro-batches remembered, to recognise the listener's reports of them.
_KEPT_PLANS = 32


class GroupPlanner:
    """The group members of one query and what they let it read.

    Parameters
    ----------
    lister:
        The reader's listing clients (their admin clients read the group's offsets).
    commit_timeout_ms:
        Timeout of one commit (``kafkaAdmin.requestTimeoutMs``).
    """

    def __init__(self, lister: OffsetLister, commit_timeout_ms: int) -> None:
        self._lister = lister
        self._timeout_s = commit_timeout_ms / 1000
        self._members: dict[str, GroupMember] = {}
        self._planned: dict[PartitionKey, int] = {}  # -> the plan it entered with
        self._plans: list[tuple[int, dict[PartitionKey, int]]] = []  # recent (index, end)
        self._committed: dict[PartitionKey, int] = {}
        self._last_end: dict[PartitionKey, int] = {}
        self._completed_end: dict[PartitionKey, int] | None = None
        self._terminated = False
        self._lock = threading.RLock()
        self._closed = False
        self.inbox = HandoffInbox()
        self._watcher = threading.Thread(target=self._watch, name="dynamic-kafka-handoff")
        self._watcher.daemon = True
        self._watcher.start()

    # ------------------------------------------------------------------ membership
    def sync(self, assignment: Assignment) -> None:
        """Join the group on clusters added to ``assignment``, leave it on clusters removed."""
        with self._lock:
            for cluster_id, member in list(self._members.items()):
                cluster = assignment.get(cluster_id)
                if (
                    cluster is None
                    or member.properties != dict(cluster.properties)
                    or member.topics != frozenset(cluster.topics)
                ):
                    self._leave(cluster_id)
            joined = []
            for cluster_id, cluster in assignment.items():
                if cluster_id not in self._members:
                    member = GroupMember(cluster_id, cluster.properties, cluster.topics)
                    self._members[cluster_id] = member
                    joined.append(member)
            for member in joined:
                if not member.wait_assigned(_JOIN_TIMEOUT_S):
                    _log.warning(
                        "Group %r on %r assigned nothing within %.0f s; planning without it.",
                        member.group,
                        member.cluster_id,
                        _JOIN_TIMEOUT_S,
                    )

    def _leave(self, cluster_id: str) -> None:
        member = self._members.pop(cluster_id)
        member.close()
        for key in [k for k in self._planned if k[0] == cluster_id]:
            del self._planned[key]
            self._committed.pop(key, None)

    def _owned(self) -> set[PartitionKey]:
        return {(c, t, p) for c, m in self._members.items() for t, p in m.owned()}

    # ------------------------------------------------------------------ planning
    def plan(
        self,
        previous: Mapping[PartitionKey, int],
        available: Mapping[PartitionKey, int],
        assignment: Assignment,
    ) -> tuple[dict[PartitionKey, int], dict[PartitionKey, int]]:
        """The offsets of this query's partitions among ``available`` (every partition).

        ``previous`` is the end of the last micro-batch Spark committed: it is committed to the
        group first and revoked partitions are then handed over. Returns the offsets and the
        partitions entering them (with their start).
        """
        with self._lock:
            self._commit({k: v for k, v in previous.items() if k in self._planned})
            self.sync(assignment)  # after the commit: a removed cluster got its offsets
            for member in self._members.values():
                member.release(member.revoking())
            owned = self._owned()
            offsets = {k: v for k, v in available.items() if k in owned and k in self._planned}
            acquired = sorted(k for k in available if k in owned and k not in self._planned)
            group = self._group_offsets(acquired, assignment)
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
                entered[key] = offsets[key] = available[key] if resumed is None else resumed
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

    def trim(self, ranges: Sequence[OffsetRange], assignment: Assignment) -> list[OffsetRange]:
        """The parts of ``ranges`` this query may read.

        Ranges of a micro-batch it planned itself are kept. A micro-batch planned by an earlier
        run (Spark replays the last one after a restart) is cut to the partitions the group
        assigns now, from the group's offset where another member read further.
        """
        with self._lock:
            if all((r.cluster, r.topic, r.partition) in self._planned for r in ranges):
                return list(ranges)
            self.sync(assignment)
            owned = self._owned()
            foreign = [
                k
                for k in ((r.cluster, r.topic, r.partition) for r in ranges)
                if k not in self._planned and k in owned
            ]
            group = self._group_offsets(foreign, assignment)
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
        self, keys: Sequence[PartitionKey], assignment: Assignment
    ) -> dict[PartitionKey, int]:
        result: dict[PartitionKey, int] = {}
        for cluster_id in sorted({k[0] for k in keys}):
            member = self._members.get(cluster_id)
            cluster = assignment.get(cluster_id)
            if member is None or cluster is None:
                continue
            pairs = [(t, p) for c, t, p in keys if c == cluster_id]
            admin = self._lister.admin(cluster_id, cluster)
            found = group_offsets(admin, member.group, pairs)
            result.update({(cluster_id, t, p): o for (t, p), o in found.items()})
        return result

    # ------------------------------------------------------------------ commits
    def _commit(self, offsets: Mapping[PartitionKey, int]) -> None:
        """Commit ``offsets`` of held partitions that move forward; a failure is logged."""
        for cluster_id, member in self._members.items():
            wanted = {
                (t, p): o
                for (c, t, p), o in offsets.items()
                if c == cluster_id and o > self._committed.get((c, t, p), -1)
            }
            if not wanted:
                continue
            try:
                member.commit(wanted, self._timeout_s)
            except KafkaClientError as exc:
                _log.warning("%s The commit is retried with the next micro-batch.", exc)
                continue
            self._committed.update({(cluster_id, t, p): o for (t, p), o in wanted.items()})

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

    def _take(self) -> None:
        """Take the listener's reports in."""
        received = self.inbox.take()
        for document in received.completed:
            end = dict(decode(document).offsets)
            self.completed(end)
            with self._lock:
                self._completed_end = end
        with self._lock:
            self._terminated = self._terminated or received.terminated

    def _settled(self) -> bool:
        """Whether no micro-batch can complete any more: the query ended, or the last one
        planned completed."""
        with self._lock:
            return self._terminated or self._completed_end == self._last_end

    def _watch(self) -> None:
        while not self._closed:
            try:
                self._take()
            except Exception:  # the watcher must survive a malformed report
                _log.exception("Could not take a completed micro-batch in")
            time.sleep(0.1)

    # ------------------------------------------------------------------ the end
    def shutdown(self) -> None:
        """Commit the last completed micro-batch (waiting for the listener's word when one is
        attached), then leave every group. Idempotent."""
        with self._lock:
            if self._closed:
                return
        deadline = time.monotonic() + _STOP_WAIT_S
        self._take()
        while self.inbox.heard and not self._settled() and time.monotonic() < deadline:
            time.sleep(0.05)
            self._take()
        with self._lock:
            self._closed = True
            for cluster_id in list(self._members):
                self._leave(cluster_id)
        self.inbox.close()


def stop_on_sigterm(planner: GroupPlanner) -> None:
    """Shut ``planner`` down when the process gets SIGTERM, then exit.

    At a ``query.stop()`` Spark sends SIGTERM to the source's Python process (twice, a few
    milliseconds apart, on PySpark 4.3), whose default action ends it before anything else
    runs: the members would vanish without leaving their groups, and their partitions would
    move only after ``session.timeout.ms``. Installed from the main thread only (where Spark
    calls the reader); elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        return

    def handle(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # Spark sends it twice: finish the first
        planner.shutdown()
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, handle)
