"""The metadata document (``clusters`` + ``streams``): parse, validate and dump it, without I/O.

The document is what a metadata file holds once decoded from YAML or JSON::

    clusters:
      east:
        bootstrap.servers: 127.0.0.1:19092
        # any other client property: security.protocol, sasl.mechanism, sasl.password, ...
      west:
        bootstrap.servers: 127.0.0.1:29092
    streams:
      orders:
        - cluster: east
          topics: [orders]
      payments:
        - cluster: east
          topics: [payments-v1, payments-v2]
        - cluster: west
          topics: [payments]

Rules:

- ``clusters`` and ``streams`` are both required; no other top-level key is allowed.
- ``clusters`` maps a cluster id to its client properties. ``bootstrap.servers`` is required.
  Values are strings, numbers or booleans; numbers and booleans become strings (``true``,
  ``false``). A cluster is *active* iff it is listed here.
- ``streams`` maps a stream id to a list of entries. Each entry has ``cluster`` (a cluster listed
  under ``clusters``), ``topics`` (a list of Kafka topic names) and optionally
  ``startingOffsets`` (``earliest``, ``latest`` or ``{timestamp: <epoch ms>}``): where the
  entry's topics start when a query first reads that cluster (kept as
  :attr:`ClusterMetadata.starting_position`), and ``write`` (``true`` or ``false``, default
  ``false``): ``true`` marks the cluster the stream's writers produce to (kept as
  :attr:`ClusterMetadata.write`; the sink's route, :mod:`pyspark_dynamic_kafka.sink.route`).
  Entries are parsed by :mod:`~pyspark_dynamic_kafka.metadata.entries`.
- Two entries of one stream naming the same cluster are **merged** (their topics are united); they
  may not give different ``startingOffsets``. An empty ``topics`` list or an empty list of entries
  is allowed (the stream then reads nothing there).

The functions here are pure so that the file service, an HTTP service and a command-line
``validate`` can share them. Error messages never contain the value of a secret property (see
:func:`~pyspark_dynamic_kafka.kafka.config.is_secret_key`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark_dynamic_kafka.errors import MetadataValidationError
from pyspark_dynamic_kafka.kafka.config import FrozenProperties, redact
from pyspark_dynamic_kafka.metadata.entries import StreamEntries, parse_streams
from pyspark_dynamic_kafka.metadata.field_checks import (
    Problems,
    child_path,
    collect_secrets,
    parse_clusters,
    render_value,
    safe_str,
    suggestion,
)
from pyspark_dynamic_kafka.metadata.model import ClusterMetadata, KafkaStream, StartingPosition

__all__ = [
    "TOP_LEVEL_KEYS",
    "DuplicateKeyError",
    "ParsedMetadata",
    "dump_metadata_document",
    "format_problems",
    "parse_metadata_document",
    "unique_json_object",
    "validate_metadata_document",
]

#: Keys allowed at the top level of a metadata document.
TOP_LEVEL_KEYS: tuple[str, ...] = ("clusters", "streams")


class DuplicateKeyError(ValueError):
    """A JSON object gives one key twice (the message says which; ``key`` holds it)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r} in one object")
        self.key = key


def unique_json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for :func:`json.loads` that refuses duplicate keys.

    Raises
    ------
    DuplicateKeyError
        When a key appears twice in one object (plain ``json`` would keep the last silently).
    """
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise DuplicateKeyError(key)
        result[key] = value
    return result


@dataclass(frozen=True)
class ParsedMetadata:
    """A validated metadata document.

    Not hashable (it holds dictionaries); compare with ``==``. ``repr`` masks secrets.

    Parameters
    ----------
    clusters:
        Every active cluster id (those listed under ``clusters``) to its client properties.
    streams:
        Stream id to stream; each stream's cluster properties are those of ``clusters``.
    starting_offsets:
        ``(stream id, cluster id)`` to the entry's ``startingOffsets``, when given. It is kept in
        step with :attr:`ClusterMetadata.starting_position` of ``streams``: a position given here
        is set on the stream's cluster, and a cluster's position is listed here.
    """

    clusters: Mapping[str, Mapping[str, str]]
    streams: Mapping[str, KafkaStream]
    starting_offsets: Mapping[tuple[str, str], StartingPosition] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "clusters", {cid: FrozenProperties(p) for cid, p in self.clusters.items()}
        )
        starting = dict(self.starting_offsets)
        streams = {sid: _with_positions(s, starting) for sid, s in self.streams.items()}
        object.__setattr__(self, "streams", streams)
        object.__setattr__(self, "starting_offsets", starting)

    @property
    def active_clusters(self) -> frozenset[str]:
        """The ids of the active clusters (those listed under ``clusters``)."""
        return frozenset(self.clusters)


def _with_positions(
    stream: KafkaStream, starting: dict[tuple[str, str], StartingPosition]
) -> KafkaStream:
    """Align a stream's cluster positions with ``starting`` (which wins) and fill ``starting``."""
    clusters: dict[str, ClusterMetadata] = {}
    changed = False
    for cluster_id, cluster in stream.clusters.items():
        position = starting.get((stream.stream_id, cluster_id), cluster.starting_position)
        if position is not None:
            starting[(stream.stream_id, cluster_id)] = position
        if position != cluster.starting_position:
            cluster = dataclasses.replace(cluster, starting_position=position)
            changed = True
        clusters[cluster_id] = cluster
    return KafkaStream(stream.stream_id, clusters) if changed else stream


