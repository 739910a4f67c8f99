"""The checkpointed offset: one immutable value (:class:`SourceOffset`) and its one JSON codec.

:func:`encode` and :func:`decode` are the only code that knows the offset JSON Spark checkpoints::

    {"version": 1,
     "phase": "archive",                                           # hybrid reads only
     "archive": {"done": 7, "files": 24, "fingerprint": "9f0c...", "listedAtMs": 1700000000000},
     "clusters": {cluster: {topic: {"partition": next offset}}},
     "retained": {cluster: {topic: {"removedAtMs": 1732350000000, "offsets": {"0": 10}}}},
     "topicIds": {cluster: {topic: "sqRKxeUMSdalEjKW5xqE/w"}},
     "readerSchemas": {"value": {"subject": "orders-value", "version": 3,
                                 "fingerprint": "5f1c0a9e3b2d4c71"}}}

- ``clusters``: the next offset to read of every partition read now, in canonical order (clusters
  and topics sorted, partitions in numeric order), because Spark compares offsets as strings.
- ``phase`` (a query with ``archive.path`` only; an offset without it is live, so a query without
  an archive writes exactly what it always wrote): ``archive`` while the archive's files are read,
  with how far (:class:`Cursor`); ``live`` once Kafka is read.
- ``retained`` (only when something is): partitions not read now, resumed when their cluster and
  topic are assigned (:class:`Retained`, :mod:`~pyspark_dynamic_kafka.source.driver.retention`):
  removed ones with ``removedAtMs``, archived ones of a hybrid read without (kept without expiry).
- ``topicIds`` (only when known: brokers of Kafka 2.8+ report them, KIP-516): the id of each
  topic read now whose offsets ``clusters`` holds, as the listing that planned them saw it
  (:attr:`SourceOffset.topic_ids`). When a partition's offsets go back, or its topic has another
  id, the driver tells a recreated topic (another id: read from its earliest offset) from a
  truncated log (the same id: continue from its new end)
  (:mod:`~pyspark_dynamic_kafka.source.driver.went_back`). Offsets without it (older
  checkpoints, brokers without ids) decode with no ids.

- ``readerSchemas`` (only when a registry subject names an Avro reader schema,
  ``valueSubject``/``keySubject``): the subject's version the query first decoded with and the
  schema's fingerprint (:class:`NamedSchema`), written beside the offsets by
  :func:`with_reader_schemas` and read by :func:`reader_schemas_of`.

It holds ids, topics, partitions, offsets and file counts only: never a client property.
Documents written by every release since the offset JSON got ``version`` 1 decode to the same
value and encode back byte for byte (tests/unit/test_checkpoint.py keeps such documents).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.offset_spec import PartitionKey
from pyspark_dynamic_kafka.source.partition_json import (
    EARLIEST,
    OFFSET_MEANING,
    partition_map,
    shown,
)

__all__ = [
    "OFFSET_VERSION",
    "Cursor",
    "NamedSchema",
    "Retained",
    "SourceOffset",
    "decode",
    "encode",
    "reader_schemas_of",
    "with_reader_schemas",
]

OFFSET_VERSION = 1
ARCHIVE = "archive"
LIVE = "live"
RETAINED = "retained"
READER_SCHEMAS = "readerSchemas"
TOPIC_IDS = "topicIds"

TopicKey = tuple[str, str]


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


@dataclass(frozen=True)
class Retained:
    """Offsets of partitions not read now, kept until their (cluster, topic) is assigned.

    ``offsets`` holds the next offset to read of every retained partition; ``removed_at`` the
    epoch milliseconds at which each removed (cluster, topic) left the metadata: these expire
    after the retention window. A pair of ``offsets`` without an entry in ``removed_at`` never
    expires (archived partitions of a hybrid read).
    """

    offsets: Mapping[PartitionKey, int] = field(default_factory=dict)
    removed_at: Mapping[TopicKey, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.removed_at or self.offsets)

    def pairs(self) -> set[TopicKey]:
        """Every retained (cluster, topic)."""
        return {(c, t) for c, t, _ in self.offsets} | set(self.removed_at)


@dataclass(frozen=True)
class SourceOffset:
    """One checkpointed offset of the source (see the module doc).

    Attributes
    ----------
    offsets:
        Next offset to read of every partition read now (``clusters``).
    retained:
        Partitions not read now, kept until assigned.
    cursor:
        How far the archive phase is; ``None`` once live (or without an archive).
    hybrid:
        Whether the offset belongs to a hybrid read (it then says its phase, ``live`` too).
    topic_ids:
        The id of each (cluster, topic) of ``offsets`` whose broker reported one (``topicIds``).
    """

    offsets: Mapping[PartitionKey, int] = field(default_factory=dict)
    retained: Retained = field(default_factory=Retained)
    cursor: Cursor | None = None
    hybrid: bool = False
    topic_ids: Mapping[TopicKey, str] = field(default_factory=dict)

    @property
    def in_archive(self) -> bool:
        """Whether the query still reads the archive's files."""
        return self.cursor is not None


