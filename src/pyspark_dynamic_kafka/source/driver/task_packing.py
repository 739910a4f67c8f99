"""(start, end) offsets -> Spark input partitions: exact ranges packed into few, large tasks.

By default whole ranges are packed (largest first, into the least-loaded task) into as few tasks
as the volume needs: one while a micro-batch is small, at least two from
:data:`SPLIT_FROM_RECORDS` on. With ``minPartitions`` or ``maxRecordsPerPartition`` ranges
may be cut: the ranges are laid end to end (cluster, topic, partition order) and cut into equal
shares, so no task exceeds the cap, there are at least ``minPartitions`` tasks, and small ranges
still share a task instead of costing one each.
"""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Iterable, Mapping

from pyspark_dynamic_kafka.engines.choice import read_engines
from pyspark_dynamic_kafka.frozen import FrozenMapping
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.offset_spec import PartitionKey
from pyspark_dynamic_kafka.source.config.parsed import SourceOptions
from pyspark_dynamic_kafka.source.driver.went_back import TopicIds, range_begin
from pyspark_dynamic_kafka.source.executor.task import OffsetRange, ReadSettings, ReadTask
from pyspark_dynamic_kafka.source.schema import AvroColumns

__all__ = [
    "new_group_id",
    "offset_ranges",
    "pack_query_tasks",
    "pack_tasks",
    "read_paths",
    "task_properties",
]

#: Records one task aims to read; more tasks only when a micro-batch is larger than this.
TARGET_RECORDS_PER_TASK = 1_000_000
#: Tasks a micro-batch is spread over at least (when it has that many ranges and records).
MIN_TASKS = 2
#: Records from which a micro-batch is spread over :data:`MIN_TASKS` tasks; a smaller one is one
#: task. A Spark task of a Python source costs ~50-60 ms of Spark's own work on a loaded 2-core
#: machine (task launch to ``read()``, and after it); reading 50,000 records takes about as
#: long, so splitting fewer only adds a task (docs/benchmarks.md, "Latency of small
#: micro-batches").
SPLIT_FROM_RECORDS = 50_000


def task_properties(
    properties: Mapping[str, Mapping[str, str]], group_id: str
) -> dict[str, FrozenProperties]:
    """Each cluster's client properties for executors, with ``group.id`` set to ``group_id``
    unless the query (``kafka.group.id``) or the cluster's metadata sets one."""
    result: dict[str, FrozenProperties] = {}
    for cluster_id, props in properties.items():
        if "group.id" in props:
            result[cluster_id] = FrozenProperties(props)
        else:
            result[cluster_id] = FrozenProperties({**props, "group.id": group_id})
    return result


def offset_ranges(
    start: Mapping[PartitionKey, int],
    end: Mapping[PartitionKey, int],
    rewound: Mapping[PartitionKey, int] | None = None,
    ids: tuple[TopicIds, TopicIds] = ({}, {}),
) -> list[OffsetRange]:
    """Non-empty ranges for every partition of ``end``.

    A partition absent from ``start`` first appears in an offset at its starting position, so it
    contributes nothing here. A partition whose offsets went back (end below start) is skipped;
    with ``rewound``, a partition that lost records begins where
    :func:`~pyspark_dynamic_kafka.source.driver.went_back.range_begin` says, by the topic ids of
    ``start`` and ``end`` (``ids``): a recreated topic (or, without ids, an end that went back)
    at its rewound start (the earliest offset available when the loss was seen; 0 when unknown,
    the executor then skips what is gone), a truncated log at its end.
    """
    ranges = []
    for key in sorted(end):
        begin = start.get(key)
        if begin is None:
            continue
        if rewound is not None:
            begin = range_begin(key, begin, end[key], ids, rewound)
        if end[key] <= begin:
            continue
        ranges.append(OffsetRange(key[0], key[1], key[2], begin, end[key]))
    return ranges


