"""The metadata model: a logical stream mapped to physical clusters and topics."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pyspark_dynamic_kafka.errors import MetadataValidationError
from pyspark_dynamic_kafka.frozen import FrozenMapping
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.offset_spec import Position, PositionKind
from pyspark_dynamic_kafka.registry.endpoint import RegistryEndpoint

__all__ = ["ClusterMetadata", "KafkaStream", "StartingPosition"]


class StartingPosition(Position):
    """A metadata entry's ``startingOffsets``: a
    :class:`~pyspark_dynamic_kafka.offset_spec.Position` of kind earliest, latest or timestamp.

    It is where a stream's topics on one cluster start when the query first reads that cluster;
    :mod:`pyspark_dynamic_kafka.source.driver.start_policy` says how it ranks among the query's
    options.

    Parameters
    ----------
    kind:
        ``"earliest"``, ``"latest"`` or ``"timestamp"`` (or the :class:`PositionKind`).
    timestamp_ms:
        Epoch milliseconds; set iff ``kind`` is ``"timestamp"``. A partition then starts at its
        first record whose timestamp is at or after it.
    """

    def __init__(self, kind: PositionKind | str, timestamp_ms: int | None = None) -> None:
        if kind not in _METADATA_KINDS:
            raise MetadataValidationError(
                f"StartingPosition.kind must be 'earliest', 'latest' or 'timestamp', got {kind!r}"
            )
        stamped = kind == PositionKind.TIMESTAMP
        if stamped != (timestamp_ms is not None) or (timestamp_ms or 0) < 0:
            raise MetadataValidationError(
                "StartingPosition.timestamp_ms must be set (epoch milliseconds >= 0) exactly when "
                f"kind is 'timestamp', got kind={str(kind)!r}, timestamp_ms={timestamp_ms!r}"
            )
        super().__init__(PositionKind(kind), timestamp_ms or 0)

    @property
    def timestamp_ms(self) -> int | None:
        """Epoch milliseconds of a ``timestamp`` position, else ``None``."""
        return self.value if self.kind == PositionKind.TIMESTAMP else None

    def to_document(self) -> str | dict[str, int]:
        """Return the value as written in a metadata document."""
        if self.kind == PositionKind.TIMESTAMP:
            return {"timestamp": self.value}
        return str(self.kind)

    def __repr__(self) -> str:
        stamp = f", {self.value}" if self.kind == PositionKind.TIMESTAMP else ""
        return f"StartingPosition({str(self.kind)!r}{stamp})"


_METADATA_KINDS = (PositionKind.EARLIEST, PositionKind.LATEST, PositionKind.TIMESTAMP)


@dataclass(frozen=True)
class ClusterMetadata:
    """The part of a stream that lives on one Kafka cluster.

    Parameters
    ----------
    topics:
        Topic names of the stream on this cluster.
    properties:
        librdkafka client properties for the cluster; must contain ``bootstrap.servers``.
        Secrets are masked in ``repr``.
    starting_position:
        Where these topics start when the query first reads this cluster (at query start or
        when the cluster appears through discovery); ``None`` leaves it to the query's options.
    write:
        Whether this cluster is the stream's write route (the entry's ``write: true``): where
        the ``dynamic_kafka`` sink produces the stream's records.
    """

    topics: frozenset[str]
    properties: Mapping[str, str] = field(default_factory=FrozenProperties)
    starting_position: StartingPosition | None = None
    write: bool = False

    def __post_init__(self) -> None:
        topics = self.topics
        if isinstance(topics, str) or not all(isinstance(t, str) and t for t in topics):
            raise MetadataValidationError(
                f"ClusterMetadata.topics must be a set of non-empty topic names, got {topics!r}"
            )
        object.__setattr__(self, "topics", frozenset(topics))
        if not isinstance(self.properties, FrozenProperties):
            object.__setattr__(self, "properties", FrozenProperties(self.properties))
        if not self.properties.get("bootstrap.servers"):
            raise MetadataValidationError(
                "ClusterMetadata.properties must contain 'bootstrap.servers' "
                "(the cluster's host:port list)"
            )
        if self.starting_position is not None and not isinstance(
            self.starting_position, StartingPosition
        ):
            raise MetadataValidationError(
                "ClusterMetadata.starting_position must be a StartingPosition or None, got "
                f"{type(self.starting_position).__name__}"
            )
        if not isinstance(self.write, bool):
            raise MetadataValidationError(
                f"ClusterMetadata.write must be True or False, got {self.write!r}"
            )

    @property
    def bootstrap_servers(self) -> str:
        """The cluster's ``bootstrap.servers`` property."""
        return self.properties["bootstrap.servers"]

    @property
    def registry(self) -> RegistryEndpoint | None:
        """The cluster's schema registry (its entry's ``schema.registry.*`` keys), if it names
        one (:class:`~pyspark_dynamic_kafka.registry.endpoint.RegistryEndpoint`)."""
        return RegistryEndpoint.of(self.properties)


@dataclass(frozen=True)
class KafkaStream:
    """A logical stream: an id and the clusters (with their topics) that carry it.

    Parameters
    ----------
    stream_id:
        The logical stream id, e.g. ``orders``.
    clusters:
        Cluster id to the stream's topics and the cluster's client properties.
    """

    stream_id: str
    clusters: Mapping[str, ClusterMetadata]

    def __post_init__(self) -> None:
        if not isinstance(self.stream_id, str) or not self.stream_id:
            raise MetadataValidationError(
                f"KafkaStream.stream_id must be a non-empty string, got {self.stream_id!r}"
            )
        for cluster_id, cluster in self.clusters.items():
            if not isinstance(cluster_id, str) or not cluster_id:
                raise MetadataValidationError(
                    f"stream {self.stream_id!r}: cluster ids must be non-empty strings, "
                    f"got {cluster_id!r}"
                )
            if not isinstance(cluster, ClusterMetadata):
                raise MetadataValidationError(
                    f"stream {self.stream_id!r}: cluster {cluster_id!r} must be a "
                    f"ClusterMetadata, got {type(cluster).__name__}"
                )
        if not isinstance(self.clusters, FrozenMapping):
            object.__setattr__(self, "clusters", FrozenMapping(self.clusters))
