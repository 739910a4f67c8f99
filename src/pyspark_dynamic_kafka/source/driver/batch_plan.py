"""The plan of a batch read (``spark.read.format("dynamic_kafka")``): every partition, once.

The metadata is resolved once, when Spark plans the read, and every assigned cluster is listed
once (:func:`~pyspark_dynamic_kafka.source.driver.reconcile.reconcile`, strict: a cluster or topic
that cannot be listed fails the read). Each assigned partition is read from its start
(``startingTimestamp`` > ``startingOffsetsByTimestamp`` > ``startingOffsets``, default
``earliest``; a metadata entry's ``startingOffsets`` for partitions the options do not name) to its
end (``endingTimestamp`` > ``endingOffsetsByTimestamp`` > ``endingOffsets``, default ``latest``),
both placed and resolved by :mod:`~pyspark_dynamic_kafka.source.driver.start_policy`. With an
archive (the :class:`~pyspark_dynamic_kafka.source.driver.modes.ArchivePhase` seam) its files
come first and Kafka is read from where it hands each partition over.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any

from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.offset_spec import PartitionKey
from pyspark_dynamic_kafka.source.config.parsed import SourceOptions
from pyspark_dynamic_kafka.source.driver.discovery import Discovery
from pyspark_dynamic_kafka.source.driver.listing import OffsetLister
from pyspark_dynamic_kafka.source.driver.modes import ArchivePhase
from pyspark_dynamic_kafka.source.driver.named_offsets import check_named_partitions
from pyspark_dynamic_kafka.source.driver.reader_schemas import planned_schemas
from pyspark_dynamic_kafka.source.driver.reconcile import reconcile
from pyspark_dynamic_kafka.source.driver.start_policy import end_rule, resolve_positions, start_rule
from pyspark_dynamic_kafka.source.driver.task_packing import new_group_id, pack_query_tasks
from pyspark_dynamic_kafka.source.executor.task import OffsetRange

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

__all__ = ["plan_batch_read"]

_log = logging.getLogger(__name__)


def plan_batch_read(
    options: SourceOptions, archive: ArchivePhase, declared: StructType | None = None
) -> list[Any]:
    """Resolve the metadata and the offsets, and plan the ranges into few, large tasks (the
    archive's tasks first).

    Raises
    ------
    OffsetsError
        When a partition's start is after its end, or a start timestamp has no record and
        ``startingOffsetsByTimestampStrategy`` is ``error``.
    KafkaClientError
        When a cluster cannot be listed.
    """
    starting, ending = start_rule(options, batch=True), end_rule(options)
    starting = archive.start_rule(starting)  # the archive, then Kafka from where it ends
    # Closed by ``with``, not in a ``finally``: a failure's traceback shows where it was raised
    # (PySpark prints each frame's current line, a ``finally`` block's last otherwise).
    with (
        contextlib.closing(Discovery(options)) as discovery,
        contextlib.closing(OffsetLister(options)) as lister,
    ):
        subscription = discovery.current()
        starts = reconcile(subscription, {}, lister, starting, strict=True)
        check_named_partitions([options.starting, options.ending], starts.offsets)
        ends: dict[PartitionKey, int] = {}
        for cluster_id, cluster in subscription.items():
            listed = {(t, p): o for (c, t, p), o in starts.latest.items() if c == cluster_id}
            found = resolve_positions(lister, cluster_id, cluster, listed, ending, False)
            ends.update({(cluster_id, t, p): o for (t, p), o in found.items()})
    for cluster_id, absent in starts.absent.items():
        if absent:
            _log.warning("Cluster %r has no topic(s) %s", cluster_id, sorted(absent))
    ranges = []
    for key, start in sorted(starts.offsets.items()):
        end = _end(key, ends[key], starts.latest[key], ending.options.option)
        if start > end and archive.covers(key):
            continue  # the archive reaches past the end: nothing of it from Kafka
        if start > end:
            origin = starting.position(key, subscription[key[0]].starting_position(key[1]))
            raise OffsetsError(
                f"The start of {'/'.join(map(str, key))} (offset {start}, from "
                f"{origin.origin}) is after its end (offset {end}, from "
                f"{ending.options.option}). Fix the starting or ending options."
            )
        if end > start:
            ranges.append(OffsetRange(*key, start, end))
    properties = {c: a.properties for c, a in subscription.items()}
    avro = planned_schemas(options, subscription, declared).columns
    tasks = pack_query_tasks(ranges, properties, options, new_group_id(options), avro=avro)
    _log.info("Batch read of %d offset range(s) in %d task(s)", len(ranges), len(tasks))
    return [*archive.tasks(None, None), *tasks]


def _end(key: PartitionKey, end: int, latest: int, option: str) -> int:
    """A partition's end, never past its latest offset (warning when the option asked for more)."""
    if end <= latest:
        return end
    _log.warning(
        "%s of %s/%s/%d is %d, past its latest offset %d: reading up to %d.",
        option,
        *key,
        end,
        latest,
        latest,
    )
    return latest
