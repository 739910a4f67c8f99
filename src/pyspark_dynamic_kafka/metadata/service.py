"""The protocol every Kafka metadata service implements."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol, runtime_checkable

from pyspark_dynamic_kafka.metadata.model import KafkaStream

__all__ = ["KafkaMetadataService"]


@runtime_checkable
class KafkaMetadataService(Protocol):
    """Where stream ids are resolved to clusters, topics and client properties.

    Implementations are called on the Spark driver only. Each call returns a fresh snapshot;
    a service that cannot answer raises :class:`~pyspark_dynamic_kafka.errors.MetadataError`
    (never an empty result standing for "everything was removed").
    """

    def get_all_streams(self) -> frozenset[KafkaStream]:
        """Return every stream the service knows."""
        ...

    def describe_streams(self, stream_ids: Iterable[str]) -> Mapping[str, KafkaStream]:
        """Return the known streams among ``stream_ids``, keyed by id; unknown ids are absent."""
        ...

    def is_cluster_active(self, cluster_id: str) -> bool:
        """Return whether ``cluster_id`` is an active cluster."""
        ...

    def close(self) -> None:
        """Release any resources (connections, files)."""
        ...
