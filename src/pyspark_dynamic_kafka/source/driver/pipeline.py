"""The driver's micro-batch pipeline, the same for every mode.

:meth:`MicroBatches.latest` is one pass through short steps::

    decode -> (archive) -> retain -> reconcile + select -> target -> admit -> report -> encode

What differs between streams (which partitions are read, whether an archive comes first) is
behind the seams of :mod:`~pyspark_dynamic_kafka.source.driver.modes`, chosen once when the
reader is built. Where a newly seen partition starts is
:mod:`~pyspark_dynamic_kafka.source.driver.start_policy`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pyspark_dynamic_kafka.gcpause import cyclic_gc_paused
from pyspark_dynamic_kafka.offset_spec import PartitionKey
from pyspark_dynamic_kafka.source.checkpoint import (
    SourceOffset,
    decode,
    encode,
    reader_schemas_of,
    with_reader_schemas,
)
from pyspark_dynamic_kafka.source.driver.admission import Admission
from pyspark_dynamic_kafka.source.driver.cluster_view import ClusterView
from pyspark_dynamic_kafka.source.driver.discovery import Subscription
from pyspark_dynamic_kafka.source.driver.modes import ArchivePhase, PartitionSelection
from pyspark_dynamic_kafka.source.driver.reader_schemas import (
    ReaderSchemas,
    check_registries,
    registries_of,
    started_schemas,
)
from pyspark_dynamic_kafka.source.driver.reconcile import (
    MAX_PARALLEL_CLUSTERS,
    Reconciled,
    offsets_went_back,
)
from pyspark_dynamic_kafka.source.driver.start_policy import LATEST_RULE, StartPolicy
from pyspark_dynamic_kafka.source.driver.status import SourceStatus
from pyspark_dynamic_kafka.source.driver.task_packing import (
    new_group_id,
    offset_ranges,
    pack_query_tasks,
    read_paths,
)
from pyspark_dynamic_kafka.source.driver.went_back import range_begin

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

__all__ = ["MicroBatches", "Tuning"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Tuning:
    """Knobs ``benchmarks/scale.py`` compares; a query always runs with the defaults.

    Attributes
    ----------
    parallel_clusters:
        Clusters listed at the same time (1: one after the other).
    pause_gc:
        Whether planning runs with the cyclic garbage collector paused.
    """

    parallel_clusters: int = MAX_PARALLEL_CLUSTERS
    pause_gc: bool = True


class MicroBatches:
    """The offsets and tasks of a stream's micro-batches (what the stream reader delegates to).

    Parameters
    ----------
    driver:
        Metadata, listing and reconciliation.
    selection:
        Which partitions are read.
    archive:
        What comes before Kafka.
    policy:
        Where partitions start (``archive`` puts its hand-over to Kafka in front of the
        policy's start rule); ``selection`` asks the same policy.
    pause_gc:
        Whether planning runs with the cyclic garbage collector paused
        (:mod:`~pyspark_dynamic_kafka.gcpause`; a knob for benchmarks).
    declared:
        The columns the query declared (``load()``), which Avro reader schemas must give.
    """

    def __init__(
        self,
        driver: ClusterView,
        selection: PartitionSelection,
        archive: ArchivePhase,
        policy: StartPolicy,
        pause_gc: bool = True,
        declared: StructType | None = None,
    ) -> None:
        options = driver.options
        self.driver = driver
        self.selection = selection
        self.archive = archive
        self.policy = policy
        self.pause_gc = pause_gc
        self.admission = Admission(options)
        self.status = SourceStatus(
            options.subscription_description(), options.discovery_failure_threshold
        )
        self.latest_offset: dict[str, Any] | None = None
        self._initial: dict[str, Any] | None = None
        self._target: dict[PartitionKey, int] | None = None
        self._group_id = new_group_id(options)
        self._declared = declared
        self._schemas: ReaderSchemas | None = None

    def initial(self) -> dict[str, Any]:
        """The first offset (cached: Spark may ask twice)."""
        if self._initial is None:
            offsets = self.selection.initial(
                self.driver, self.archive.start_rule(self.policy.start)
            )
            named = self._reader_schemas(None, self.driver.subscription(refresh=False)).named
            first = replace(self.archive.initial(offsets), topic_ids=self.driver.topic_ids)
            self._initial = with_reader_schemas(encode(first), named)
        return self._initial

    def available_now(self) -> None:
        """Record the latest offsets now: the stream reads up to them only."""
        self.selection.available_now()
        self._target = self.driver.reconcile({}, LATEST_RULE, entering=False).offsets
        _log.info("Trigger.AvailableNow reads up to %s", encode(SourceOffset(self._target)))

    def latest(self, start_offset: dict[str, Any], limit: Any) -> dict[str, Any]:
        """The end of the next micro-batch (``start_offset`` itself: no micro-batch yet)."""
        with cyclic_gc_paused(self.pause_gc):
            return self._latest(start_offset, limit)

    def _latest(self, start_offset: dict[str, Any], limit: Any) -> dict[str, Any]:
        start = decode(start_offset)
        ahead = self.archive.advance(start, limit)
        if ahead is not None:
            self.latest_offset = encode(ahead)
            return self.latest_offset
        driver = self.driver
        subscription = driver.subscription()
        named = self._reader_schemas(start_offset, subscription).named
        previous, retained = self.policy.resume(
            start, {(c, t) for c, a in subscription.items() for t in a.topics}
        )
        driver.recorded_ids = dict(start.topic_ids)
        state = self.selection.select(driver, previous, subscription)
        self._observe(state, subscription, len(previous.keys() - state.offsets.keys()))
        properties = {c: a.properties for c, a in subscription.items()}
        self.status.read_paths(read_paths(driver.options, properties, self._group_id))
        self.selection.submit(previous, subscription)
        driver.report(self.archive.switch_losses(start, previous, driver.lister, subscription))
        ids = state.topic_ids
        self.latest_offset = with_reader_schemas(
            encode(SourceOffset(state.offsets, topic_ids=ids)), named
        )
        end = self._within_target(previous, state.offsets)
        both = (start.topic_ids, ids)
        begin = {
            k: range_begin(k, v, end[k], both, driver.rewound) if k in end else v
            for k, v in previous.items()
        }
        admitted = self.admission.admit(limit, begin, end, self._target is not None)
        admitted = self.selection.settle(admitted, previous, end)
        self.status.planned(begin, previous if admitted is None else admitted)
        self.status.losses(driver.recent_losses)
        self.selection.planned(previous if admitted is None else admitted, admitted is not None)
        if admitted is None:
            return dict(start_offset)
        live = replace(self.archive.live(admitted, retained), topic_ids=ids)
        return with_reader_schemas(encode(live), named)

    def _reader_schemas(
        self, recorded: Mapping[str, Any] | None, subscription: Subscription
    ) -> ReaderSchemas:
        """The Avro reader schemas, resolved at the first call (as the checkpoint recorded
        them, when the query restarts from one); every cluster read must name a registry."""
        if self._schemas is None:
            named = reader_schemas_of(recorded) if recorded is not None else None
            options = self.driver.options
            self._schemas = started_schemas(options, subscription, self._declared, named)
            return self._schemas
        if self._schemas.columns is not None:
            check_registries(self._schemas.columns, registries_of(subscription))
        return self._schemas

    def _observe(self, state: Reconciled, subscription: Subscription, left: int) -> None:
        discovery = self.driver.discovery
        if discovery is not None:
            self.status.observe(
                subscription, state.entered, discovery.failures, discovery.last_success_ms, left
            )

    def _within_target(
        self, previous: Mapping[PartitionKey, int], available: Mapping[PartitionKey, int]
    ) -> dict[PartitionKey, int]:
        target = self._target
        if target is None:
            return dict(available)
        end: dict[PartitionKey, int] = {}
        for key, offset in available.items():
            if key not in previous:  # enters at its starting position
                end[key] = offset
            elif key in target:
                end[key] = min(offset, max(target[key], previous[key]))
            else:  # discovered after the query started: enters, is not read
                end[key] = previous[key]
        return end

    def report(self) -> dict[str, Any] | None:
        """The latest offsets with the status monitoring reads."""
        report = self.status.report(self.latest_offset)
        if report is not None:
            self.selection.report(report)
        return report

    def tasks(self, start_offset: dict[str, Any], end_offset: dict[str, Any]) -> list[Any]:
        """The exact ranges between two offsets, planned into few, large tasks."""
        with cyclic_gc_paused(self.pause_gc):
            return self._tasks(start_offset, end_offset)

    def _tasks(self, start_offset: dict[str, Any], end_offset: dict[str, Any]) -> list[Any]:
        start, end = decode(start_offset), decode(end_offset)
        archived = self.archive.tasks(start, end)
        begin = {**start.retained.offsets, **start.offsets}
        ids = (start.topic_ids, end.topic_ids)
        went_back = offsets_went_back(begin, end.offsets, ids)  # e.g. a batch replayed
        self.driver.report(went_back)
        ranges = offset_ranges(begin, end.offsets, self.driver.rewound, ids)
        if not ranges:
            return archived
        subscription = self.driver.subscription(refresh=False)  # what latestOffset planned with
        unreadable = sorted({r.cluster for r in ranges if r.cluster not in subscription})
        if unreadable:
            _log.warning(
                "Clusters %s are no longer in the metadata; their pending ranges are not read.",
                unreadable,
            )
            ranges = [r for r in ranges if r.cluster in subscription]
        ranges = self.selection.trim(ranges, subscription)
        properties = {c: a.properties for c, a in subscription.items()}
        avro = self._reader_schemas(start_offset, subscription).columns
        tasks = pack_query_tasks(
            ranges, properties, self.driver.options, self._group_id, self.driver.generation, avro
        )
        return [*archived, *tasks]
