"""The metadata model: a logical stream mapped to physical clusters and topics."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from pyspark_dynamic_kafka.errors import MetadataValidationError
from pyspark_dynamic_kafka.frozen import FrozenMapping
from pyspark_dynamic_kafka.kafka.config import FrozenProperties

__all__ = ["ClusterMetadata", "KafkaStream", "StartingPosition"]


@dataclass(frozen=True)
class StartingPosition:
    """Where a stream's topics on one cluster start when the query first reads that cluster.

    Parameters
    ----------
    kind:
        ``"earliest"``, ``"latest"`` or ``"timestamp"``.
    timestamp_ms:
        Epoch milliseconds; set iff ``kind`` is ``"timestamp"``. A partition then starts at its
        first record whose timestamp is at or after it.
    """

    kind: Literal["earliest", "latest", "timestamp"]
    timestamp_ms: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("earliest", "latest", "timestamp"):
            raise MetadataValidationError(
                f"StartingPosition.kind must be 'earliest', 'latest' or 'timestamp', "
                f"got {self.kind!r}"
            )
        if (self.kind == "timestamp") != (self.timestamp_ms is not None):
            raise MetadataValidationError(
                "StartingPosition.timestamp_ms must be set exactly when kind is 'timestamp', "
                f"got kind={self.kind!r}, timestamp_ms={self.timestamp_ms!r}"
            )

    def to_document(self) -> str | dict[str, int]:
        """Return the value as written in a metadata document."""
        if self.timestamp_ms is not None:
            return {"timestamp": self.timestamp_ms}
        return self.kind


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
    """

    topics: frozenset[str]
    properties: Mapping[str, str] = field(default_factory=FrozenProperties)
    starting_position: StartingPosition | None = None

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

    @property
    def bootstrap_servers(self) -> str:
        """The cluster's ``bootstrap.servers`` property."""
        return self.properties["bootstrap.servers"]


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