def _parse(data: object) -> tuple[ParsedMetadata | None, list[str]]:
    problems = Problems()
    if data is None:
        problems.add(
            "", "the document is empty; it must be a mapping with keys 'clusters' and 'streams'."
        )
        return None, problems.items
    if not isinstance(data, Mapping):
        problems.add(
            "",
            f"must be a mapping with keys 'clusters' and 'streams', got {render_value(data)}.",
        )
        return None, problems.items
    for key in data:
        if key not in TOP_LEVEL_KEYS:
            problems.add(
                child_path("", key),
                f"unknown top-level key {safe_str(key)!r}.{suggestion(key, TOP_LEVEL_KEYS)} "
                f"Allowed keys: {', '.join(TOP_LEVEL_KEYS)}.",
            )
    clusters: dict[str, dict[str, str] | None] = {}
    checkable = False
    if "clusters" not in data:
        problems.add(
            "",
            "missing required key 'clusters' (cluster id to client properties; "
            "use 'clusters: {}' for none).",
        )
    else:
        clusters, checkable = parse_clusters(data["clusters"], problems)
    builders: dict[str, StreamEntries] = {}
    if "streams" not in data:
        problems.add(
            "",
            "missing required key 'streams' (stream id to a list of entries; "
            "use 'streams: {}' for none).",
        )
    else:
        builders = parse_streams(data["streams"], clusters if checkable else None, problems)
    secrets: set[str] = set()
    collect_secrets(data, secrets)
    messages = [redact(item, secrets) for item in problems.items]
    if messages:
        return None, messages
    properties = {cid: FrozenProperties(p or {}) for cid, p in clusters.items()}
    streams = {
        stream_id: KafkaStream(
            stream_id,
            {
                cid: ClusterMetadata(
                    frozenset(topics),
                    properties[cid],
                    builder.starting_of(cid),
                    write=cid in builder.write,
                )
                for cid, topics in builder.topics.items()
            },
        )
        for stream_id, builder in builders.items()
    }
    starting = {
        (stream_id, cid): position
        for stream_id, builder in builders.items()
        for cid, (position, _path) in builder.starting.items()
    }
    return ParsedMetadata(properties, streams, starting), []


def format_problems(source: str, problems: list[str]) -> str:
    """Join ``path: message`` problems into one error message naming ``source``."""
    if len(problems) == 1:
        return f"Invalid metadata in {source}: {problems[0]}"
    lines = "\n".join(f"  - {p}" for p in problems)
    return f"Invalid metadata in {source} ({len(problems)} problems):\n{lines}"


def validate_metadata_document(data: object, source: str) -> list[str]:
    """Return every problem of a decoded metadata document, as ``path: message`` strings.

    Parameters
    ----------
    data:
        The decoded document (what ``yaml.safe_load`` or ``json.loads`` returned).
    source:
        Where the document comes from (a file path or URL); unused in the problems themselves,
        which :func:`format_problems` prefixes with it.

    Returns
    -------
    list[str]
        Empty when the document is valid. Paths look like ``streams.payments[1].cluster``.
    """
    del source  # the problems are relative to the document; callers add the source
    return _parse(data)[1]


def parse_metadata_document(data: object, source: str) -> ParsedMetadata:
    """Validate a decoded metadata document and return its streams and active clusters.

    Parameters
    ----------
    data:
        The decoded document (what ``yaml.safe_load`` or ``json.loads`` returned).
    source:
        Where the document comes from (a file path or URL), named in the error message.

    Raises
    ------
    MetadataValidationError
        Listing every problem, each with its path inside the document.
    """
    parsed, problems = _parse(data)
    if parsed is None:
        raise MetadataValidationError(format_problems(source, problems), problems)
    return parsed


def dump_metadata_document(parsed: ParsedMetadata) -> dict[str, Any]:
    """Return the document of ``parsed``: ``parse_metadata_document`` of it gives it back.

    Secrets are included: the result is meant to be written to the metadata file, never logged.
    Each stream gets one entry per cluster (merged entries stay merged), topics sorted.
    """
    clusters = {cid: dict(properties) for cid, properties in parsed.clusters.items()}
    streams: dict[str, list[dict[str, Any]]] = {}
    for stream_id, stream in parsed.streams.items():
        entries: list[dict[str, Any]] = []
        for cluster_id, cluster in stream.clusters.items():
            entry: dict[str, Any] = {"cluster": cluster_id, "topics": sorted(cluster.topics)}
            position = parsed.starting_offsets.get((stream_id, cluster_id))
            if position is not None:
                entry["startingOffsets"] = position.to_document()
            if cluster.write:
                entry["write"] = True
            entries.append(entry)
        streams[stream_id] = entries
    return {"clusters": clusters, "streams": streams}
