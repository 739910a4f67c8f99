"""``dynamic-kafka describe``: streams -> clusters -> topics -> partitions, with offsets and lag.

Each cluster is asked once for all the topics of the described streams: partitions, earliest and
latest offsets, and (given a consumer group) committed offsets. A cluster that cannot be reached
is reported with its error; the others are still described. Reports hold no client property but
``bootstrap.servers`` (never a secret).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pyspark_dynamic_kafka.errors import KafkaClientError
from pyspark_dynamic_kafka.kafka.admin import ClusterAdmin
from pyspark_dynamic_kafka.metadata.model import KafkaStream
from pyspark_dynamic_kafka.offset_spec import PositionKind
from pyspark_dynamic_kafka.source.group.admin_offsets import committed_offsets, group_owners

__all__ = [
    "ClusterReport",
    "PartitionReport",
    "Report",
    "StreamReport",
    "TopicReport",
    "build_report",
]


_LOG_LEVEL = "log_level"
_QUIET = "2"  # syslog level: critical and worse


class _JsonReport:
    """A part of the report whose JSON object is its attributes that :attr:`_JSON` names, in
    that order, each under its name in camelCase; a tuple of reports is a list of their
    objects."""

    _JSON: ClassVar[tuple[str, ...]]

    def to_json(self) -> dict[str, Any]:
        """This part of the report as a JSON object."""
        return {_camel_case(name): _json_value(getattr(self, name)) for name in self._JSON}


def _camel_case(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(word.title() for word in rest)


def _json_value(value: Any) -> Any:
    if isinstance(value, tuple):
        return [v.to_json() for v in value]
    return value


@dataclass(frozen=True)
class PartitionReport(_JsonReport):
    """Offsets of one partition; ``committed`` and ``lag`` are ``None`` without a commit,
    ``owner`` (the group member reading it, ``client.id@host``) without one."""

    partition: int
    earliest: int
    latest: int
    committed: int | None = None
    owner: str | None = None

    _JSON = ("partition", "earliest", "latest", "committed", "lag", "owner")

    @property
    def lag(self) -> int | None:
        """``latest - committed`` (never negative), or ``None`` without a committed offset."""
        if self.committed is None:
            return None
        return max(self.latest - self.committed, 0)


@dataclass(frozen=True)
class TopicReport(_JsonReport):
    """One topic of a stream on a cluster; ``exists`` is false when the cluster lacks it."""

    topic: str
    exists: bool
    partitions: tuple[PartitionReport, ...] = ()

    _JSON = ("topic", "exists", "partitions")


@dataclass(frozen=True)
class ClusterReport(_JsonReport):
    """A stream's topics on one cluster, or the error that kept the cluster from answering."""

    cluster: str
    bootstrap_servers: str
    topics: tuple[TopicReport, ...] = ()
    error: str | None = None

    _JSON = ("cluster", "bootstrap_servers", "error", "topics")


@dataclass(frozen=True)
class StreamReport(_JsonReport):
    """One stream and its clusters."""

    stream: str
    clusters: tuple[ClusterReport, ...]

    _JSON = ("stream", "lag", "clusters")

    @property
    def lag(self) -> int | None:
        """Total lag over the partitions with a committed offset (``None`` when none has one)."""
        lags = [
            p.lag
            for c in self.clusters
            for t in c.topics
            for p in t.partitions
            if p.lag is not None
        ]
        return sum(lags) if lags else None


@dataclass(frozen=True)
class Report(_JsonReport):
    """What ``describe`` shows."""

    source: str
    group: str | None
    streams: tuple[StreamReport, ...]

    _JSON = ("group", "streams")

    @property
    def errors(self) -> list[str]:
        """One line per cluster that could not be described."""
        return sorted(
            {f"{c.cluster}: {c.error}" for s in self.streams for c in s.clusters if c.error}
        )

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON object: where its metadata came from (``metadata``), then its
        group and streams."""
        return {"metadata": self.source, **super().to_json()}


@dataclass
class _ClusterState:
    """What one cluster answered for all the described topics."""

    partitions: dict[str, list[int]]
    earliest: dict[tuple[str, int], int]
    latest: dict[tuple[str, int], int]
    committed: dict[tuple[str, int], int]
    owners: dict[tuple[str, int], str]


def _query(
    cluster_id: str,
    properties: Mapping[str, str],
    topics: set[str],
    group: str | None,
    timeout_ms: int,
) -> _ClusterState:
    # librdkafka would print every failed connection; the report carries the error instead.
    properties = {_LOG_LEVEL: _QUIET, **properties}
    admin = ClusterAdmin(cluster_id, properties, timeout_ms)
    try:
        partitions = admin.list_partitions(topics)
        pairs = [(t, p) for t, ps in partitions.items() for p in ps]
        earliest = admin.list_offsets(pairs, PositionKind.EARLIEST)
        latest = admin.list_offsets(pairs, PositionKind.LATEST)
        owners = group_owners(admin, group) if group else {}
    finally:
        admin.close()
    committed = committed_offsets(cluster_id, properties, group, pairs, timeout_ms) if group else {}
    return _ClusterState(partitions, earliest, latest, committed, owners)


def _cluster_report(
    cluster_id: str,
    servers: str,
    topics: frozenset[str],
    state: _ClusterState | str,
    group: str | None,
) -> ClusterReport:
    if isinstance(state, str):
        return ClusterReport(cluster_id, servers, error=state)
    reports = []
    for topic in sorted(topics):
        if topic not in state.partitions:
            reports.append(TopicReport(topic, exists=False))
            continue
        partitions = tuple(
            PartitionReport(
                p,
                state.earliest[(topic, p)],
                state.latest[(topic, p)],
                state.committed.get((topic, p)) if group else None,
                state.owners.get((topic, p)),
            )
            for p in state.partitions[topic]
        )
        reports.append(TopicReport(topic, exists=True, partitions=partitions))
    return ClusterReport(cluster_id, servers, tuple(reports))


def build_report(
    streams: Mapping[str, KafkaStream],
    *,
    source: str,
    group: str | None = None,
    timeout_ms: int = 30000,
) -> Report:
    """Ask every cluster of ``streams`` for its partitions and offsets.

    Parameters
    ----------
    streams:
        The streams to describe, by id.
    source:
        Where the metadata came from (file or URL), shown in the report.
    group:
        A consumer group whose committed offsets and lag to show.
    timeout_ms:
        Timeout of each request to a cluster.
    """
    topics: dict[str, set[str]] = {}
    properties: dict[str, Mapping[str, str]] = {}
    for stream in streams.values():
        for cluster_id, cluster in stream.clusters.items():
            topics.setdefault(cluster_id, set()).update(cluster.topics)
            properties.setdefault(cluster_id, cluster.properties)
    states: dict[str, _ClusterState | str] = {}
    for cluster_id in sorted(topics):
        try:
            states[cluster_id] = _query(
                cluster_id, properties[cluster_id], topics[cluster_id], group, timeout_ms
            )
        except KafkaClientError as exc:
            states[cluster_id] = str(exc)
    return Report(
        source,
        group,
        tuple(
            StreamReport(
                stream_id,
                tuple(
                    _cluster_report(cid, c.bootstrap_servers, c.topics, states[cid], group)
                    for cid, c in stream.clusters.items()
                ),
            )
            for stream_id, stream in streams.items()
        ),
    )
