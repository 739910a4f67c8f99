"""One listing of a cluster's topics: which exist, their partitions and ids (:class:`TopicListing`,
:func:`topic_listing`), over a confluent-kafka ``AdminClient`` that
:class:`~pyspark_dynamic_kafka.kafka.admin.ClusterAdmin` hands in (with its retries and messages).

A Metadata request to any broker lists the partitions (an absent topic is not created);
``describe_topics`` adds each existing topic's id. librdkafka sends that one to the controller its
last Metadata answer named (Java's admin client, to any broker: KAFKA-8962) and waits for that
broker, however long, never asking again by itself. A KRaft broker names any broker it has not
fenced, and a killed one is fenced only ``broker.session.timeout.ms`` later (9 s by default): an
answer in between may name it, and the listing would wait for it until its whole timeout
(measured: 30 s of 30 s, then ``Timed out waiting for controller``). So each ``describe_topics``
waits :data:`CONTROLLER_WAIT_S` at most (or a tenth of the timeout, if longer), then the listing
asks for metadata again, until its timeout: a killed controller costs about the time its cluster
takes to fence it.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicCollection

from pyspark_dynamic_kafka.kafka.client_errors import error_code

__all__ = ["CONTROLLER_WAIT_S", "TopicListing", "topic_listing"]

_log = logging.getLogger(__name__)

_UNKNOWN_TOPIC = KafkaError.UNKNOWN_TOPIC_OR_PART
#: How long one ``describe_topics`` waits for the controller a Metadata answer named before the
#: listing asks for metadata again (seconds; a tenth of the listing's timeout if that is longer).
CONTROLLER_WAIT_S = 3.0


@dataclass(frozen=True)
class TopicListing:
    """The topics of one cluster among those asked for.

    Attributes
    ----------
    partitions:
        Partition numbers of each existing topic.
    absent:
        Topics the cluster does not have (never created, or deleted).
    unavailable:
        Topics the cluster reported with another error (transient: leader election, ...).
    ids:
        The topic id (KIP-516, base64 as Kafka's tools print it) of each existing topic whose
        broker reports one (Kafka 2.8+); a recreated topic has a new id.
    """

    partitions: Mapping[str, tuple[int, ...]]
    absent: frozenset[str]
    unavailable: frozenset[str]
    ids: Mapping[str, str] = field(default_factory=dict)


def _from_metadata(
    client: Any, wanted: Sequence[str], timeout_s: float
) -> tuple[dict[str, tuple[int, ...]], set[str], set[str]]:
    """Partitions of the existing topics among ``wanted``, the absent, the unavailable."""
    listed = client.list_topics(timeout=timeout_s).topics
    partitions: dict[str, tuple[int, ...]] = {}
    absent: set[str] = set()
    unavailable: set[str] = set()
    for name in wanted:
        topic = listed.get(name)
        if topic is None or (topic.error is not None and topic.error.code() == _UNKNOWN_TOPIC):
            absent.add(name)
        elif topic.error is not None or not topic.partitions:
            unavailable.add(name)
        else:
            partitions[name] = tuple(sorted(topic.partitions))
    return partitions, absent, unavailable


def _ids(
    client: Any,
    partitions: dict[str, tuple[int, ...]],
    absent: set[str],
    unavailable: set[str],
    wait_s: float,
) -> dict[str, str]:
    """The id of each topic of ``partitions``; one deleted or unavailable since the Metadata
    answer moves from ``partitions`` to ``absent`` or ``unavailable``."""
    if not partitions:
        return {}
    futures = client.describe_topics(TopicCollection(sorted(partitions)), request_timeout=wait_s)
    ids: dict[str, str] = {}
    for name, future in futures.items():
        try:
            topic_id = future.result().topic_id
        except KafkaException as exc:
            code = error_code(exc)
            if code is None or code < 0:
                raise  # the request failed (librdkafka's own errors are negative)
            del partitions[name]
            (absent if code == _UNKNOWN_TOPIC else unavailable).add(name)
            continue
        if topic_id is not None and (
            topic_id.get_most_significant_bits() or topic_id.get_least_significant_bits()
        ):  # a broker without topic ids answers the zero id
            ids[name] = str(topic_id)
    return ids


def topic_listing(
    client: Any,
    topics: Sequence[str],
    timeout_s: float,
    cluster_id: str,
    clock: Callable[[], float] = time.monotonic,
) -> TopicListing:
    """List ``topics`` (sorted, distinct) of cluster ``cluster_id`` with ``client`` within
    ``timeout_s``.

    A topic the cluster answers with an error of its own is absent (unknown topic) or
    unavailable (any other). A ``describe_topics`` that timed out is asked again after a new
    Metadata request while the timeout lasts, ``timeout_s`` over the wait of one at most
    (the module's docstring says why).

    Raises
    ------
    KafkaException
        When a request itself fails (a client-side error: timeout, transport), or the last
        ``describe_topics`` times out.
    """
    deadline = clock() + timeout_s
    wait_s = max(CONTROLLER_WAIT_S, timeout_s / 10)
    attempts = max(1, math.ceil(timeout_s / wait_s))
    for attempt in range(1, attempts + 1):
        partitions, absent, unavailable = _from_metadata(client, topics, _left(deadline, clock))
        wait = min(wait_s, _left(deadline, clock))
        try:
            ids = _ids(client, partitions, absent, unavailable, wait)
        except KafkaException as exc:
            if (
                error_code(exc) != KafkaError._TIMED_OUT
                or attempt == attempts
                or clock() >= deadline
            ):
                raise
            _log.info(
                "Cluster %r: no topic ids within %.1f s (the controller named may be gone): "
                "asking for metadata again, %.1f s left",
                cluster_id,
                wait,
                deadline - clock(),
            )
        else:
            return TopicListing(partitions, frozenset(absent), frozenset(unavailable), ids)
    raise AssertionError("unreachable: the last attempt returns or raises")


def _left(deadline: float, clock: Callable[[], float]) -> float:
    """Seconds until ``deadline``, at least a millisecond (a request's timeout)."""
    return max(deadline - clock(), 0.001)
