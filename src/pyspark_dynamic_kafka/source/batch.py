"""The batch reader (``spark.read.format("dynamic_kafka")``): one bounded read of every partition.

The metadata is resolved once, when Spark plans the read; each assigned partition is read from
its start (``startingTimestamp`` > ``startingOffsetsByTimestamp`` > ``startingOffsets``, default
``earliest``; a metadata entry's ``startingOffsets`` for partitions the options do not name) to its
end (``endingTimestamp`` > ``endingOffsetsByTimestamp`` > ``endingOffsets``, default ``latest``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from pyspark_dynamic_kafka.errors import KafkaClientError, OffsetsError
from pyspark_dynamic_kafka.source.discovery import ClusterAssignment, Discovery
from pyspark_dynamic_kafka.source.listing import OffsetLister
from pyspark_dynamic_kafka.source.planning import (
    OffsetRange,
    ReadTask,
    new_group_id,
    plan_query_tasks,
)
from pyspark_dynamic_kafka.source.positions import (
    EARLIEST_POSITION,
    LATEST_POSITION,
    PositionSpec,
    start_position,
)
from pyspark_dynamic_kafka.source.read import read_task
from pyspark_dynamic_kafka.source.settings import SourceOptions

__all__ = ["DynamicKafkaBatchReader"]

_log = logging.getLogger(__name__)


class DynamicKafkaBatchReader(DataSourceReader):  # type: ignore[misc]
    """Reads the offsets between the starting and ending options, once.

    Holds only the parsed options: clients are created while planning and closed right after,
    so the pickled copy executors get carries no client.

    Parameters
    ----------
    options:
        Parsed source options (``mode="batch"``).
    """

    def __init__(self, options: SourceOptions) -> None:
        self._options = options

    def partitions(self) -> list[InputPartition]:
        """Resolve the metadata and the offsets, and plan the ranges into few, large tasks.

        Raises
        ------
        OffsetsError
            When a partition's start is after its end, or a start timestamp has no record and
            ``startingOffsetsByTimestampStrategy`` is ``error``.
        KafkaClientError
            When a cluster cannot be listed.
        """
        options = self._options
        discovery = Discovery(options)
        lister = OffsetLister(options)
        try:
            assignment = discovery.current()
            ranges: list[OffsetRange] = []
            for cluster_id, cluster in assignment.items():
                ranges += self._ranges(lister, cluster_id, cluster)
        finally:
            lister.close()
            discovery.close()
        properties = {c: a.properties for c, a in assignment.items()}
        tasks = plan_query_tasks(ranges, properties, options, new_group_id(options))
        _log.info("Batch read of %d offset range(s) in %d task(s)", len(ranges), len(tasks))
        return list(tasks)

    def _ranges(
        self, lister: OffsetLister, cluster_id: str, cluster: ClusterAssignment
    ) -> list[OffsetRange]:
        options = self._options
        ending = options.ending or PositionSpec({}, LATEST_POSITION, "endingOffsets")
        snapshot = lister.snapshot(cluster_id, cluster)
        topics = snapshot.topics
        if topics.unavailable:
            raise KafkaClientError(
                f"Cluster '{cluster_id}' reports topic(s) {sorted(topics.unavailable)} with an "
                "error; a batch read would miss their records. Retry when the cluster is healthy."
            )
        if topics.absent:
            _log.warning("Cluster %r has no topic(s) %s", cluster_id, sorted(topics.absent))
        latest = snapshot.latest
        wanted = {
            (t, p): start_position(
                options.starting,
                (cluster_id, t, p),
                cluster.starting_position(t),
                EARLIEST_POSITION,
            )
            for t, p in latest
        }
        starts = lister.resolve(cluster_id, cluster, wanted, latest, options.timestamp_strategy)
        ends = lister.resolve(
            cluster_id,
            cluster,
            {(t, p): ending.position((cluster_id, t, p), LATEST_POSITION) for t, p in latest},
            latest,
            "latest",
        )
        ranges = []
        for (topic, partition), start in sorted(starts.items()):
            end = ends[(topic, partition)]
            if end > latest[(topic, partition)]:
                _log.warning(
                    "%s of %s/%s/%d is %d, past its latest offset %d: reading up to %d.",
                    ending.option,
                    cluster_id,
                    topic,
                    partition,
                    end,
                    latest[(topic, partition)],
                    latest[(topic, partition)],
                )
                end = latest[(topic, partition)]
            if start > end:
                raise OffsetsError(
                    f"The start of {cluster_id}/{topic}/{partition} (offset {start}, from "
                    f"{wanted[(topic, partition)].origin or options.starting.option}) is after "
                    f"its end (offset {end}, from {ending.option}). Fix the starting or ending "
                    "options."
                )
            if end > start:
                ranges.append(OffsetRange(cluster_id, topic, partition, start, end))
        return ranges

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Read one planned task as Arrow record batches (nothing for Spark's empty partition)."""
        if not isinstance(partition, ReadTask):
            return iter(())
        return read_task(partition)
