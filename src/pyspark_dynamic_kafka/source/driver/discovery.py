"""Driver side: poll the metadata service, resolve the subscription, count discovery failures."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pyspark_dynamic_kafka import errors
from pyspark_dynamic_kafka.events import log_event
from pyspark_dynamic_kafka.kafka.config import FrozenProperties, merge_client_properties
from pyspark_dynamic_kafka.metadata.factory import create_metadata_service
from pyspark_dynamic_kafka.metadata.model import ClusterMetadata, KafkaStream, StartingPosition
from pyspark_dynamic_kafka.metadata.service import KafkaMetadataService
from pyspark_dynamic_kafka.source.config.parsed import SourceOptions

__all__ = ["ClusterSubscription", "Discovery", "Subscription", "resolve_subscription"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClusterSubscription:
    """What the query reads from one cluster.

    Attributes
    ----------
    properties:
        Client properties: the query's ``kafka.*`` merged under the cluster's own.
    topics:
        Topics of every subscribed stream on this cluster (each read once).
    starting:
        (topic, position) for the topics whose metadata entry gives a ``startingOffsets``: where
        they start when the query first reads this cluster. Sorted by topic.
    """

    properties: FrozenProperties
    topics: frozenset[str]
    starting: tuple[tuple[str, StartingPosition], ...] = ()

    def starting_position(self, topic: str) -> StartingPosition | None:
        """The metadata's starting position of ``topic`` on this cluster, if any."""
        for name, position in self.starting:
            if name == topic:
                return position
        return None


#: cluster id -> what is read there
Subscription = Mapping[str, ClusterSubscription]


def resolve_subscription(
    streams: Mapping[str, KafkaStream],
    is_active: Callable[[str], bool],
    kafka_properties: Mapping[str, str],
) -> dict[str, ClusterSubscription]:
    """Merge the subscribed streams into one subscription (the topics read) per active cluster.

    A (cluster, topic) reachable through several streams is read once. When two streams give
    one cluster different properties, or one topic different starting positions, the stream first
    in id order wins and a warning is logged.
    """
    topics: dict[str, set[str]] = {}
    properties: dict[str, Mapping[str, str]] = {}
    starting: dict[str, dict[str, StartingPosition]] = {}
    active: dict[str, bool] = {}
    for stream_id in sorted(streams):
        for cluster_id, cluster in streams[stream_id].clusters.items():
            if cluster_id not in active:
                active[cluster_id] = is_active(cluster_id)
            if not active[cluster_id]:
                continue
            if cluster_id in properties and properties[cluster_id] != cluster.properties:
                _log.warning(
                    "Streams give cluster %r different client properties; using those of the "
                    "first stream in id order (stream %r is ignored for properties).",
                    cluster_id,
                    stream_id,
                )
            properties.setdefault(cluster_id, cluster.properties)
            topics.setdefault(cluster_id, set()).update(cluster.topics)
            if cluster.starting_position is not None:
                _merge_starting(starting.setdefault(cluster_id, {}), cluster_id, stream_id, cluster)
    return {
        cluster_id: ClusterSubscription(
            merge_client_properties(kafka_properties, properties[cluster_id], cluster_id),
            frozenset(topics[cluster_id]),
            tuple(sorted(starting.get(cluster_id, {}).items())),
        )
        for cluster_id in sorted(topics)
        if topics[cluster_id]
    }


def _merge_starting(
    known: dict[str, StartingPosition], cluster_id: str, stream_id: str, cluster: ClusterMetadata
) -> None:
    position = cluster.starting_position
    if position is None:
        return
    for topic in sorted(cluster.topics):
        previous = known.setdefault(topic, position)
        if previous != position:
            _log.warning(
                "Streams give topic %r of cluster %r different startingOffsets; using that of "
                "the first stream in id order (stream %r is ignored for it).",
                topic,
                cluster_id,
                stream_id,
            )


