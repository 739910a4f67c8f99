"""Committed offsets of a consumer group, read and written with the admin API (the group is not
joined)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition

from pyspark_dynamic_kafka.kafka.admin import ClusterAdmin

__all__ = ["commit_group_offsets", "committed_offsets", "group_offsets", "group_owners"]


def _ask(admin: ClusterAdmin, group: str, what: str, send: Callable[[Any], Any]) -> Any:
    """The answer for ``group`` of the admin request ``send`` makes (futures by group id)."""
    return admin.request(
        what,
        lambda client: send(client)[group].result(),
        fix="Check that the cluster is reachable and the group id is right.",
    )


def group_offsets(
    admin: ClusterAdmin, group: str, partitions: Iterable[tuple[str, int]]
) -> dict[tuple[str, int], int]:
    """Return the offset ``group`` committed for each (topic, partition), in one request.

    Partitions without a committed offset are absent.

    Parameters
    ----------
    admin:
        The admin access of the cluster (its timeout, retries and secret masking apply).
    group:
        The consumer group id.
    partitions:
        (topic, partition) pairs.

    Raises
    ------
    KafkaClientError
        When the cluster cannot be reached or refuses the request (secrets masked).
    """
    wanted = [TopicPartition(t, p) for t, p in partitions]
    if not wanted:
        return {}
    request = [ConsumerGroupTopicPartitions(group, wanted)]
    answer = _ask(
        admin,
        group,
        f"read the committed offsets of group {group!r}",
        lambda client: client.list_consumer_group_offsets(request, request_timeout=admin.timeout_s),
    )
    result: dict[tuple[str, int], int] = {}
    for tp in answer.topic_partitions:
        if tp.error is None and tp.offset >= 0:
            result[(tp.topic, tp.partition)] = int(tp.offset)
    return result


def commit_group_offsets(
    admin: ClusterAdmin, group: str, offsets: Mapping[tuple[str, int], int]
) -> None:
    """Commit ``offsets`` (the next offset to read of each (topic, partition)) for ``group``.

    One ``OffsetCommit`` request to the group's coordinator, as a consumer using ``assign()``
    sends it; the group needs no member (a group with active members refuses it).

    Raises
    ------
    KafkaClientError
        When the cluster cannot be reached or refuses the commit of any partition.
    """
    if not offsets:
        return
    wanted = [TopicPartition(t, p, int(o)) for (t, p), o in sorted(offsets.items())]
    request = [ConsumerGroupTopicPartitions(group, wanted)]

    def call(client: Any) -> Any:
        futures = client.alter_consumer_group_offsets(request, request_timeout=admin.timeout_s)
        answer = futures[group].result()
        refused = [
            f"{tp.topic}/{tp.partition}: {tp.error}" for tp in answer.topic_partitions if tp.error
        ]
        if refused:
            raise KafkaException(KafkaError(KafkaError._FAIL, "; ".join(refused)))
        return answer

    admin.request(
        f"commit the offsets of group {group!r}",
        call,
        fix="Check that the cluster is reachable and that no consumer is a member of the group.",
    )


def committed_offsets(
    cluster_id: str,
    properties: Mapping[str, str],
    group: str,
    partitions: Iterable[tuple[str, int]],
    timeout_ms: int,
) -> dict[tuple[str, int], int]:
    """:func:`group_offsets` through a new :class:`ClusterAdmin` of the cluster.

    Parameters
    ----------
    cluster_id:
        The cluster's id, for messages.
    properties:
        Client properties of the cluster (``bootstrap.servers`` required).
    group, partitions:
        As for :func:`group_offsets`.
    timeout_ms:
        Timeout of the request.
    """
    return group_offsets(ClusterAdmin(cluster_id, properties, timeout_ms), group, partitions)


def group_owners(admin: ClusterAdmin, group: str) -> dict[tuple[str, int], str]:
    """Which member of ``group`` owns each (topic, partition) now, as ``client.id@host``.

    Partitions no member owns are absent (also when the group has no member).

    Raises
    ------
    KafkaClientError
        When the cluster cannot be reached or refuses the request.
    """
    answer = _ask(
        admin,
        group,
        f"describe group {group!r}",
        lambda client: client.describe_consumer_groups([group], request_timeout=admin.timeout_s),
    )
    owners: dict[tuple[str, int], str] = {}
    for member in answer.members or ():
        name = f"{member.client_id}@{member.host.lstrip('/')}"
        for tp in member.assignment.topic_partitions if member.assignment else ():
            owners[(tp.topic, tp.partition)] = name
    return owners
