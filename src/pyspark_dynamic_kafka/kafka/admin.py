"""Kafka admin access, in one place: listing topics, partitions and offsets of one cluster in
few requests, with retries and secrets masked in every message (:class:`ClusterAdmin`).

The source's listings, the ``singleCluster`` metadata service and the consumer-group lookups of
:mod:`~pyspark_dynamic_kafka.source.group.admin_offsets` all go through it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, TypeVar

from confluent_kafka import (
    IsolationLevel,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # OffsetSpec: not re-exported
    AdminClient,
    OffsetSpec,
)

from pyspark_dynamic_kafka.errors import ClientPropertyError, KafkaClientError
from pyspark_dynamic_kafka.kafka import refusals
from pyspark_dynamic_kafka.kafka.client_errors import error_code
from pyspark_dynamic_kafka.kafka.config import client_properties, redact_secrets, secrets_key
from pyspark_dynamic_kafka.kafka.topics import TopicListing, topic_listing
from pyspark_dynamic_kafka.kafka.waits import Wait, Waits
from pyspark_dynamic_kafka.offset_spec import PositionKind

__all__ = ["NO_OFFSET", "ClusterAdmin", "TopicListing", "admin_config"]

_log = logging.getLogger(__name__)

T = TypeVar("T")

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
_TIMEOUTS = (KafkaError._TIMED_OUT, KafkaError._TRANSPORT)
#: Errors a cluster answers about some of its partitions while a leader is elected or a replica
#: catches up: the cluster is reachable (:attr:`KafkaClientError.answered`).
_PARTITION_ERRORS = frozenset(
    {
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.REPLICA_NOT_AVAILABLE,
        KafkaError.OFFSET_NOT_AVAILABLE,
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.NOT_ENOUGH_REPLICAS,
        KafkaError.ELIGIBLE_LEADERS_NOT_AVAILABLE,
        KafkaError.PREFERRED_LEADER_NOT_AVAILABLE,
    }
)
_FIX = "Check that the cluster is reachable and the metadata's client properties are right."
#: A timestamp lookup that found no record at or after the timestamp.
NO_OFFSET = -1


def admin_config(
    properties: Mapping[str, str], cluster_id: str | None = None
) -> dict[str, str | int | float | bool]:
    """Client properties for an admin client: ``properties`` without consumer-only keys, secret
    references resolved (:func:`~pyspark_dynamic_kafka.kafka.config.client_properties`).

    Raises
    ------
    ClientPropertyError
        When a secret reference does not resolve (naming ``cluster_id``).
    """
    return {
        k: v
        for k, v in client_properties(properties, cluster_id).items()
        if not any(k.startswith(prefix) for prefix in _CONSUMER_ONLY_PREFIXES)
    }


class ClusterAdmin:
    """The one way to a cluster's admin API: lists topics, partitions, offsets (and, through
    :meth:`request`, anything else); the client is created lazily, from :func:`admin_config`.

    With secret references among the properties, each request resolves them again and a secret
    that changed (a rotated password file) gets a new client.

    A failed request is retried ``retries`` times, ``retry_interval_ms`` apart, unless it timed
    out (the timeout already waited long enough; a cluster that is down must not hold up the
    others for several timeouts). Creating the client is never retried: bad properties stay bad
    (a :class:`~pyspark_dynamic_kafka.errors.ClientPropertyError` naming the property librdkafka
    refuses and where it came from, a query option or the metadata). Every failure is a
    :class:`~pyspark_dynamic_kafka.errors.KafkaClientError` naming the cluster and the request,
    with the values of secret properties masked.

    Parameters
    ----------
    cluster_id:
        The cluster's id, used in messages.
    properties:
        Merged client properties (must contain ``bootstrap.servers``).
    timeout_ms:
        Timeout of each request.
    retries, retry_interval_ms:
        ``fetchOffset.numRetries`` and ``fetchOffset.retryIntervalMs`` for the source's listings.
    fix:
        What a failure message tells to check, by default the cluster and its client
        properties in the metadata.
    query_wide, option_prefix:
        The query's client options among ``properties`` (``kafka.*`` without the prefix;
        ``metadataService.`` for ``singleCluster``'s), to name a refused property's source.
    """

    def __init__(
        self,
        cluster_id: str,
        properties: Mapping[str, str],
        timeout_ms: int,
        retries: int = 0,
        retry_interval_ms: int = 0,
        *,
        fix: str = _FIX,
        query_wide: Mapping[str, str] | None = None,
        option_prefix: str = "kafka.",
    ) -> None:
        self.cluster_id = cluster_id
        self.query_wide = dict(query_wide or {})
        self.option_prefix = option_prefix
        self.properties = properties
        self.timeout_s = timeout_ms / 1000.0
        self.retries = retries
        self.retry_interval_s = retry_interval_ms / 1000.0
        self.fix = fix
        self._client: Any = None
        self._secrets = ""  # what the client's secret references resolved to (a digest)

    def _admin(self) -> Any:
        secrets = secrets_key(self.properties, self.cluster_id)
        if secrets != self._secrets:
            self._client, self._secrets = None, secrets
        if self._client is None:
            try:
                self._client = AdminClient(admin_config(self.properties, self.cluster_id))
            except (KafkaException, ValueError, TypeError) as exc:
                raise self._refused(exc) from None
        return self._client

    def _refused(self, exc: BaseException) -> ClientPropertyError:
        """The failure of creating the client: librdkafka refused a property (never retried)."""
        servers = self.properties.get("bootstrap.servers", "?")
        detail = redact_secrets(refusals.librdkafka_detail(exc), self.properties)
        key = refusals.refused_property(detail)
        said = f"Cluster '{self.cluster_id}' ({servers}): could not create an admin client"
        if key is None:
            return ClientPropertyError(
                f"{said}: {detail}. Check the cluster's client properties in the metadata and "
                f"the query's {self.option_prefix}* options."
            )
        source = refusals.property_source(
            key, self.properties, self.query_wide, self.cluster_id, self.option_prefix
        )
        fix = "the option or remove it" if source.startswith("option") else "it in the metadata"
        return ClientPropertyError(f"{said}: librdkafka refuses {source} ({detail}). Fix {fix}.")

    def _fail(self, what: str, exc: BaseException, fix: str) -> KafkaClientError:
        servers = self.properties.get("bootstrap.servers", "?")
        detail = redact_secrets(str(exc), self.properties)
        failure = KafkaClientError(
            f"Cluster '{self.cluster_id}' ({servers}): could not {what}: {detail}. {fix}"
        )
        failure.answered = error_code(exc) in _PARTITION_ERRORS
        return failure

    def request(self, what: str, call: Callable[[Any], T], fix: str | None = None) -> T:
        """Return ``call(client)``, retried as configured.

        Parameters
        ----------
        what:
            The request, for messages: ``could not <what>``.
        call:
            Sends the request with the confluent-kafka ``AdminClient`` it is given.
        fix:
            What the failure message tells to check, instead of the admin's ``fix``.

        Raises
        ------
        KafkaClientError
            When the client cannot be created or the request fails on its last attempt.
        """
        attempt = 0
        while True:
            client = self._admin()  # a new client after an attempt that dropped it
            try:
                return call(client)
            except KafkaException as exc:
                code = error_code(exc)
                if code == KafkaError._TRANSPORT:
                    # The next request makes a new client, bootstrapped afresh: librdkafka's
                    # (2.16) may stay unable to reach a broker that stopped and came back (a
                    # driver's listings failed for 300 s with the broker serving again).
                    self._client = None
                if attempt >= self.retries or code in _TIMEOUTS:
                    raise self._fail(what, exc, fix or self.fix) from None
                attempt += 1
                _log.info(
                    "Cluster %r: could not %s (attempt %d of %d), retrying: %s",
                    self.cluster_id,
                    what,
                    attempt,
                    self.retries + 1,
                    redact_secrets(str(exc), self.properties),
                )
                time.sleep(self.retry_interval_s)

    def topic_names(self) -> list[str]:
        """Every topic of the cluster, sorted."""
        metadata = self.request(
            f"list the topics within {self.timeout_s:g} s",
            lambda client: client.list_topics(timeout=self.timeout_s),
        )
        return sorted(str(name) for name in metadata.topics)

    def list_topics(self, topics: Iterable[str]) -> TopicListing:
        """List the partitions and ids of ``topics``, telling absent topics from unavailable ones
        (:func:`~pyspark_dynamic_kafka.kafka.topics.topic_listing`: a controller killed since
        the last Metadata answer costs about the time its cluster takes to fence it, not the
        whole timeout). A failure of a request itself (a client-side error: timeout, transport)
        fails the listing, retried as configured.
        """
        wanted = sorted(set(topics))
        if not wanted:
            return TopicListing({}, frozenset(), frozenset())
        return self.request(
            "list topics",
            lambda client: topic_listing(client, wanted, self.timeout_s, self.cluster_id),
        )

    def list_partitions(self, topics: Iterable[str]) -> dict[str, list[int]]:
        """Return the partitions of each existing topic among ``topics``; others are absent."""
        listing = self.list_topics(topics)
        return {topic: list(numbers) for topic, numbers in listing.partitions.items()}

    def _offsets(
        self,
        request: Mapping[tuple[str, int], Any],
        what: str,
        read_committed: bool,
        lowest: int = NO_OFFSET,
    ) -> dict[tuple[str, int], int]:
        """List offsets; an answer below ``lowest`` is no offset at all: retried, then failed."""
        if not request:
            return {}
        specs = {TopicPartition(t, p): spec for (t, p), spec in request.items()}
        level = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED

        def ask(client: Any, wait: Wait) -> tuple[dict[tuple[str, int], int], dict[str, object]]:
            """The offsets, and each partition not answered within the wait with why (its
            timeout raised only at the last wait: a shorter one may end before a new client
            learnt the leaders)."""
            futures = client.list_offsets(
                specs, isolation_level=level, request_timeout=wait.seconds
            )
            offsets: dict[tuple[str, int], int] = {}
            unanswered: dict[str, object] = {}
            for tp, future in futures.items():
                try:
                    offsets[(tp.topic, tp.partition)] = int(future.result().offset)
                except KafkaException as exc:
                    code = error_code(exc)
                    if code not in _PARTITION_ERRORS and (
                        wait.last or code != KafkaError._TIMED_OUT
                    ):
                        raise
                    # a leader being elected, a new one whose high watermark lags, or a short
                    # wait that ended before a new client learnt the leaders
                    unanswered[f"{tp.topic}/{tp.partition}"] = exc.args[0].str()
            for (t, p), offset in sorted(offsets.items()):
                if offset < lowest:
                    unanswered[f"{t}/{p}"] = offset
            return offsets, unanswered

        def call(client: Any) -> dict[tuple[str, int], int]:
            # A partition not answered within a wait is asked again by a new client, in short
            # waits then longer ones (kafka/waits.py): librdkafka's client went on asking a
            # killed leader until its timeout, never learning of the new one.
            waits = Waits(self.timeout_s, time.monotonic)
            while True:
                wait, asked = waits.next(), time.monotonic()
                offsets, unanswered = ask(client, wait)
                if not unanswered:
                    return offsets
                self._client = None  # the next wait, or the next attempt, asks a new client
                if wait.last:
                    raise KafkaException(
                        KafkaError(
                            KafkaError.LEADER_NOT_AVAILABLE,
                            f"the cluster answered no offset for {unanswered} within "
                            f"{self.timeout_s:g} s (a partition whose leader is changing)",
                        )
                    )
                _log.info(
                    "Cluster %r: no offset yet for %s (a wait of %.1f s): asking a new client "
                    "(its metadata names the leaders now), %.1f s left",
                    self.cluster_id,
                    unanswered,
                    wait.seconds,
                    waits.left(),
                )
                # A client that answers at once (a partition with no leader at all) is not
                # replaced faster than once a wait.
                time.sleep(max(wait.seconds - (time.monotonic() - asked), 0.0))
                client = self._admin()

        return self.request(what, call)

    def list_offsets(
        self,
        partitions: Iterable[tuple[str, int]],
        kind: Literal[PositionKind.EARLIEST, PositionKind.LATEST],
        read_committed: bool = False,
    ) -> dict[tuple[str, int], int]:
        """Return the earliest or latest offset of each (topic, partition) in one request.

        With ``read_committed`` the latest offset is the last stable offset. A partition
        answered without an offset (``-1001``: librdkafka's answer when the partition's leader
        did not answer in time, killed or slow) is asked again by a new client in short waits,
        then longer ones, while the timeout lasts
        (:class:`~pyspark_dynamic_kafka.kafka.waits.Waits`); then the attempt fails, retried
        like any failed request, then raised, so that no caller takes it for an offset.
        """
        offset_spec = (
            OffsetSpec.earliest()  # type: ignore[no-untyped-call]
            if kind == PositionKind.EARLIEST
            else OffsetSpec.latest()  # type: ignore[no-untyped-call]
        )
        request = dict.fromkeys(partitions, offset_spec)
        return self._offsets(request, f"list {kind.value} offsets", read_committed, lowest=0)

    def offsets_for_times(
        self, stamps: Mapping[tuple[str, int], int], read_committed: bool = False
    ) -> dict[tuple[str, int], int]:
        """Return, per (topic, partition), the first offset whose record timestamp is at or after
        the given epoch milliseconds, or :data:`NO_OFFSET` (-1) when there is none."""
        request = {tp: OffsetSpec.for_timestamp(ms) for tp, ms in stamps.items()}
        return self._offsets(request, "look up offsets by timestamp", read_committed)

    def close(self) -> None:
        """Drop the client (librdkafka closes its connections when the handle is destroyed)."""
        self._client = None
