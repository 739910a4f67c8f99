"""Metadata held in memory: for tests, notebooks and services built in Python."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pyspark_dynamic_kafka.errors import MetadataValidationError
from pyspark_dynamic_kafka.metadata.model import KafkaStream

__all__ = ["InMemoryMetadataService"]


@dataclass(frozen=True)
class _Snapshot:
    streams: Mapping[str, KafkaStream]
    active_clusters: frozenset[str]


def _snapshot(streams: Iterable[KafkaStream], active_clusters: Iterable[str] | None) -> _Snapshot:
    by_id: dict[str, KafkaStream] = {}
    for stream in streams:
        if not isinstance(stream, KafkaStream):
            raise MetadataValidationError(
                f"InMemoryMetadataService: streams must be KafkaStream objects, got "
                f"{type(stream).__name__}."
            )
        if stream.stream_id in by_id and by_id[stream.stream_id] != stream:
            raise MetadataValidationError(
                f"InMemoryMetadataService: stream id {stream.stream_id!r} is given twice with "
                "different clusters; give each stream id once."
            )
        by_id[stream.stream_id] = stream
    if active_clusters is None:
        active = frozenset(cid for stream in by_id.values() for cid in stream.clusters)
    elif isinstance(active_clusters, str):
        raise MetadataValidationError(
            f"InMemoryMetadataService: active_clusters must be an iterable of cluster ids, got "
            f"the string {active_clusters!r}; wrap it in a list."
        )
    else:
        active = frozenset(active_clusters)
    return _Snapshot(by_id, active)


class InMemoryMetadataService:
    """A metadata service answering from streams held in memory.

    Parameters
    ----------
    streams:
        The streams; a stream id may appear once (or several times with identical content).
    active_clusters:
        The active cluster ids; by default every cluster named by ``streams``.

    Notes
    -----
    :meth:`set_streams` replaces the content with a single attribute assignment, so a reader in
    another thread sees either the old or the new content, never a mix of both within one call.
    """

    def __init__(
        self, streams: Iterable[KafkaStream], active_clusters: Iterable[str] | None = None
    ) -> None:
        self._snapshot = _snapshot(streams, active_clusters)

    def set_streams(
        self, streams: Iterable[KafkaStream], active_clusters: Iterable[str] | None = None
    ) -> None:
        """Replace every stream (and the active clusters, by default those of ``streams``)."""
        self._snapshot = _snapshot(streams, active_clusters)

    def get_all_streams(self) -> frozenset[KafkaStream]:
        """Return every stream."""
        return frozenset(self._snapshot.streams.values())

    def describe_streams(self, stream_ids: Iterable[str]) -> Mapping[str, KafkaStream]:
        """Return the known streams among ``stream_ids``; unknown ids are absent."""
        streams = self._snapshot.streams
        return {sid: streams[sid] for sid in stream_ids if sid in streams}

    def is_cluster_active(self, cluster_id: str) -> bool:
        """Return whether ``cluster_id`` is active."""
        return cluster_id in self._snapshot.active_clusters

    def close(self) -> None:
        """Nothing to release."""

    def __repr__(self) -> str:
        snapshot = self._snapshot
        return (
            f"InMemoryMetadataService(streams={sorted(snapshot.streams)!r}, "
            f"active_clusters={sorted(snapshot.active_clusters)!r})"
        )
