"""Metadata of one cluster: each of its topics is a stream named after the topic."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from pyspark_dynamic_kafka.errors import MetadataError, MetadataValidationError
from pyspark_dynamic_kafka.kafka.config import FrozenProperties, is_secret_key, redact
from pyspark_dynamic_kafka.metadata.model import ClusterMetadata, KafkaStream

__all__ = [
    "DEFAULT_CLUSTER_ID",
    "DEFAULT_REQUEST_TIMEOUT_MS",
    "INTERNAL_TOPIC_PREFIX",
    "SingleClusterMetadataService",
]

#: Cluster id used when none is given.
DEFAULT_CLUSTER_ID = "kafka"
#: Timeout of one topic listing, in milliseconds.
DEFAULT_REQUEST_TIMEOUT_MS = 30_000
#: Topics whose name starts with this prefix are internal (``__consumer_offsets``, ...).
INTERNAL_TOPIC_PREFIX = "__"


class SingleClusterMetadataService:
    """Every topic of one cluster is a stream with the topic's name; the cluster is active.

    Topics whose name starts with ``__`` (internal topics) are left out. The topics are listed
    with a Kafka admin client created at the first call.

    Parameters
    ----------
    cluster_id:
        The id of the cluster, e.g. ``kafka``.
    properties:
        Client properties of the cluster; ``bootstrap.servers`` is required.
    request_timeout_ms:
        Timeout of one topic listing.

    Raises
    ------
    MetadataValidationError
        When ``cluster_id`` is empty, ``bootstrap.servers`` is missing or the timeout is not
        positive.
    """

    def __init__(
        self,
        cluster_id: str,
        properties: Mapping[str, str],
        request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
    ) -> None:
        if not isinstance(cluster_id, str) or not cluster_id.strip():
            raise MetadataValidationError(
                f"SingleClusterMetadataService: cluster_id must be a non-empty string, got "
                f"{cluster_id!r}."
            )
        props = FrozenProperties(properties)
        if not props.get("bootstrap.servers", "").strip():
            raise MetadataValidationError(
                f"SingleClusterMetadataService: cluster {cluster_id!r} needs the client property "
                "'bootstrap.servers' (its host:port list)."
            )
        if (
            isinstance(request_timeout_ms, bool)
            or not isinstance(request_timeout_ms, int)
            or request_timeout_ms <= 0
        ):
            raise MetadataValidationError(
                "SingleClusterMetadataService: request_timeout_ms must be a positive integer "
                f"(milliseconds), got {request_timeout_ms!r}."
            )
        self._cluster_id = cluster_id
        self._properties = props
        self._timeout_s = request_timeout_ms / 1000.0
        self._client: Any = None

    @property
    def cluster_id(self) -> str:
        """The id of the cluster."""
        return self._cluster_id

    def _describe_cluster(self) -> str:
        servers = self._properties["bootstrap.servers"]
        return f"cluster {self._cluster_id!r} (bootstrap.servers={servers})"

    def _safe(self, exc: BaseException) -> str:
        secrets = (v for k, v in self._properties.items() if is_secret_key(k))
        return redact(str(exc), secrets)

    def _admin(self) -> Any:
        if self._client is None:
            try:
                config: dict[str, str | int | float | bool] = dict(self._properties.to_dict())
                self._client = AdminClient(config)
            except (KafkaException, ValueError, TypeError) as exc:
                # ``from None``: the original exception may quote a property value.
                raise MetadataError(
                    f"singleCluster metadata service: cannot create a Kafka admin client for "
                    f"{self._describe_cluster()}: {self._safe(exc)}. Fix the client properties "
                    "(options metadataService.<property>)."
                ) from None
        return self._client

    def _list_topics(self) -> list[str]:
        try:
            metadata = self._admin().list_topics(timeout=self._timeout_s)
        except KafkaException as exc:
            raise MetadataError(
                f"singleCluster metadata service: could not list the topics of "
                f"{self._describe_cluster()} within {self._timeout_s:g} s: {self._safe(exc)}. "
                "Check that the brokers are reachable and that the client properties "
                "(security.protocol, sasl.*, ssl.*) are right."
            ) from None
        return sorted(
            str(name) for name in metadata.topics if not str(name).startswith(INTERNAL_TOPIC_PREFIX)
        )

    def _stream(self, topic: str) -> KafkaStream:
        return KafkaStream(
            topic, {self._cluster_id: ClusterMetadata(frozenset([topic]), self._properties)}
        )

    def get_all_streams(self) -> frozenset[KafkaStream]:
        """Return one stream per non-internal topic of the cluster.

        Raises
        ------
        MetadataError
            When the cluster cannot be reached in time.
        """
        return frozenset(self._stream(topic) for topic in self._list_topics())

    def describe_streams(self, stream_ids: Iterable[str]) -> Mapping[str, KafkaStream]:
        """Return the streams among ``stream_ids`` that are topics of the cluster."""
        topics = set(self._list_topics())
        return {sid: self._stream(sid) for sid in stream_ids if sid in topics}

    def is_cluster_active(self, cluster_id: str) -> bool:
        """Return whether ``cluster_id`` is this service's cluster."""
        return cluster_id == self._cluster_id

    def close(self) -> None:
        """Drop the admin client (librdkafka closes its connections when it is destroyed)."""
        self._client = None

    def __repr__(self) -> str:
        return (
            f"SingleClusterMetadataService(cluster_id={self._cluster_id!r}, "
            f"properties={self._properties!r})"
        )