def pack_tasks(
    ranges: Iterable[OffsetRange],
    properties: Mapping[str, FrozenProperties],
    settings: ReadSettings,
    target_records: int = TARGET_RECORDS_PER_TASK,
    min_tasks: int = MIN_TASKS,
    *,
    min_partitions: int | None = None,
    max_records_per_partition: int | None = None,
) -> list[ReadTask]:
    """Pack ranges into tasks: as few as the volume needs, balanced by record count.

    Without ``min_partitions`` and ``max_records_per_partition`` the task count is
    ``ceil(total / target_records)``, at least ``min_tasks`` from :data:`SPLIT_FROM_RECORDS`
    records on (one task below), at most one per range; ranges stay
    whole and are assigned largest first to the least-loaded task. With either option ranges are
    cut (see the module docstring): ``max(min_partitions, ceil(total / max_records_per_partition))``
    tasks (never more than there are records), each at most ``max_records_per_partition`` long.
    """
    todo = [r for r in ranges if r.size > 0]
    if not todo:
        return []
    if min_partitions is None and max_records_per_partition is None:
        bins = _pack_whole(todo, target_records, min_tasks)
    else:
        total = sum(r.size for r in todo)
        cap = max_records_per_partition or target_records
        count = max(min_partitions or 1, -(-total // cap))
        bins = _cut(todo, min(count, total))
    tasks = []
    for chunk in bins:
        clusters = {r.cluster for r in chunk}
        tasks.append(ReadTask(tuple(chunk), {c: properties[c] for c in sorted(clusters)}, settings))
    return tasks


def _pack_whole(
    ranges: list[OffsetRange], target_records: int, min_tasks: int
) -> list[list[OffsetRange]]:
    todo = sorted(ranges, key=lambda r: (-r.size, r.cluster, r.topic, r.partition))
    total = sum(r.size for r in todo)
    floor = min_tasks if total >= SPLIT_FROM_RECORDS else 1
    count = max(floor, -(-total // max(1, target_records)))
    count = min(count, len(todo))
    heap: list[tuple[int, int]] = [(0, i) for i in range(count)]
    bins: list[list[OffsetRange]] = [[] for _ in range(count)]
    for r in todo:
        load, index = heapq.heappop(heap)
        bins[index].append(r)
        heapq.heappush(heap, (load + r.size, index))
    return bins


def _cut(ranges: list[OffsetRange], count: int) -> list[list[OffsetRange]]:
    """Lay the ranges end to end and cut them into ``count`` shares differing by at most one."""
    todo = sorted(ranges, key=lambda r: (r.cluster, r.topic, r.partition, r.start))
    total = sum(r.size for r in todo)
    quota, extra = divmod(total, count)
    shares = [quota + (1 if i < extra else 0) for i in range(count)]
    bins: list[list[OffsetRange]] = [[] for _ in range(count)]
    index, room = 0, shares[0]
    for r in todo:
        start = r.start
        while start < r.end:
            if room == 0:
                index += 1
                room = shares[index]
            take = min(room, r.end - start)
            bins[index].append(OffsetRange(r.cluster, r.topic, r.partition, start, start + take))
            start += take
            room -= take
    return bins


def new_group_id(options: SourceOptions) -> str:
    """A ``group.id`` of the query's own: ``groupIdPrefix`` and a unique suffix, as in Spark."""
    return f"{options.group_id_prefix}-{uuid.uuid4().hex}"


def read_paths(
    options: SourceOptions, properties: Mapping[str, Mapping[str, str]], group_id: str
) -> dict[str, str]:
    """Cluster -> the engine that reads it (``direct``, ``librdkafka`` or ``python``), decided
    by :func:`~pyspark_dynamic_kafka.engines.choice.read_engine` on the properties tasks carry.

    Raises
    ------
    OptionsError
        With ``reader=native``, when the compiled core cannot read a cluster.
    """
    carried = task_properties(properties, group_id)
    return {c: e.name for c, e in read_engines(options.reader, carried).items()}


def pack_query_tasks(
    ranges: Iterable[OffsetRange],
    properties: Mapping[str, Mapping[str, str]],
    options: SourceOptions,
    group_id: str,
    generation: int = 0,
    avro: AvroColumns | None = None,
) -> list[ReadTask]:
    """Plan a batch read's or a micro-batch's ranges with the query's read settings.

    Parameters
    ----------
    ranges:
        Exact ranges to read.
    properties:
        Client properties of every cluster in the metadata (its clusters are the live ones).
    options:
        The query's options (timeouts, data loss, headers, splitting).
    group_id:
        The query's ``group.id``, used unless the cluster or ``kafka.group.id`` sets one.
    generation:
        Consumer generation (see :class:`ReadSettings`).
    avro:
        The query's Avro columns, with their reader schemas resolved
        (:mod:`~pyspark_dynamic_kafka.source.driver.reader_schemas`).
    """
    carried = task_properties(properties, group_id)
    settings = ReadSettings(
        poll_timeout_ms=options.poll_timeout_ms,
        cache_timeout_ms=options.consumer_cache_timeout_ms,
        live_clusters=frozenset(properties),
        fail_on_data_loss=options.fail_on_data_loss,
        include_headers=options.include_headers or avro is not None,
        generation=generation,
        engines=FrozenMapping(read_paths(options, properties, group_id)),
        avro=avro,
    )
    return pack_tasks(
        ranges,
        carried,
        settings,
        min_partitions=options.min_partitions,
        max_records_per_partition=options.max_records_per_partition,
    )
