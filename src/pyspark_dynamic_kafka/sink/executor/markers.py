"""exactlyOnce progress markers: what a marker says, where it is found, whose it is.

A marker is an offset commit of the group ``<sinkId>.progress.<p>`` (Spark partition ``p``),
written inside the task's transaction: offset = the micro-batch id, metadata =
:data:`MARKER` followed by a JSON object naming the streaming query that wrote it
(``{"generation": 0, "query": "<id>"}``). Spark keeps a query's id across restarts from one
checkpoint (the task's local property ``sql.streaming.queryId``), and numbers a new checkpoint's
micro-batches from 0 again, so a marker only says "committed" to the query that wrote it.

**Where.** A task commits its marker on partition 0 of **every** topic of its route, and a task
looks markers up on partition 0 of every topic the stream lists on each cluster (the newest
found counts): a topic that joins the stream, or one that leaves it, between an attempt and its
replay does not hide the attempt's marker, as long as one topic of the attempt's route is still
listed there at the replay. (Not the whole group's offsets: librdkafka's ListConsumerGroupOffsets
crashes the process when the coordinator answers NOT_COORDINATOR, librdkafka issue 5040.)
Markers do not survive the deletion of their topic: the group coordinator drops its offsets.

**Whose.** Of the markers found on every cluster the stream lists, the newest counts: the one
with the highest ``(generation, batch)``. A query that takes a ``sinkId`` over
(``sinkIdTakeover=true``) writes the generation after the newest marker's, so its markers are
newer than the old query's wherever they lie, and a restart from its own checkpoint finds its
own marker (a normal replay). A legacy marker (metadata exactly :data:`MARKER`, written before
markers named their query) is generation 0 and taken as the current query's: a restart from the
checkpoint that wrote it is the common case (so it keeps its replays skipped); with
``sinkIdTakeover=true`` it is taken over like another query's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from pyspark_dynamic_kafka.engines.roles import CommittedOffset, ProduceFailure
from pyspark_dynamic_kafka.errors import SinkIdInUseError, WriteError
from pyspark_dynamic_kafka.kafka.config import client_properties, redact_secrets
from pyspark_dynamic_kafka.sink.executor.task import MarkerCluster

__all__ = [
    "MARKER",
    "Claim",
    "Marker",
    "OffsetLookup",
    "claim",
    "committed_markers",
    "marker_consumer",
    "marker_metadata",
    "parse_marker",
    "progress_group",
]

#: Asks ``group``'s committed offsets of (topic, partition) places; ``None``: it cannot.
OffsetLookup = Callable[[str, list[tuple[str, int]]], list[CommittedOffset] | None]

#: The metadata string of a progress marker's offset commit (alone: a legacy marker).
MARKER = "dynamic_kafka.sink.batch"
_RETRY_S = 0.2
_COORDINATOR_MOVES = frozenset(
    {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
    }
)


def progress_group(sink_id: str, partition: int) -> str:
    """The group whose committed offsets are Spark partition ``partition``'s progress markers."""
    return f"{sink_id}.progress.{partition}"


@dataclass(frozen=True)
class Marker:
    """One progress marker.

    Parameters
    ----------
    batch:
        The micro-batch committed (the offset).
    query_id:
        The streaming query that wrote it; ``None`` for a legacy marker.
    generation:
        How many times the ``sinkId`` was taken over before it was written.
    where:
        ``cluster/topic-partition`` it was found on, for messages.
    """

    batch: int
    query_id: str | None
    generation: int = 0
    where: str = ""

    @property
    def rank(self) -> tuple[int, int]:
        """Newer markers rank higher: by generation, then micro-batch."""
        return self.generation, self.batch


def marker_metadata(query_id: str, generation: int) -> str:
    """The metadata of a marker written by ``query_id`` at ``generation``."""
    body = json.dumps({"generation": generation, "query": query_id}, sort_keys=True)
    return f"{MARKER} {body}"


def parse_marker(offset: int, metadata: str | None, where: str = "") -> Marker | None:
    """The marker an offset commit is, or ``None`` when it is none of the sink's (no offset,
    other metadata). Unknown JSON fields are ignored (later releases may add some)."""
    text = (metadata or "").rstrip("\x00")  # the compiled core sends the C string's NUL
    if offset < 0 or not text.startswith(MARKER):
        return None
    rest = text[len(MARKER) :]
    if not rest:
        return Marker(offset, None, 0, where)
    if not rest.startswith(" "):
        return None
    try:
        fields = json.loads(rest)
    except ValueError:
        return None
    if not isinstance(fields, dict):
        return None
    query, generation = fields.get("query"), fields.get("generation")
    if not isinstance(query, str) or type(generation) is not int or generation < 0:
        return None
    return Marker(offset, query, generation, where)


def marker_consumer(properties: dict[str, str], group: str) -> Consumer:
    """A consumer of ``group`` that commits nothing: it reads the group's committed offsets
    (``read_committed``: ``committed()`` waits for pending transactional ones, KIP-447) or lends
    the group's metadata to ``send_offsets_to_transaction``."""
    return Consumer(
        {
            **properties,
            "group.id": group,
            "enable.auto.commit": "false",
            "isolation.level": "read_committed",
        }
    )