def _encode_offsets(offsets: Mapping[PartitionKey, int]) -> dict[str, dict[str, dict[str, int]]]:
    clusters: dict[str, dict[str, dict[str, int]]] = {}
    for cluster, topic, partition in sorted(offsets):
        topics = clusters.setdefault(cluster, {})
        topics.setdefault(topic, {})[str(partition)] = int(offsets[(cluster, topic, partition)])
    return clusters


def _encode_retained(retained: Retained) -> dict[str, dict[str, dict[str, Any]]]:
    block: dict[str, dict[str, dict[str, Any]]] = {}
    for cluster, topic in sorted(retained.pairs()):
        partitions = sorted(
            (p, o) for (c, t, p), o in retained.offsets.items() if (c, t) == (cluster, topic)
        )
        entry: dict[str, Any] = {}
        if (cluster, topic) in retained.removed_at:
            entry["removedAtMs"] = int(retained.removed_at[(cluster, topic)])
        entry["offsets"] = {str(p): int(o) for p, o in partitions}
        block.setdefault(cluster, {})[topic] = entry
    return block


def encode(offset: SourceOffset) -> dict[str, Any]:
    """The canonical offset dict Spark checkpoints, keys in a fixed order (see the module doc)."""
    document: dict[str, Any] = {"version": OFFSET_VERSION}
    if offset.hybrid or offset.cursor is not None:
        document["phase"] = LIVE if offset.cursor is None else ARCHIVE
    if offset.cursor is not None:
        cursor = offset.cursor
        document["archive"] = {
            "done": cursor.done,
            "files": cursor.files,
            "fingerprint": cursor.fingerprint,
            "listedAtMs": cursor.listed_at_ms,
        }
    document["clusters"] = _encode_offsets(offset.offsets)
    if offset.retained:
        document[RETAINED] = _encode_retained(offset.retained)
    read = {(c, t) for c, t, _ in offset.offsets}
    ids = {pair: i for pair, i in offset.topic_ids.items() if pair in read}
    if ids:
        block: dict[str, dict[str, str]] = {}
        for cluster, topic in sorted(ids):
            block.setdefault(cluster, {})[topic] = str(ids[(cluster, topic)])
        document[TOPIC_IDS] = block
    return document


def decode(document: Mapping[str, Any]) -> SourceOffset:
    """Read an offset dict :func:`encode` produced (e.g. from a checkpoint); keys it does not
    write (the status a stream reports beside its latest offset) are ignored.

    Raises
    ------
    OffsetsError
        When the version is unknown or the structure is not the expected one.
    """
    version = document.get("version") if isinstance(document, Mapping) else None
    if version != OFFSET_VERSION:
        raise OffsetsError(
            f"Checkpointed offset has version {shown(version)}; this release reads version "
            f"{OFFSET_VERSION}. Use the release that wrote the checkpoint, or a new checkpoint."
        )
    positions = partition_map(
        document.get("clusters", {}), "checkpointed offset", OFFSET_MEANING, EARLIEST
    )
    negative = [key for key, value in positions.items() if value < 0]
    if negative:
        raise OffsetsError(f"checkpointed offset holds negative offsets for {negative[:3]}")
    cursor = _decode_cursor(document)
    retained = _decode_retained(document)
    return SourceOffset(positions, retained, cursor, "phase" in document, _topic_ids(document))


