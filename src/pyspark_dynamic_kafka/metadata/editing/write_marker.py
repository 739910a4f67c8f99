"""The write marker of a stream's entries: which cluster its writers produce to (pure).

A stream's writers produce to the cluster whose entry says ``write: true``, else to its only
cluster (:mod:`pyspark_dynamic_kafka.sink.route`). A migration flips the marker from one
listed cluster to another while readers keep reading both: :func:`flipped_entries` is that
edit on a stream's entries as written in a metadata document.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark_dynamic_kafka.errors import MetadataValidationError

__all__ = ["flipped_entries", "written_cluster"]


def _on(entries: Sequence[Mapping[str, Any]]) -> str:
    clusters = sorted({str(e.get("cluster")) for e in entries})
    return ", ".join(repr(c) for c in clusters) or "no cluster"


def written_cluster(entries: Sequence[Mapping[str, Any]]) -> str | None:
    """The cluster the entries route writes to: the one marked ``write: true``, else the only
    cluster, else ``None`` (no route)."""
    marked = {str(e.get("cluster")) for e in entries if e.get("write") is True}
    listed = {str(e.get("cluster")) for e in entries}
    if len(marked) == 1:
        return marked.pop()
    return listed.pop() if not marked and len(listed) == 1 else None


def flipped_entries(
    entries: Sequence[Mapping[str, Any]], stream_id: str, source: str, target: str
) -> list[dict[str, Any]]:
    """A stream's entries with its writes moved from cluster ``source`` to cluster ``target``.

    The first entry on ``target`` gets ``write: true``; every other entry loses it. Topics,
    starting offsets and the order of the entries are kept, so readers keep reading both
    clusters.

    Raises
    ------
    MetadataValidationError
        When ``source`` and ``target`` are the same, the stream has no entry on either, or its
        writes go to a cluster other than ``source`` (a marker elsewhere).
    """
    if source == target:
        raise MetadataValidationError(
            f"Cannot move the writes of stream {stream_id!r} from cluster {source!r} to itself: "
            "name two different clusters."
        )
    for cluster, role in ((source, "writes leave"), (target, "writes go to")):
        if not any(e.get("cluster") == cluster for e in entries):
            raise MetadataValidationError(
                f"Stream {stream_id!r} has no entry on cluster {cluster!r}, which its {role} (it "
                f"is on: {_on(entries)}). Add an entry for the stream on {cluster!r} first."
            )
    current = written_cluster(entries)
    marked = any(e.get("write") is True for e in entries)
    if current != source and marked:
        raise MetadataValidationError(
            f"The writes of stream {stream_id!r} go to cluster {current!r}, not {source!r}: "
            f"move them from {current!r} (the cluster of its entry marked 'write: true')."
        )
    result: list[dict[str, Any]] = []
    placed = False
    for entry in entries:
        edited = copy.deepcopy(dict(entry))
        edited.pop("write", None)
        if entry.get("cluster") == target and not placed:
            edited["write"] = True
            placed = True
        elif entry.get("write") is False:
            edited["write"] = False
        result.append(edited)
    return result
