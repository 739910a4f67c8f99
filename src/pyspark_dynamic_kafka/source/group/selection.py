"""The two partition selections of a stream (option ``assignment``), behind
:class:`~pyspark_dynamic_kafka.source.driver.pipeline.PartitionSelection`:

- :class:`AllPartitions` (``assignment=all``): every partition the metadata assigns; with
  ``commitOffsetsToKafka`` the query's position is committed to ``kafka.group.id``
  (:mod:`~pyspark_dynamic_kafka.source.group.query_commits`).
- :class:`GroupAssigned` (``assignment=group``): the partitions Kafka's consumer group assigns
  to this query (:mod:`~pyspark_dynamic_kafka.source.group.ownership`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.offset_spec import PartitionKey
from pyspark_dynamic_kafka.source.config.parsed import AssignmentMode, SourceOptions
from pyspark_dynamic_kafka.source.contract import STATUS_KEY
from pyspark_dynamic_kafka.source.driver.cluster_view import ClusterView
from pyspark_dynamic_kafka.source.driver.discovery import Subscription
from pyspark_dynamic_kafka.source.driver.listing import OffsetLister
from pyspark_dynamic_kafka.source.driver.modes import Offsets, PartitionSelection
from pyspark_dynamic_kafka.source.driver.named_offsets import check_named_partitions
from pyspark_dynamic_kafka.source.driver.reconcile import Reconciled
from pyspark_dynamic_kafka.source.driver.start_policy import PositionRule, StartPolicy
from pyspark_dynamic_kafka.source.executor.task import OffsetRange
from pyspark_dynamic_kafka.source.group.coordinator import stop_on_sigterm
from pyspark_dynamic_kafka.source.group.ownership import GroupOwnership
from pyspark_dynamic_kafka.source.group.query_commits import GroupCommits

__all__ = ["AllPartitions", "GroupAssigned", "partition_selection"]

_log = logging.getLogger(__name__)

#: Micro-batches planned without a word from the listener before the missing one is warned of.
UNHEARD_BATCHES = 3


class AllPartitions(PartitionSelection):
    """Every partition the metadata assigns (``assignment=all``).

    Parameters
    ----------
    options:
        Parsed source options.
    lister:
        The driver's listing clients (their admin clients commit with ``commitOffsetsToKafka``).
    policy:
        Where partitions start (its ``discovered`` rule: the ones appearing while it runs).
    """

    def __init__(self, options: SourceOptions, lister: OffsetLister, policy: StartPolicy) -> None:
        self._options = options
        self._lister = lister
        self._discovered = policy.discovered
        self._commits: GroupCommits | None = None

    def initial(self, driver: ClusterView, rule: PositionRule) -> dict[PartitionKey, int]:
        offsets = driver.reconcile({}, rule).offsets
        check_named_partitions([driver.options.starting], offsets)
        return offsets

    def select(
        self, driver: ClusterView, previous: Offsets, subscription: Subscription
    ) -> Reconciled:
        return driver.reconcile(previous, self._discovered, subscription=subscription)

    def submit(self, previous: Offsets, subscription: Subscription) -> None:
        if self._options.commit_offsets_to_kafka:
            if self._commits is None:
                self._commits = GroupCommits.for_query(self._options, self._lister.admin_with)
            self._commits.submit(previous, subscription)


class GroupAssigned(PartitionSelection):
    """The partitions Kafka's consumer group ``kafka.group.id`` (of ``options``) assigns to this
    query (``assignment=group``); the group's members, reading the group's offsets with the
    admin clients of ``lister``, are created at first use. A newly assigned partition starts
    where ``policy`` says (the group's offset, else its ``assigned`` rule)."""

    def __init__(self, options: SourceOptions, lister: OffsetLister, policy: StartPolicy) -> None:
        self._options = options
        self._lister = lister
        self._policy = policy
        self._ownership: GroupOwnership | None = None
        self._batches = 0

    def _group(self) -> GroupOwnership:
        if self._ownership is None:
            self._ownership = GroupOwnership(self._lister, self._policy)
            stop_on_sigterm(self._ownership)
        return self._ownership

    def initial(self, driver: ClusterView, rule: PositionRule) -> dict[PartitionKey, int]:
        group = self._group()  # the partitions it assigns, at its offsets where it has some
        subscription = driver.subscription()
        state = driver.reconcile({}, rule, entering=False, subscription=subscription)
        check_named_partitions([driver.options.starting], state.offsets)  # all, not only owned
        offsets = group.owned_offsets({}, state.offsets, subscription)[0]
        group.planned(offsets)
        return offsets

    def select(
        self, driver: ClusterView, previous: Offsets, subscription: Subscription
    ) -> Reconciled:
        # GroupOwnership.owned_offsets commits ``previous`` to the group first: nothing to submit
        group = self._group()  # newly assigned: where the group is, else at the start rule's
        rule = self._policy.assigned
        state = driver.reconcile(previous, rule, entering=False, subscription=subscription)
        state.offsets, state.entered = group.owned_offsets(previous, state.offsets, subscription)
        return state

    def settle(
        self, admitted: dict[PartitionKey, int] | None, previous: Offsets, end: Offsets
    ) -> dict[PartitionKey, int] | None:
        if admitted is None and set(end) != set(previous):
            return dict(end)  # partitions handed over or sitting out: never wait for more data
        return admitted

    def planned(self, end: Offsets, batch: bool) -> None:
        group = self._group()
        group.planned(end)
        self._batches += batch
        if batch and self._batches == UNHEARD_BATCHES and not group.inbox.heard:
            _log.warning(
                "assignment=group: %d micro-batches were planned and no listener reported one "
                "completed, so a graceful stop repeats the last micro-batch (its offsets reach "
                "the group only at the next trigger). Attach the listener on the driver: "
                "pyspark_dynamic_kafka.monitoring.attach(spark) before starting the query.",
                UNHEARD_BATCHES,
            )

    def trim(self, ranges: Sequence[OffsetRange], subscription: Subscription) -> list[OffsetRange]:
        # a replayed micro-batch may hold partitions others read meanwhile
        return self._group().trim(ranges, subscription)

    def report(self, status: dict[str, Any]) -> None:
        if self._ownership is not None:  # where the listener reports completed micro-batches
            status[STATUS_KEY]["handoff"] = self._ownership.inbox.path

    def available_now(self) -> None:
        raise OptionsError(
            "Option 'assignment' (group) does not work with Trigger.AvailableNow: the "
            "partitions a member owns change with the group, so 'what is available now' has "
            "no end. Use a processing-time trigger, or assignment=all. Spark Declarative "
            "Pipelines run every streaming flow with Trigger.AvailableNow: in a pipeline, "
            "read with assignment=all."
        )

    def stop(self) -> None:
        if self._ownership is not None:
            self._ownership.shutdown()


_SELECTIONS: Mapping[
    AssignmentMode, Callable[[SourceOptions, OffsetLister, StartPolicy], PartitionSelection]
] = {
    AssignmentMode.ALL: AllPartitions,
    AssignmentMode.GROUP: GroupAssigned,
}


def partition_selection(
    options: SourceOptions, lister: OffsetLister, policy: StartPolicy
) -> PartitionSelection:
    """The selection option ``assignment`` names, placing new partitions by ``policy``."""
    return _SELECTIONS[options.assignment](options, lister, policy)
