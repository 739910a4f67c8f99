"""What the source writes and the driver's monitoring listener reads: the one contract between
them (as :mod:`pyspark_dynamic_kafka.metadata.http_api.wire` is for the HTTP metadata service).

**The status.** A Python data source cannot fill ``sources[].metrics`` of a progress report, but
what ``reportLatestOffset`` returns shows in every report as ``sources[].latestOffset``: the
latest offsets (the offset JSON of :mod:`~pyspark_dynamic_kafka.source.checkpoint`) plus, under
:data:`STATUS_KEY`, a :class:`Status` (ids, offsets and counts only, never a client property)::

    {"version": 1, "clusters": {...latest offsets...},
     "dynamicKafka": {
        "assignment": {"east": ["orders"], "west": ["orders"]},
        "discovery": {"lastSuccessMs": 1700000000000, "consecutiveFailures": 0, "threshold": 1},
        "changes": [{"seq": 2, "atMs": ..., "clustersAdded": ["west"], "clustersRemoved": [],
                     "topicsAdded": ["west/orders"], "topicsRemoved": [], "partitionsEntered": 3,
                     "partitionsLeft": 0}],
        "planned": {"east": {"orders": 120}},
        "readPaths": {"east": "direct", "west": "librdkafka"},
        "dataLoss": [{"partition": "east/orders/0", "what": "the topic was recreated (...)",
                      "nextOffset": 10, "latestOffset": 4}],       # once there was any
        "handoff": "/tmp/dynamic-kafka-handoff-..."}}            # assignment=group only

**The handoff.** With ``assignment=group`` the reader (in the source's Python process) names a
private directory under ``handoff``; the listener writes there one file per completed
micro-batch (:func:`write_completed`: ``batch-<id>.json`` with its end offset) and
``terminated`` once the query ended (:func:`write_terminated`); the reader takes them in
(:func:`read_completed`, :func:`terminated`). Files only: no port, no secret.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

from pyspark_dynamic_kafka.atomic_file import replace_text
from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.offset_spec import PartitionKey
from pyspark_dynamic_kafka.source.checkpoint import decode

__all__ = [
    "HANDOFF_PREFIX",
    "STATUS_KEY",
    "Status",
    "offsets_of",
    "read_completed",
    "terminated",
    "write_completed",
    "write_terminated",
]

#: Key of the status in the reported latest offset.
STATUS_KEY = "dynamicKafka"
#: Name prefix of a completed micro-batch's file in a handoff directory.
HANDOFF_PREFIX = "batch-"
_TERMINATED = "terminated"


class _Reported(TypedDict, total=False):
    """The keys of a status present only when they have something to say."""

    dataLoss: list[dict[str, Any]]
    handoff: str


class Status(_Reported):
    """The status under :data:`STATUS_KEY` (see the module doc)."""

    assignment: dict[str, list[str]]
    discovery: dict[str, Any]
    changes: list[dict[str, Any]]
    planned: dict[str, dict[str, int]]
    readPaths: dict[str, str]


def offsets_of(document: Mapping[str, Any] | None) -> dict[PartitionKey, int]:
    """The offsets of a reported offset (a status beside them is ignored); none when absent or
    not an offset of this source."""
    if document is None:
        return {}
    try:
        return dict(decode(document).offsets)
    except OffsetsError:
        return {}


def _write(directory: Path, name: str, text: str) -> None:
    """Write ``directory/name`` atomically; a directory gone (reader ended) is no error."""
    with contextlib.suppress(OSError):
        replace_text(directory / name, text)


def write_completed(directory: str, batch_id: int, end_offset: Mapping[str, Any]) -> None:
    """Tell the reader of ``directory`` that micro-batch ``batch_id`` ended at ``end_offset``."""
    document = json.dumps({"batchId": batch_id, "endOffset": end_offset})
    _write(Path(directory), f"{HANDOFF_PREFIX}{batch_id:020d}.json", document)


def write_terminated(directory: str) -> None:
    """Tell the reader of ``directory`` that its query ended: no batch completes any more."""
    _write(Path(directory), _TERMINATED, "")


def read_completed(path: Path) -> Mapping[str, Any] | None:
    """The end offset in a file :func:`write_completed` wrote (``None``: not such a file)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    end = document.get("endOffset") if isinstance(document, Mapping) else None
    if isinstance(end, str):
        try:
            end = json.loads(end)
        except ValueError:
            return None
    return end if isinstance(end, Mapping) else None


def terminated(directory: Path) -> bool:
    """Whether the listener said the query of ``directory`` ended."""
    return (directory / _TERMINATED).exists()
