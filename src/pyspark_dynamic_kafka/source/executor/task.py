"""The driver -> executor contract: what one Spark task carries to read its records.

The driver plans (:mod:`~pyspark_dynamic_kafka.source.driver.task_packing`) and Spark pickles each
:class:`ReadTask` to an executor, where
:func:`~pyspark_dynamic_kafka.source.executor.read.read_task` reads
it. A task holds exact offset ranges, each range's cluster client properties and the few settings
the executor needs: never the metadata, never the source options (executors do not re-parse them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pyspark.sql.datasource import InputPartition

from pyspark_dynamic_kafka.engines.choice import PYTHON
from pyspark_dynamic_kafka.frozen import FrozenMapping
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.source.schema import AvroColumns

__all__ = ["OffsetRange", "ReadSettings", "ReadTask"]


@dataclass(frozen=True)
class OffsetRange:
    """Records [start, end) of one partition of one topic on one cluster."""

    cluster: str
    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        """Number of offsets in the range."""
        return self.end - self.start


@dataclass(frozen=True)
class ReadSettings:
    """Executor-side settings a task carries (options are never re-parsed on executors).

    Attributes
    ----------
    poll_timeout_ms:
        How long to wait for the records of a range before failing.
    cache_timeout_ms:
        Idle time after which a pooled consumer is closed.
    live_clusters:
        Clusters present in this micro-batch; pooled consumers of other clusters are closed.
    fail_on_data_loss:
        Whether records of a range that are gone fail the task (else: warning, skip them).
    include_headers:
        Whether to emit the ``headers`` column.
    generation:
        Pooled consumers of another generation are not reused: the driver bumps it after a
        topic was deleted or recreated under the query.
    engines:
        Cluster -> the engine that reads it, ``direct``, ``librdkafka`` or ``python``: the
        driver's decision (:mod:`~pyspark_dynamic_kafka.engines.choice`); a cluster it does not
        name is read with the Python reader.
    avro:
        The Avro key and value columns (``keyFormat``/``valueFormat=avro``), decoded as the
        range reader reads them (:mod:`~pyspark_dynamic_kafka.source.executor.avro_columns`;
        the compiled core's, inside its read); the readers then
        read headers (``include_headers``) whether the rows keep them or not.
    """

    poll_timeout_ms: int
    cache_timeout_ms: int
    live_clusters: frozenset[str]
    fail_on_data_loss: bool = True
    include_headers: bool = False
    generation: int = 0
    engines: FrozenMapping[str] = field(default_factory=FrozenMapping)
    avro: AvroColumns | None = None

    def engine(self, cluster_id: str) -> str:
        """The engine the driver planned for ``cluster_id``."""
        return self.engines.get(cluster_id, PYTHON)


class ReadTask(InputPartition):  # type: ignore[misc]
    """One Spark task: ranges (grouped by cluster) and the client properties to read them.

    Parameters
    ----------
    ranges:
        Exact ranges to read.
    properties:
        Client properties for each cluster named by ``ranges``.
    settings:
        Read settings.
    """

    def __init__(
        self,
        ranges: tuple[OffsetRange, ...],
        properties: Mapping[str, FrozenProperties],
        settings: ReadSettings,
    ) -> None:
        self.ranges = ranges
        self.properties = dict(properties)
        self.settings = settings

    def by_cluster(self) -> dict[str, list[OffsetRange]]:
        """The ranges grouped by cluster id, in id order."""
        groups: dict[str, list[OffsetRange]] = {}
        for r in sorted(self.ranges, key=lambda r: (r.cluster, r.topic, r.partition)):
            groups.setdefault(r.cluster, []).append(r)
        return groups

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{r.cluster}/{r.topic}/{r.partition}[{r.start},{r.end})" for r in self.ranges[:4]
        )
        more = f", +{len(self.ranges) - 4} more" if len(self.ranges) > 4 else ""
        return f"ReadTask({shown}{more})"