def _committed(consumer: Consumer, places: list[TopicPartition], timeout_s: float) -> list[Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return list(consumer.committed(places, timeout=timeout_s))
        except KafkaException as exc:
            # NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...: the group's coordinator
            # moves or loads (a fresh cluster creates __consumer_offsets); ask again.
            error = exc.args[0]
            again = error.retriable() or error.code() in _COORDINATOR_MOVES
            if not again or time.monotonic() >= deadline:
                raise
            time.sleep(_RETRY_S)


def _consumer_committed(
    cluster: MarkerCluster, group: str, places: list[tuple[str, int]], timeout_ms: int
) -> list[CommittedOffset]:
    properties = client_properties(cluster.properties, cluster.cluster_id)
    consumer = marker_consumer(properties, group)
    try:
        asked = [TopicPartition(topic, p) for topic, p in places]
        found = _committed(consumer, asked, timeout_ms / 1000.0)
    finally:
        consumer.close()
    return [(tp.topic, tp.partition, tp.offset, tp.metadata) for tp in found if tp.error is None]


def committed_markers(
    cluster: MarkerCluster,
    sink_id: str,
    partition: int,
    timeout_ms: int,
    lookup: OffsetLookup | None = None,
) -> list[Marker]:
    """The markers of Spark partition ``partition`` on ``cluster``: on partition 0 of each
    topic the stream lists there, asked by ``lookup`` (the task's transactional producer on its
    own cluster: no client made for it) when given and able, else by a consumer of the group
    made for it (librdkafka's finds the group's coordinator in about 50 ms).

    Raises
    ------
    WriteError
        When the cluster does not answer (naming it; a replay cannot be checked, so the task
        must not write).
    """
    group = progress_group(sink_id, partition)
    places = [(topic, 0) for topic in cluster.topics]
    if not places:
        return []
    try:
        found = None if lookup is None else lookup(group, places)
        if found is None:
            found = _consumer_committed(cluster, group, places, timeout_ms)
    except (KafkaException, ProduceFailure) as exc:
        why = exc.reason if isinstance(exc, ProduceFailure) else str(exc)
        text = redact_secrets(why, cluster.properties)
        raise WriteError(
            f"Cannot read the sink's progress markers on cluster {cluster.cluster_id!r} (group "
            f"{group!r}): {text}. Every cluster the stream lists must answer for exactlyOnce "
            "writes."
        ) from None
    markers = (
        parse_marker(offset, metadata, f"{cluster.cluster_id}/{topic}-{p}")
        for topic, p, offset, metadata in found
    )
    return [m for m in markers if m is not None]


@dataclass(frozen=True)
class Claim:
    """What a task's markers decided.

    Parameters
    ----------
    done:
        The newest marker when it says this micro-batch is committed (the task writes nothing),
        else ``None``.
    generation:
        The generation of the marker the task writes.
    newest:
        The newest marker found (``None``: none).
    """

    done: Marker | None
    generation: int
    newest: Marker | None = None


def claim(
    markers: Iterable[Marker],
    sink_id: str,
    query_id: str | None,
    batch_id: int,
    takeover: bool = False,
) -> Claim:
    """Decide from the markers found whether the task of ``query_id``'s micro-batch
    ``batch_id`` is a replay, and which generation its own marker carries.

    ``query_id=None`` (no streaming query: tests driving a task directly) takes every marker
    as its own, as a legacy marker is.

    Raises
    ------
    SinkIdInUseError
        When the newest marker is another query's and ``takeover`` is off.
    """
    newest = max(markers, key=lambda m: m.rank, default=None)
    if newest is None:
        return Claim(None, 0)
    own = newest.query_id == query_id or query_id is None
    if not own and newest.query_id is None and not takeover:
        own = True  # a legacy marker: the query restarted from the checkpoint that wrote it
    if own:
        return Claim(newest if newest.batch >= batch_id else None, newest.generation, newest)
    if takeover:
        return Claim(None, newest.generation + 1, newest)
    raise SinkIdInUseError(
        f"sinkId {sink_id!r} is in use by another streaming query: its progress marker on "
        f"{newest.where or 'the cluster'} (micro-batch {newest.batch}) was written by query "
        f"{newest.query_id}, and this query is {query_id} (at micro-batch {batch_id}). Spark "
        "numbers a new checkpoint's micro-batches from 0, so writing on would skip this "
        "query's micro-batches as already committed. Give this query its own sinkId, or, if "
        "it replaces the other query (a new checkpoint; stop the other one), set the option "
        "sinkIdTakeover=true: this query then takes the sinkId over and its micro-batches "
        "are counted afresh. In a Spark Declarative Pipeline a full refresh (--full-refresh, "
        "--full-refresh-all) gives the flow a new checkpoint: sinkIdTakeover=true writes what "
        "the refresh recomputes once more."
    )