class Discovery:
    """Re-reads metadata on the configured interval and keeps the last good snapshot.

    Parameters
    ----------
    options:
        Parsed source options.
    clock:
        Monotonic clock in seconds (tests may pass their own).
    wall:
        Wall clock in seconds since the epoch, for :attr:`last_success_ms`.
    """

    def __init__(
        self,
        options: SourceOptions,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ):
        self._options = options
        self._clock = clock
        self._wall = wall
        self._service: KafkaMetadataService | None = None
        self._snapshot: dict[str, ClusterSubscription] | None = None
        self._last_attempt: float | None = None
        self._failures = 0
        self._last_success_ms: int | None = None

    @property
    def failures(self) -> int:
        """Consecutive discovery failures since the last success."""
        return self._failures

    @property
    def last_success_ms(self) -> int | None:
        """When metadata was last read successfully (epoch ms), if ever."""
        return self._last_success_ms

    @property
    def snapshot(self) -> Subscription | None:
        """The last good subscription, if any."""
        return self._snapshot

    def service(self) -> KafkaMetadataService:
        """The metadata service, created on first use."""
        if self._service is None:
            self._service = create_metadata_service(
                self._options.metadata_service, self._options.metadata_options
            )
        return self._service

    def _due(self) -> bool:
        if self._snapshot is None or self._last_attempt is None:
            return True
        interval = self._options.discovery_interval_ms
        if interval < 0:
            return False
        return (self._clock() - self._last_attempt) * 1000.0 >= interval

    def current(self) -> Subscription:
        """Return the subscription, re-reading metadata first when the interval has elapsed.

        Raises
        ------
        MetadataError
            When the first discovery fails, or failures exceed the threshold.
        """
        if self._due():
            self._last_attempt = self._clock()
            self._discover()
        if self._snapshot is None:  # pragma: no cover - _discover raises instead
            raise errors.DiscoveryError("No metadata snapshot is available.")
        return self._snapshot

    def _discover(self) -> None:
        first = self._snapshot is None
        try:
            snapshot = self._resolve(first)
        except Exception as exc:  # a user's service may raise anything
            if isinstance(exc, errors.DynamicKafkaError) and not exc.retryable:
                raise  # bad options, refused credentials: a retry cannot help
            self._on_failure(exc, first)
            return
        if self._snapshot is not None and snapshot != self._snapshot:
            _log.info(
                "Metadata changed for %s: clusters %s -> %s",
                self._options.subscription_description(),
                sorted(self._snapshot),
                sorted(snapshot),
            )
        self._snapshot = snapshot
        self._failures = 0
        self._last_success_ms = int(self._wall() * 1000)

    def _on_failure(self, exc: BaseException, first: bool) -> None:
        if first:
            if isinstance(exc, errors.MetadataError):
                raise exc
            raise errors.MetadataError(f"Metadata discovery failed at query start: {exc}") from exc
        self._failures += 1
        threshold = self._options.discovery_failure_threshold
        if self._failures > threshold:
            raise errors.DiscoveryError(
                f"Metadata discovery failed {self._failures} times in a row (threshold "
                f"metadataDiscoveryFailureThreshold={threshold}); last error: {exc}. Fix the "
                "metadata service, then restart the query from its checkpoint."
            ) from exc
        log_event(
            _log,
            logging.WARNING,
            "discovery_failure",
            subscription=self._options.subscription_description(),
            consecutiveFailures=self._failures,
            threshold=threshold,
            message=f"Metadata discovery failed ({self._failures} of {threshold} tolerated); "
            f"keeping the last good metadata: {exc}",
        )

    def _resolve(self, first: bool) -> dict[str, ClusterSubscription]:
        service = self.service()
        options = self._options
        if options.stream_ids is not None:
            streams = dict(service.describe_streams(options.stream_ids))
            missing = [sid for sid in options.stream_ids if sid not in streams]
            if missing and first:
                known = sorted(s.stream_id for s in service.get_all_streams())
                raise errors.OptionsError(
                    f"Option 'streamIds' names unknown stream id(s) {', '.join(missing)} "
                    f"(value {','.join(options.stream_ids)!r}). Known stream ids: "
                    f"{', '.join(known) or 'none'}."
                )
            if missing:
                _log.warning(
                    "Stream id(s) %s are no longer in the metadata; their clusters and topics "
                    "are no longer read.",
                    ", ".join(missing),
                )
        else:
            pattern = options.stream_pattern
            streams = {
                s.stream_id: s
                for s in service.get_all_streams()
                if pattern is not None and pattern.search(s.stream_id)
            }
        return resolve_subscription(streams, service.is_cluster_active, options.kafka_properties)

    def close(self) -> None:
        """Close the metadata service."""
        if self._service is not None:
            self._service.close()
            self._service = None
