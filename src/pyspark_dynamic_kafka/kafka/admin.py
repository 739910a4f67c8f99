"""Driver-side listing of topics, partitions and offsets of one cluster, in few requests."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # OffsetSpec: not re-exported
    AdminClient,
    OffsetSpec,
)

from pyspark_dynamic_kafka.errors import KafkaClientError

__all__ = ["ClusterAdmin", "admin_config"]

_log = logging.getLogger(__name__)

# Keys that only make sense for consumers; librdkafka warns when an admin client gets them.
_CONSUMER_ONLY_PREFIXES = (
    "fetch.",
    "queued.",
    "enable.partition.eof",
    "enable.auto",
    "auto.",
    "group.",
    "isolation.level",
    "check.crcs",
    "partition.assignment",
    "session.timeout",
    "heartbeat.",
    "max.poll",
    "max.partition",
    "consume.",
)


def admin_config(properties: Mapping[str, str]) -> dict[str, str | int | float | bool]:
    """Client properties for an admin client: ``properties`` without consumer-only keys."""
    return {
        k: v
        for k, v in properties.items()
        if not any(k.startswith(prefix) for prefix in _CONSUMER_ONLY_PREFIXES)
    }


class ClusterAdmin:
    """Lists topics, partitions and offsets of one cluster; the client is created lazily.

    Parameters
    ----------
    cluster_id:
        The cluster's id, used in messages.
    properties:
        Merged client properties (must contain ``bootstrap.servers``).
    timeout_ms:
        Timeout of each listing request.
    """

    def __init__(self, cluster_id: str, properties: Mapping[str, str], timeout_ms: int) -> None:
        self.cluster_id = cluster_id
        self.properties = properties
        self.timeout_s = timeout_ms / 1000.0
        self._client: Any = None

    def _admin(self) -> Any:
        if self._client is None:
            self._client = AdminClient(admin_config(self.properties))
        return self._client

    def _fail(self, what: str, exc: BaseException) -> KafkaClientError:
        servers = self.properties.get("bootstrap.servers", "?")
        return KafkaClientError(
            f"Cluster '{self.cluster_id}' ({servers}): could not {what}: {exc}. Check that the "
            "cluster is reachable and the metadata's client properties are right."
        )

    def list_partitions(self, topics: Iterable[str]) -> dict[str, list[int]]:
        """Return the partitions of each existing topic among ``topics``; others are absent."""
        wanted = set(topics)
        try:
            metadata = self._admin().list_topics(timeout=self.timeout_s)
        except KafkaException as exc:
            raise self._fail("list topics", exc) from None
        result: dict[str, list[int]] = {}
        for name in sorted(wanted):
            topic = metadata.topics.get(name)
            if topic is None or topic.error is not None or not topic.partitions:
                continue
            result[name] = sorted(topic.partitions)
        return result

    def list_offsets(
        self,
        partitions: Iterable[tuple[str, int]],
        spec: str,
        read_committed: bool = False,
    ) -> dict[tuple[str, int], int]:
        """Return the ``earliest`` or ``latest`` offset of each (topic, partition) in one request.

        With ``read_committed`` the latest offset is the last stable offset.
        """
        wanted = list(partitions)
        if not wanted:
            return {}
        offset_spec = (
            OffsetSpec.earliest()  # type: ignore[no-untyped-call]
            if spec == "earliest"
            else OffsetSpec.latest()  # type: ignore[no-untyped-call]
        )
        request = {TopicPartition(t, p): offset_spec for t, p in wanted}
        level = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
        try:
            futures = self._admin().list_offsets(
                request, isolation_level=level, request_timeout=self.timeout_s
            )
            result: dict[tuple[str, int], int] = {}
            for tp, future in futures.items():
                result[(tp.topic, tp.partition)] = int(future.result().offset)
        except KafkaException as exc:
            raise self._fail(f"list {spec} offsets", exc) from None
        return result

    def close(self) -> None:
        """Drop the client (librdkafka closes its connections when the handle is destroyed)."""
        self._client = None
