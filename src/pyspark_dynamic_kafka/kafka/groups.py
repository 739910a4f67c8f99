"""Committed offsets of a consumer group, read with the admin API (the group is not joined)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from pyspark_dynamic_kafka.errors import KafkaClientError
from pyspark_dynamic_kafka.kafka.admin import admin_config

__all__ = ["committed_offsets"]


def committed_offsets(
    cluster_id: str,
    properties: Mapping[str, str],
    group: str,
    partitions: Iterable[tuple[str, int]],
    timeout_ms: int,
) -> dict[tuple[str, int], int]:
    """Return the offset ``group`` committed for each (topic, partition), in one request.

    Partitions without a committed offset are absent.

    Parameters
    ----------
    cluster_id:
        The cluster's id, for messages.
    properties:
        Client properties of the cluster (``bootstrap.servers`` required).
    group:
        The consumer group id.
    partitions:
        (topic, partition) pairs.
    timeout_ms:
        Timeout of the request.

    Raises
    ------
    KafkaClientError
        When the cluster cannot be reached or refuses the request.
    """
    wanted = [TopicPartition(t, p) for t, p in partitions]
    if not wanted:
        return {}
    admin = AdminClient(admin_config(properties))
    request = [ConsumerGroupTopicPartitions(group, wanted)]
    try:
        futures = admin.list_consumer_group_offsets(request, request_timeout=timeout_ms / 1000.0)
        answer = futures[group].result()
    except KafkaException as exc:
        servers = properties.get("bootstrap.servers", "?")
        raise KafkaClientError(
            f"Cluster '{cluster_id}' ({servers}): could not read the committed offsets of group "
            f"{group!r}: {exc}. Check that the cluster is reachable and the group id is right."
        ) from None
    result: dict[tuple[str, int], int] = {}
    for tp in answer.topic_partitions:
        if tp.error is None and tp.offset >= 0:
            result[(tp.topic, tp.partition)] = int(tp.offset)
    return result
