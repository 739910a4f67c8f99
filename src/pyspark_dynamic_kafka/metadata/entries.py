"""The ``streams`` section of a metadata document: each stream's entries, merged by cluster.

An entry is ``{cluster, topics[, startingOffsets][, write]}``. Entries of one stream naming the
same cluster are merged: their topics are united, ``startingOffsets`` may be given once, and the
cluster is the stream's write route when any of them says ``write: true``. Problems are reported
with their path (``streams.orders[1].write``), never a secret's value.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark_dynamic_kafka.metadata.field_checks import (
    Problems,
    check_id,
    child_path,
    parse_starting,
    parse_topics,
    render_value,
    safe_str,
    suggestion,
)
from pyspark_dynamic_kafka.metadata.model import StartingPosition

__all__ = ["ENTRY_KEYS", "StreamEntries", "parse_streams"]

#: Keys allowed in one entry of a stream.
ENTRY_KEYS: tuple[str, ...] = ("cluster", "topics", "startingOffsets", "write")


class StreamEntries:
    """The entries of one stream, merged by cluster."""

    def __init__(self) -> None:
        self.topics: dict[str, set[str]] = {}
        self.starting: dict[str, tuple[StartingPosition, str]] = {}
        self.write: set[str] = set()

    def starting_of(self, cluster_id: str) -> StartingPosition | None:
        """The ``startingOffsets`` given for ``cluster_id``, if any."""
        entry = self.starting.get(cluster_id)
        return entry[0] if entry is not None else None


def _parse_cluster(
    entry: Mapping[object, object],
    path: str,
    clusters: Mapping[str, object] | None,
    problems: Problems,
) -> str | None:
    if "cluster" not in entry:
        problems.add(
            path, "missing required key 'cluster' (the id of a cluster listed under 'clusters')."
        )
        return None
    raw = entry["cluster"]
    cluster_path = child_path(path, "cluster")
    if not isinstance(raw, str) or not raw.strip():
        problems.add(
            cluster_path,
            f"must be the id of a cluster listed under 'clusters', got {render_value(raw)}.",
        )
        return None
    if clusters is not None and raw not in clusters:
        known = ", ".join(repr(c) for c in clusters) or "none"
        problems.add(
            cluster_path,
            f"unknown cluster {raw!r}: it is not listed under 'clusters' (known: {known})."
            f"{suggestion(raw, clusters)} Add it under 'clusters' or fix the name.",
        )
        return None
    return raw


def _parse_write(entry: Mapping[object, object], path: str, problems: Problems) -> bool:
    if "write" not in entry:
        return False
    value = entry["write"]
    if not isinstance(value, bool):
        problems.add(
            child_path(path, "write"),
            "must be true or false (true marks the cluster the stream's writers produce to), "
            f"got {render_value(value)}.",
        )
        return False
    return value


def _parse_entry(
    entry: object,
    path: str,
    clusters: Mapping[str, object] | None,
    builder: StreamEntries,
    problems: Problems,
) -> None:
    if not isinstance(entry, Mapping):
        problems.add(
            path, f"must be a mapping with keys 'cluster' and 'topics', got {render_value(entry)}."
        )
        return
    for key in entry:
        if key not in ENTRY_KEYS:
            problems.add(
                child_path(path, key),
                f"unknown key {safe_str(key)!r}.{suggestion(key, ENTRY_KEYS)} Allowed keys in a "
                f"stream entry: {', '.join(ENTRY_KEYS)}.",
            )
    cluster_id = _parse_cluster(entry, path, clusters, problems)
    topics: set[str] | None = None
    if "topics" not in entry:
        problems.add(path, "missing required key 'topics' (a list of topic names).")
    else:
        topics = parse_topics(entry["topics"], child_path(path, "topics"), problems)
    write = _parse_write(entry, path, problems)
    if "startingOffsets" in entry:
        starting_path = child_path(path, "startingOffsets")
        starting = parse_starting(entry["startingOffsets"], starting_path, problems)
        if starting is not None and cluster_id is not None:
            previous = builder.starting.get(cluster_id)
            if previous is not None and previous[0] != starting:
                problems.add(
                    starting_path,
                    f"conflicts with {previous[1]} for the same cluster {cluster_id!r}: entries "
                    "for one cluster are merged, so give startingOffsets once.",
                )
            else:
                builder.starting[cluster_id] = (starting, starting_path)
    if cluster_id is not None and topics is not None:
        builder.topics.setdefault(cluster_id, set()).update(topics)
        if write:
            builder.write.add(cluster_id)


def parse_streams(
    value: object, clusters: Mapping[str, object] | None, problems: Problems
) -> dict[str, StreamEntries]:
    """Parse the ``streams`` section: stream id to its entries merged by cluster.

    Parameters
    ----------
    value:
        The decoded ``streams`` value.
    clusters:
        The cluster ids listed under ``clusters``, or ``None`` when that section is unusable
        (entries' clusters are then not checked against it).
    problems:
        Where every problem is added, with its path.
    """
    if not isinstance(value, Mapping):
        problems.add(
            "streams",
            f"must be a mapping of stream id to a list of entries, got {render_value(value)}.",
        )
        return {}
    result: dict[str, StreamEntries] = {}
    for stream_id, entries in value.items():
        path = child_path("streams", stream_id)
        valid_id = check_id(stream_id, path, "stream id", problems)
        builder = StreamEntries()
        if not isinstance(entries, list | tuple):
            problems.add(
                path,
                "must be a list of entries (each with 'cluster' and 'topics'), got "
                f"{render_value(entries)}; start each entry with '- cluster: ...'.",
            )
            continue
        for index, entry in enumerate(entries):
            _parse_entry(entry, f"{path}[{index}]", clusters, builder, problems)
        if len(builder.write) > 1:
            marked = ", ".join(repr(c) for c in sorted(builder.write))
            problems.add(
                path,
                f"more than one cluster is marked 'write: true' ({marked}): a stream is written "
                "to one cluster at a time; keep the mark on one entry.",
            )
        if valid_id:
            result[str(stream_id)] = builder
    return result
