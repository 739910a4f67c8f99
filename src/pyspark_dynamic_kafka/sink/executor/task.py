"""The driver -> executor contract of a write: :class:`WriteTask` in, :class:`WriteReport` out.

A task is built on the driver when a batch starts, with the route resolved there, and pickled to
every task (and retry) of that batch: executors never read metadata nor parse options.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql.datasource import WriterCommitMessage

from pyspark_dynamic_kafka.engines.choice import PYTHON
from pyspark_dynamic_kafka.kafka.config import (
    FrozenProperties,
    client_properties,
    merge_client_properties,
)
from pyspark_dynamic_kafka.sink.route import WriteRoute

__all__ = ["AvroTarget", "MarkerCluster", "TopicSchema", "WriteReport", "WriteTask"]


@dataclass(frozen=True)
class TopicSchema:
    """The writer schema of one topic's records and its id in the cluster's registry."""

    topic: str
    subject: str
    schema_id: int
    schema: str


@dataclass(frozen=True)
class AvroTarget:
    """How one side (``key`` or ``value``) of a batch's rows is written as Avro on its cluster.

    Parameters
    ----------
    side:
        ``key`` or ``value``: the column encoded.
    registry:
        The registry's URL(s) the ids are from, for messages.
    schemas:
        Each topic the batch may write, with its schema and id.
    """

    side: str
    registry: str
    schemas: tuple[TopicSchema, ...]

    def of(self, topic: str) -> TopicSchema:
        """The schema of ``topic``'s records."""
        for schema in self.schemas:
            if schema.topic == topic:
                return schema
        known = ", ".join(repr(s.topic) for s in self.schemas)
        raise KeyError(f"no {self.side} schema was resolved for topic {topic!r} (only {known})")


@dataclass(frozen=True)
class MarkerCluster:
    """A cluster the stream lists, where exactlyOnce progress markers are looked up.

    Parameters
    ----------
    cluster_id:
        The cluster.
    properties:
        Its client properties (the query's ``kafka.*`` under the cluster's own).
    topics:
        The stream's topics there, by name: markers are looked up on partition 0 of each
        (a task commits its marker on partition 0 of every topic of its route).
    """

    cluster_id: str
    properties: FrozenProperties
    topics: tuple[str, ...]


@dataclass(frozen=True)
class WriteTask:
    """What every task of one batch needs to produce its rows.

    Parameters
    ----------
    route:
        Where the batch goes (cluster, its properties, the stream's topics there).
    kafka_properties:
        The query's ``kafka.*`` producer properties; the cluster's own win over them.
    topic:
        The ``topic`` option (every row's topic), or ``None`` to read a ``topic`` column.
    flush_timeout_ms:
        How long the task waits for the cluster to acknowledge its records.
    exactly_once:
        Whether each task writes in one transaction with a progress marker.
    sink_id:
        exactlyOnce: the prefix of the transactional ids and progress groups.
    marker_clusters:
        exactlyOnce: every cluster of the stream, where a replay's markers are looked up.
    sink_id_takeover:
        exactlyOnce: the option ``sinkIdTakeover``: a newest marker of another streaming query
        is taken over (this query's micro-batches counted afresh) instead of failing the task.
    dedupe_headers:
        Whether every record carries its :class:`~pyspark_dynamic_kafka.sink.executor.produce.Stamp`
        headers (sink id, batch, Spark partition, sequence).
    engine:
        Who produces: ``direct`` (the compiled core's direct produce path),
        ``librdkafka`` (the compiled core's librdkafka producer) or ``python``
        (confluent-kafka), decided on the driver (:mod:`~pyspark_dynamic_kafka.engines.choice`).
    value_avro, key_avro:
        ``valueFormat=avro`` (``keyFormat``): each topic's writer schema and its id in the
        route's registry, resolved on the driver; ``None``: the column is written as it is.
    """

    route: WriteRoute
    kafka_properties: FrozenProperties = field(default_factory=FrozenProperties)
    topic: str | None = None
    flush_timeout_ms: int = 120_000
    exactly_once: bool = False
    sink_id: str | None = None
    marker_clusters: tuple[MarkerCluster, ...] = ()
    sink_id_takeover: bool = False
    dedupe_headers: bool = False
    engine: str = PYTHON
    value_avro: AvroTarget | None = None
    key_avro: AvroTarget | None = None

    def producer_properties(self) -> dict[str, str]:
        """The producer's client properties: query-wide, the cluster's, then the sink's own, with
        secret references resolved (now: a rotated password file is read again).

        Raises
        ------
        ClientPropertyError
            When a secret reference does not resolve.
        """
        cluster_id = self.route.cluster_id
        carried = merge_client_properties(self.kafka_properties, self.route.properties, cluster_id)
        merged = client_properties(carried, cluster_id)
        merged["enable.idempotence"] = "true"
        merged.setdefault("message.timeout.ms", str(self.flush_timeout_ms))
        # A keyed row with no partition goes where Spark's sink (the Java producer) puts it,
        # not where librdkafka's default (CRC32) would: murmur2, null keys spread at random.
        merged.setdefault("partitioner", "murmur2_random")
        return merged


@dataclass(frozen=True)
class WriteReport(WriterCommitMessage):  # type: ignore[misc]
    """What one task wrote: the commit message Spark hands the driver's ``commit``.

    Parameters
    ----------
    cluster_id:
        The cluster written to.
    rows:
        Topic to the number of records the cluster acknowledged.
    skipped:
        exactlyOnce: the task wrote nothing because its rows of this micro-batch were already
        committed (a retried task, a replayed micro-batch).
    topic_bytes:
        Topic to the key and value bytes of those records.
    query_id:
        The streaming query of the task (``None`` for a ``df.write``), for the write metrics.
    transaction_ms:
        exactlyOnce: milliseconds from opening the transaction to its commit (or the skip).
    """

    cluster_id: str
    rows: dict[str, int]
    skipped: bool = False
    topic_bytes: dict[str, int] = field(default_factory=dict)
    query_id: str | None = None
    transaction_ms: int = 0

    @property
    def bytes(self) -> int:
        """Key and value bytes of every record acknowledged."""
        return sum(self.topic_bytes.values())
