"""The micro-batch stream reader: offsets per cluster/topic/partition, reconciled with metadata."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from pyspark_dynamic_kafka.errors import KafkaClientError
from pyspark_dynamic_kafka.kafka.admin import ClusterAdmin
from pyspark_dynamic_kafka.source.discovery import Assignment, ClusterAssignment, Discovery
from pyspark_dynamic_kafka.source.offsets import (
    EARLIEST,
    LATEST,
    PartitionKey,
    decode_offsets,
    encode_offsets,
)
from pyspark_dynamic_kafka.source.options import SourceOptions
from pyspark_dynamic_kafka.source.planning import (
    ReadSettings,
    ReadTask,
    offset_ranges,
    plan_tasks,
)
from pyspark_dynamic_kafka.source.read import read_task

__all__ = ["DynamicKafkaStreamReader"]

_log = logging.getLogger(__name__)


def _read_committed(properties: Mapping[str, str]) -> bool:
    return properties.get("isolation.level", "").lower() == "read_committed"


class DynamicKafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):  # type: ignore[misc]
    """Reads the subscribed streams micro-batch by micro-batch.

    On the driver it keeps the metadata discovery and one admin client per cluster (created
    lazily, never pickled); executors get a pickled copy that only runs :meth:`read`.

    Parameters
    ----------
    options:
        Parsed source options.
    """

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._discovery: Discovery | None = None
        self._admins: dict[str, ClusterAdmin] = {}
        self._initial: dict[str, Any] | None = None
        self._latest: dict[str, Any] | None = None
        self._target: dict[PartitionKey, int] | None = None
        self._missing: dict[str, list[str]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"_options": self._options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["_options"])  # type: ignore[misc]

    # ----------------------------------------------------------------- driver: metadata
    def _assignment(self, refresh: bool = True) -> Assignment:
        """The current assignment; ``refresh=False`` never re-reads metadata once it has some."""
        if self._discovery is None:
            self._discovery = Discovery(self._options)
        snapshot = self._discovery.snapshot
        assignment = snapshot if not refresh and snapshot is not None else self._discovery.current()
        for cluster_id in [c for c in self._admins if c not in assignment]:
            _log.info("Cluster %r left the metadata: closing its admin client.", cluster_id)
            self._admins.pop(cluster_id).close()
        return assignment

    def _admin(self, cluster_id: str, cluster: ClusterAssignment) -> ClusterAdmin:
        admin = self._admins.get(cluster_id)
        if admin is None or admin.properties != cluster.properties:
            admin = ClusterAdmin(cluster_id, cluster.properties, self._options.admin_timeout_ms)
            self._admins[cluster_id] = admin
        return admin

    def _list(
        self, cluster_id: str, cluster: ClusterAssignment
    ) -> tuple[dict[tuple[str, int], int], ClusterAdmin]:
        """Latest offset of every partition of the cluster's existing assigned topics."""
        admin = self._admin(cluster_id, cluster)
        partitions = admin.list_partitions(cluster.topics)
        missing = sorted(cluster.topics - set(partitions))
        if missing != self._missing.get(cluster_id, []):
            self._missing[cluster_id] = missing
            if missing:
                _log.warning("Cluster %r has no topic(s) %s; skipping them.", cluster_id, missing)
        pairs = [(t, p) for t, ps in partitions.items() for p in ps]
        latest = admin.list_offsets(pairs, "latest", _read_committed(cluster.properties))
        return latest, admin

    # ----------------------------------------------------------------- driver: offsets
    def _available(
        self, previous: Mapping[PartitionKey, int], position_of_new: Callable[[PartitionKey], int]
    ) -> dict[PartitionKey, int]:
        """The next offset up to which every assigned partition can be read now.

        Partitions of ``previous`` keep their offset when their cluster cannot be listed now or
        their topic is not listed (deleted); a partition seen for the first time enters at its
        starting position (``position_of_new``: -2 earliest, -1 latest, or an offset), so its
        first range is exact and checkpointed before any of its records is read. Clusters and
        topics that left the metadata leave the result.
        """
        end: dict[PartitionKey, int] = {}
        for cluster_id, cluster in self._assignment().items():
            carried = {
                k: v for k, v in previous.items() if k[0] == cluster_id and k[1] in cluster.topics
            }
            end.update(carried)
            try:
                latest, admin = self._list(cluster_id, cluster)
                new = {
                    key: position_of_new(key)
                    for key in ((cluster_id, t, p) for t, p in latest)
                    if key not in previous
                }
                earliest = self._earliest_for(admin, new)
            except KafkaClientError as exc:
                _log.warning(
                    "Keeping the offsets of cluster %r this micro-batch: %s", cluster_id, exc
                )
                continue
            for (topic, partition), offset in latest.items():
                key = (cluster_id, topic, partition)
                if key in new:
                    end[key] = self._concrete(new[key], key, latest, earliest)
                    _log.info("Partition %s/%s/%d starts at offset %d", *key, end[key])
                elif offset < previous[key]:
                    _log.warning(
                        "Latest offset %d of %s/%s/%d is below the checkpointed %d; holding.",
                        offset,
                        *key,
                        previous[key],
                    )
                else:
                    end[key] = offset
        return end

    def initialOffset(self) -> dict[str, Any]:
        """Resolve ``startingOffsets`` to concrete offsets (cached: Spark may ask twice)."""
        if self._initial is None:
            spec = self._options.starting_offsets
            fallback = self._discovery_position()
            positions = self._available({}, lambda key: spec.position(key, fallback))
            unknown = sorted(spec.topics() - {(c, t) for c, t, _ in positions})
            if unknown:
                _log.warning(
                    "startingOffsets names cluster/topic pairs that are not read now: %s",
                    ", ".join(f"{c}/{t}" for c, t in unknown),
                )
            self._initial = encode_offsets(positions)
        return self._initial

    def _discovery_position(self) -> int:
        return EARLIEST if self._options.discovery_starting_offsets == "earliest" else LATEST

    @staticmethod
    def _earliest_for(
        admin: ClusterAdmin, wanted: Mapping[PartitionKey, int]
    ) -> dict[tuple[str, int], int]:
        need = [(t, p) for (_, t, p), position in wanted.items() if position == EARLIEST]
        return admin.list_offsets(need, "earliest") if need else {}

    @staticmethod
    def _concrete(
        position: int,
        key: PartitionKey,
        latest: Mapping[tuple[str, int], int],
        earliest: Mapping[tuple[str, int], int],
    ) -> int:
        tp = (key[1], key[2])
        if position == EARLIEST:
            return earliest[tp]
        if position == LATEST:
            return latest[tp]
        return position

    def prepareForTriggerAvailableNow(self) -> None:
        """Record the latest offsets now: a ``Trigger.AvailableNow`` query reads up to them only.

        Partitions discovered later enter the offset at their starting position but are not read.
        """
        self._target = self._available({}, lambda _key: LATEST)
        _log.info("Trigger.AvailableNow reads up to %s", encode_offsets(self._target))

    def latestOffset(self, start: dict[str, Any], limit: Any = None) -> dict[str, Any]:
        """Latest offsets of every assigned partition, reconciled with the current metadata.

        A cluster, topic or partition seen for the first time enters the offset at its starting
        position (``discoveryStartingOffsets``), so its first range is exact and checkpointed.
        Clusters and topics removed from the metadata leave the offset. With
        ``Trigger.AvailableNow`` no partition goes past the offsets recorded when the query
        started.
        """
        previous = decode_offsets(start)
        fallback = self._discovery_position()
        available = self._available(previous, lambda _key: fallback)
        self._latest = encode_offsets(available)
        end = dict(available)
        if self._target is not None:
            target = self._target
            for key, offset in available.items():
                if key in target:
                    end[key] = max(min(offset, target[key]), previous.get(key, 0))
                else:  # discovered after the query started: enters, is not read
                    end[key] = previous.get(key, offset)
        return encode_offsets(end)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """The offsets available at the last :meth:`latestOffset` call (ids and offsets only)."""
        return self._latest

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        """Plan the exact ranges between two offsets into few, large tasks."""
        ranges = offset_ranges(decode_offsets(start), decode_offsets(end))
        if not ranges:
            return []
        assignment = self._assignment(refresh=False)  # the metadata latestOffset planned with
        unreadable = sorted({r.cluster for r in ranges if r.cluster not in assignment})
        if unreadable:
            _log.warning(
                "Clusters %s are no longer in the metadata; their pending ranges are not read.",
                unreadable,
            )
            ranges = [r for r in ranges if r.cluster in assignment]
        settings = ReadSettings(
            poll_timeout_ms=self._options.poll_timeout_ms,
            cache_timeout_ms=self._options.consumer_cache_timeout_ms,
            live_clusters=frozenset(assignment),
        )
        properties = {c: a.properties for c, a in assignment.items()}
        return plan_tasks(ranges, properties, settings)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: offsets live in Spark's checkpoint."""

    # ----------------------------------------------------------------- executors
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Read one planned task as Arrow record batches."""
        if not isinstance(partition, ReadTask):
            raise TypeError(f"unexpected input partition {partition!r}")
        return read_task(partition)
