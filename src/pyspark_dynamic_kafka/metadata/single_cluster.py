"""Metadata of one cluster: each of its topics is a stream named after the topic."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pyspark_dynamic_kafka.errors import (
    KafkaClientError,
    MetadataError,
    MetadataValidationError,
    OptionsError,
)
from pyspark_dynamic_kafka.kafka.admin import ClusterAdmin
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.metadata.model import ClusterMetadata, KafkaStream
from pyspark_dynamic_kafka.optionspec import OptionSpec, integer, nonempty, raw, service_options

__all__ = [
    "DEFAULT_CLUSTER_ID",
    "DEFAULT_REQUEST_TIMEOUT_MS",
    "INTERNAL_TOPIC_PREFIX",
    "OPTIONS",
    "SingleClusterMetadataService",
]

#: Cluster id used when none is given.
DEFAULT_CLUSTER_ID = "kafka"
#: Timeout of one topic listing, in milliseconds.
DEFAULT_REQUEST_TIMEOUT_MS = 30_000
#: Topics whose name starts with this prefix are internal (``__consumer_offsets``, ...).
INTERNAL_TOPIC_PREFIX = "__"
#: The options of ``metadataService=singleCluster``; every other ``metadataService.<property>`` is
#: a client property of the cluster.
OPTIONS = service_options(
    "singleCluster",
    OptionSpec(
        "clusterId", nonempty, DEFAULT_CLUSTER_ID, "The id of the cluster.", attr="cluster_id"
    ),
    OptionSpec(
        "requestTimeoutMs",
        integer(1),
        str(DEFAULT_REQUEST_TIMEOUT_MS),
        "Timeout of one topic listing, in milliseconds (a positive number).",
        attr="request_timeout_ms",
    ),
    OptionSpec(
        "bootstrap.servers",
        raw,
        None,
        "The cluster's host:port list. Every other metadataService.<property> is a client "
        "property of the cluster, except metadataService.clusterId and "
        "metadataService.requestTimeoutMs.",
        required=True,
    ),
)
_FIX = (
    "Check that the brokers are reachable and that the client properties (options "
    "metadataService.<property>: bootstrap.servers, security.protocol, sasl.*, ssl.*) are right."
)


class SingleClusterMetadataService:
    """Every topic of one cluster is a stream with the topic's name; the cluster is active.

    Topics whose name starts with ``__`` (internal topics) are left out. The topics are listed
    through :class:`~pyspark_dynamic_kafka.kafka.admin.ClusterAdmin`, whose client is created at
    the first call; a failure is a :class:`~pyspark_dynamic_kafka.errors.MetadataError`.

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
        self._admin = ClusterAdmin(
            cluster_id,
            props,
            request_timeout_ms,
            fix=_FIX,
            query_wide=props,
            option_prefix=OPTIONS.prefix,
        )

    @property
    def cluster_id(self) -> str:
        """The id of the cluster."""
        return self._cluster_id

    def _list_topics(self) -> list[str]:
        try:
            topics = self._admin.topic_names()
        except KafkaClientError as exc:
            if not exc.retryable:  # its properties, options of the query: a retry cannot help
                raise OptionsError(f"singleCluster metadata service: {exc}") from None
            # A MetadataError, so that the source counts it as a discovery failure.
            raise MetadataError(f"singleCluster metadata service: {exc}") from None
        return [name for name in topics if not name.startswith(INTERNAL_TOPIC_PREFIX)]

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
        self._admin.close()

    def __repr__(self) -> str:
        return (
            f"SingleClusterMetadataService(cluster_id={self._cluster_id!r}, "
            f"properties={self._properties!r})"
        )
