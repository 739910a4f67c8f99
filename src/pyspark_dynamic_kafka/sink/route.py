"""Where a write goes: a stream's metadata -> one cluster and its topics (pure, no I/O).

The rule (the metadata document's ``write`` field, :mod:`pyspark_dynamic_kafka.metadata.entries`):

1. the stream's cluster marked ``write: true``;
2. with none marked, the stream's only cluster;
3. otherwise the route is ambiguous and the write fails naming the stream and its clusters.

A route is resolved on the driver (once for ``df.write``, when each micro-batch starts for
``writeStream``) and travels with the tasks, so every task and retry of a batch writes to one
cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark_dynamic_kafka.errors import WriteRouteError
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.metadata.model import KafkaStream

__all__ = ["WriteRoute", "resolve_write_route"]


@dataclass(frozen=True)
class WriteRoute:
    """One stream's write destination: a cluster, its client properties and the stream's topics
    there.

    Parameters
    ----------
    stream_id:
        The logical stream written.
    cluster_id:
        The cluster written to.
    topics:
        The stream's topics on that cluster; a row's ``topic`` must be one of them.
    properties:
        The cluster's client properties from the metadata (secrets masked in ``repr``).
    """

    stream_id: str
    cluster_id: str
    topics: frozenset[str]
    properties: FrozenProperties

    @property
    def default_topic(self) -> str | None:
        """The topic of rows without a ``topic`` value: the route's only topic, else ``None``."""
        return next(iter(self.topics)) if len(self.topics) == 1 else None

    @property
    def marker_places(self) -> list[tuple[str, int]]:
        """Where a task commits its exactlyOnce progress marker: partition 0 of every topic, by
        name (so a replay finds it while any of them is still listed)."""
        return [(topic, 0) for topic in sorted(self.topics)]

    def describe(self) -> str:
        """``stream 'orders' -> cluster 'east' (topics: 'orders')`` for messages."""
        topics = ", ".join(repr(t) for t in sorted(self.topics))
        return f"stream {self.stream_id!r} -> cluster {self.cluster_id!r} (topics: {topics})"

    def topic_of(self, topic: str | None) -> str:
        """The topic a row goes to: its own ``topic`` value, which must be in the route, or the
        route's only topic.

        Raises
        ------
        WriteRouteError
            When ``topic`` is outside the route, or is missing and the route has several topics.
        """
        if topic is None:
            default = self.default_topic
            if default is None:
                raise WriteRouteError(
                    f"A row has no topic and the write route {self.describe()} has several "
                    "topics: add a 'topic' column naming one of them."
                )
            return default
        if topic not in self.topics:
            raise WriteRouteError(
                f"A row's topic {topic!r} is not in the write route {self.describe()}: a "
                "'topic' value must name one of the route's topics (or drop the column)."
            )
        return topic


def resolve_write_route(streams: Mapping[str, KafkaStream], stream_id: str) -> WriteRoute:
    """The write route of ``stream_id`` among ``streams`` (what the metadata service described).

    Raises
    ------
    WriteRouteError
        When the stream is unknown, its route is ambiguous (several clusters, none or several
        marked ``write: true``), or the route's cluster holds no topic of the stream.
    """
    stream = streams.get(stream_id)
    if stream is None:
        known = ", ".join(repr(s) for s in sorted(streams)) or "none"
        raise WriteRouteError(
            f"Unknown stream {stream_id!r}: the metadata service does not describe it (streams it "
            f"described: {known}). Check the option streamId or add the stream to the metadata."
        )
    marked = sorted(cid for cid, cluster in stream.clusters.items() if cluster.write)
    if len(marked) == 1:
        cluster_id = marked[0]
    elif not marked and len(stream.clusters) == 1:
        cluster_id = next(iter(stream.clusters))
    elif not stream.clusters:
        raise WriteRouteError(
            f"Stream {stream_id!r} is on no cluster in the metadata: add an entry with a "
            "cluster and a topic to write to it."
        )
    else:
        on = ", ".join(repr(c) for c in sorted(stream.clusters)) or "none"
        why = (
            f"{len(marked)} of its clusters are marked 'write: true'"
            if marked
            else "none of its clusters is marked 'write: true'"
        )
        raise WriteRouteError(
            f"Ambiguous write route for stream {stream_id!r}: it is on clusters {on} and {why}. "
            "Mark exactly one entry of the stream with 'write: true' in the metadata."
        )
    cluster = stream.clusters[cluster_id]
    if not cluster.topics:
        raise WriteRouteError(
            f"The write route of stream {stream_id!r} is cluster {cluster_id!r}, where the stream "
            "has no topic: list a topic in its entry."
        )
    return WriteRoute(stream_id, cluster_id, cluster.topics, FrozenProperties(cluster.properties))
