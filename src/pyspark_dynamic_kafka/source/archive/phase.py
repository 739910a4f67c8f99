"""The phase of a hybrid read in the checkpointed offset: the archive's files, then Kafka.

The offset JSON of :mod:`~pyspark_dynamic_kafka.source.checkpoint`, extended compatibly (an offset
without ``phase`` is ``live``, so every existing checkpoint reads as before, and a query without
``archive.path`` writes exactly what it wrote before)::

    {"version": 1, "phase": "archive",
     "archive": {"done": 7, "files": 24, "fingerprint": "9f0c...", "listedAtMs": 1700000000000},
     "clusters": {cluster: {topic: {partition: next offset}}}}

    {"version": 1, "phase": "live", "clusters": {...}}

In the archive phase ``done`` of the plan's ``files`` are read and ``clusters`` holds where each
partition read from Kafka will start (the archive's switch offsets, the starting options for the
others). Archived partitions the metadata does not assign (yet) are kept under ``retained``
(:mod:`~pyspark_dynamic_kafka.source.driver.retention`), without expiry: once assigned they start
where the archive ends instead of at ``discoveryStartingOffsets``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.position import PartitionKey
from pyspark_dynamic_kafka.source.checkpoint import OFFSET_VERSION, encode_offsets

__all__ = ["ARCHIVE", "LIVE", "Cursor", "decode_phase", "encode_phase", "reject_archive"]

ARCHIVE = "archive"
LIVE = "live"


@dataclass(frozen=True)
class Cursor:
    """How far the archive phase is: ``done`` of the plan's ``files`` are read.

    Attributes
    ----------
    done, files:
        Files read, and files in the plan.
    fingerprint:
        The plan's fingerprint (see :mod:`~pyspark_dynamic_kafka.source.archive.plan`).
    listed_at_ms:
        When the archive was listed.
    """

    done: int
    files: int
    fingerprint: str
    listed_at_ms: int

    def at(self, done: int) -> Cursor:
        """The same plan with ``done`` files read."""
        return Cursor(done, self.files, self.fingerprint, self.listed_at_ms)


def encode_phase(offsets: Mapping[PartitionKey, int], cursor: Cursor | None) -> dict[str, Any]:
    """The canonical offset dict of a hybrid read, in the archive phase at ``cursor`` (``None``:
    live), keys in a fixed order (see the module doc)."""
    document: dict[str, Any] = {"version": OFFSET_VERSION}
    if cursor is None:
        document["phase"] = LIVE
    else:
        document["phase"] = ARCHIVE
        document["archive"] = {
            "done": cursor.done,
            "files": cursor.files,
            "fingerprint": cursor.fingerprint,
            "listedAtMs": cursor.listed_at_ms,
        }
    document["clusters"] = encode_offsets(offsets)["clusters"]
    return document


def decode_phase(offset: Mapping[str, Any]) -> Cursor | None:
    """How far the archive phase of a checkpointed offset is; ``None`` when it is live (an offset
    without ``phase`` is live).

    Raises
    ------
    OffsetsError
        When the phase or its archive part is malformed.
    """
    name = offset.get("phase", LIVE)
    archive = offset.get("archive", {})
    if name not in (ARCHIVE, LIVE) or not isinstance(archive, Mapping):
        raise OffsetsError(
            f"checkpointed offset: phase {name!r} with archive {archive!r} is not a phase of this "
            "release ('archive' or 'live'). Use the release that wrote the checkpoint."
        )
    if name == LIVE:
        return None
    try:
        cursor = Cursor(
            int(archive["done"]),
            int(archive["files"]),
            str(archive["fingerprint"]),
            int(archive["listedAtMs"]),
        )
    except (KeyError, TypeError, ValueError):
        raise OffsetsError(
            f"checkpointed offset: the archive phase needs done, files, fingerprint and "
            f"listedAtMs, got {dict(archive)!r}."
        ) from None
    if not 0 <= cursor.done <= cursor.files:
        raise OffsetsError(f"checkpointed offset: {cursor.done} of {cursor.files} files done.")
    return cursor


def reject_archive(offset: Mapping[str, Any]) -> None:
    """Fail for a checkpoint in the archive phase read by a query without ``archive.path``
    (going live there would skip the archive's unread files).

    Raises
    ------
    OffsetsError
        Naming the option to set back.
    """
    if offset.get("phase") == ARCHIVE:
        raise OffsetsError(
            "The checkpoint is in the archive phase of a hybrid read, but the query has no "
            "'archive.path': set it back to the archive the query started with (it switches to "
            "Kafka by itself once the archive is read)."
        )