def _topic_ids(document: Mapping[str, Any]) -> dict[TopicKey, str]:
    block = document.get(TOPIC_IDS, {})
    wrong = not isinstance(block, Mapping) or not all(
        isinstance(topics, Mapping) and all(isinstance(i, str) and i for i in topics.values())
        for topics in block.values()
    )
    if wrong:
        raise OffsetsError(
            f"checkpointed offset: {TOPIC_IDS!r} must map cluster ids to {{topic: topic id}} "
            f"(non-empty strings), got {shown(block)}. Use the release that wrote the checkpoint."
        )
    return {(str(c), str(t)): i for c, topics in block.items() for t, i in topics.items()}


def _decode_cursor(document: Mapping[str, Any]) -> Cursor | None:
    name = document.get("phase", LIVE)
    archive = document.get("archive", {})
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


def _decode_retained(document: Mapping[str, Any]) -> Retained:
    block = document.get(RETAINED)
    if block is None:
        return Retained()
    where = f"checkpointed offset, {RETAINED!r}"
    if not isinstance(block, Mapping):
        raise OffsetsError(f"{where}: expected a JSON object of cluster ids, got {block!r}.")
    removed_at: dict[TopicKey, int] = {}
    nested: dict[str, dict[str, Any]] = {}
    for cluster, topics in block.items():
        if not isinstance(topics, Mapping):
            raise OffsetsError(f"{where}: cluster {cluster!r} must map topics, got {topics!r}.")
        for topic, entry in topics.items():
            stamp = _removed_at(entry)
            if stamp is None:
                raise OffsetsError(
                    f"{where}: {cluster}/{topic} must be an object with 'removedAtMs' (epoch "
                    "ms >= 0) and 'offsets', or with non-empty 'offsets' only (archived "
                    f"partitions, kept without expiry), got {entry!r}."
                )
            if stamp >= 0:
                removed_at[(str(cluster), str(topic))] = stamp
            nested.setdefault(str(cluster), {})[str(topic)] = entry.get("offsets", {})
    offsets = partition_map(nested, where, "a next offset to read (an integer >= 0)", 0)
    return Retained(offsets, removed_at)


def _removed_at(entry: object) -> int | None:
    """An entry's ``removedAtMs``; -1 for an entry kept without expiry; ``None``: malformed."""
    if not isinstance(entry, Mapping):
        return None
    if "removedAtMs" not in entry:
        offsets = entry.get("offsets")
        return -1 if isinstance(offsets, Mapping) and offsets else None
    stamp = entry["removedAtMs"]
    return stamp if isinstance(stamp, int) and not isinstance(stamp, bool) and stamp >= 0 else None


@dataclass(frozen=True)
class NamedSchema:
    """An Avro reader schema a registry subject named: its version and fingerprint."""

    subject: str
    version: int
    fingerprint: str


def with_reader_schemas(
    document: dict[str, Any], named: Mapping[str, NamedSchema]
) -> dict[str, Any]:
    """``document`` (from :func:`encode`) with the reader schemas ``named`` (by column) added."""
    if not named:
        return document
    document[READER_SCHEMAS] = {
        column: {"subject": n.subject, "version": n.version, "fingerprint": n.fingerprint}
        for column, n in sorted(named.items())
    }
    return document


def reader_schemas_of(document: Mapping[str, Any]) -> dict[str, NamedSchema]:
    """The reader schemas an offset dict records (empty when it records none).

    Raises
    ------
    OffsetsError
        When the entry is not the expected one.
    """
    block = document.get(READER_SCHEMAS, {}) if isinstance(document, Mapping) else {}
    if not isinstance(block, Mapping):
        raise OffsetsError(f"checkpointed offset has a malformed {READER_SCHEMAS}: {shown(block)}")
    found: dict[str, NamedSchema] = {}
    for column, entry in block.items():
        try:
            found[str(column)] = NamedSchema(
                str(entry["subject"]), int(entry["version"]), str(entry["fingerprint"])
            )
        except (TypeError, KeyError, ValueError):
            raise OffsetsError(
                f"checkpointed offset has a malformed {READER_SCHEMAS} entry for {column!r}: "
                f"{shown(entry)}"
            ) from None
    return found
