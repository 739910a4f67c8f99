"""From one Spark progress report to the metrics of its ``dynamic_kafka`` sources (pure).

Spark's ``kafka`` source reports ``minOffsetsBehindLatest`` and the like in ``sources[].metrics``;
a Python data source cannot (that field stays ``{}`` on PySpark 4.3). Everything here is derived
from what the progress report does carry for each source: ``startOffset``, ``endOffset``,
``latestOffset`` (the latest offsets the source saw when it planned the micro-batch, with its
status under :data:`~pyspark_dynamic_kafka.source.contract.STATUS_KEY`), ``numInputRows``, and
the query's ``observedMetrics``.

Records read per cluster and topic are the offsets the micro-batch covered (``end - start``):
the records themselves except transaction markers and records compaction removed, which take an
offset but are not read (``numInputRows`` is the exact total).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pyspark_dynamic_kafka.source.contract import STATUS_KEY, offsets_of

__all__ = [
    "OBSERVATION",
    "BatchMetrics",
    "TopicMetrics",
    "batch_end",
    "batch_metrics",
    "offset_document",
    "query_label",
]

#: Name of the observation :func:`~pyspark_dynamic_kafka.monitoring.observe_event_time` adds.
OBSERVATION = "dynamic_kafka_event_time"
#: Its column: the largest record timestamp of the micro-batch.
MAX_TIMESTAMP = "max_timestamp"


@dataclass(frozen=True)
class TopicMetrics:
    """One (cluster, topic) after one micro-batch.

    Attributes
    ----------
    records:
        Offsets the micro-batch read (see the module's note).
    pending:
        Records available and not read yet: latest offset minus end offset, over partitions.
    partitions:
        Partitions read.
    behind:
        Offsets behind latest of each partition (for min, max and average).
    """

    records: int = 0
    pending: int = 0
    partitions: int = 0
    behind: tuple[int, ...] = ()

    def merged(self, other: TopicMetrics) -> TopicMetrics:
        """Both (two sources of one query reading the same topic)."""
        return TopicMetrics(
            self.records + other.records,
            self.pending + other.pending,
            self.partitions + other.partitions,
            self.behind + other.behind,
        )


@dataclass(frozen=True)
class BatchMetrics:
    """The ``dynamic_kafka`` part of one progress report.

    Attributes
    ----------
    query:
        The label of the query: its name, else its id.
    batch_id:
        Spark's batch id.
    time:
        When the micro-batch ended (epoch seconds).
    input_rows:
        ``numInputRows`` of the ``dynamic_kafka`` sources.
    topics:
        (cluster, topic) -> its metrics.
    clusters:
        Clusters the query reads (``kafkaClustersCount`` is their number).
    discovery:
        ``lastSuccessMs``, ``consecutiveFailures``, ``threshold`` (empty without a status).
    changes:
        The reconciliations the sources reported (``seq``, ``atMs``, clusters and topics added
        and removed, partitions entered); the same ones come again in later reports.
    max_event_time:
        The largest record timestamp of the micro-batch (epoch seconds), when the query observes
        it (:func:`~pyspark_dynamic_kafka.monitoring.observe_event_time`).
    handoffs:
        (handoff directory, end offset) of each ``assignment=group`` source: where the listener
        reports the completed micro-batch (:mod:`~pyspark_dynamic_kafka.source.contract`).
    read_paths:
        Cluster -> the engine its records are read with: ``direct`` (the compiled core's direct
        fetch path), ``librdkafka`` (the compiled core through librdkafka's consumer) or
        ``python`` (the Python reader), as the source planned it.
    """

    query: str
    batch_id: int
    time: float
    input_rows: int
    topics: dict[tuple[str, str], TopicMetrics] = field(default_factory=dict)
    clusters: tuple[str, ...] = ()
    discovery: dict[str, Any] = field(default_factory=dict)
    changes: tuple[dict[str, Any], ...] = ()
    max_event_time: float | None = None
    handoffs: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    read_paths: dict[str, str] = field(default_factory=dict)


def query_label(progress: Mapping[str, Any]) -> str:
    """The query's name, else its id."""
    return str(progress.get("name") or progress.get("id"))


def offset_document(value: Any) -> Any:
    """A source offset of a progress report (``startOffset``, ``endOffset``, ``latestOffset``)
    as the JSON value it is, ``None`` when it is none.

    PySpark 4.1+ hands it over as JSON text; PySpark 4.0's ``SourceProgress.fromJson`` as
    Python's ``str()`` of the parsed JSON (single quotes, ``True``, ``None``), which
    :func:`ast.literal_eval` reads back; a value parsed already is returned as it is.
    """
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        pass
    try:
        return ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _document(value: Any) -> Mapping[str, Any] | None:
    value = offset_document(value)
    if isinstance(value, Mapping) and "clusters" in value and "version" in value:
        return value
    return None


def _epoch(text: Any) -> float | None:
    if isinstance(text, int | float):
        return float(text) / (1000.0 if text > 1e11 else 1.0)
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _source_topics(
    source: Mapping[str, Any], end_doc: Mapping[str, Any], latest_doc: Mapping[str, Any] | None
) -> dict[tuple[str, str], TopicMetrics]:
    """Per (cluster, topic) metrics of one source, given its parsed ``endOffset`` and
    ``latestOffset``."""
    start_doc = _document(source.get("startOffset"))
    start, end, latest = offsets_of(start_doc), offsets_of(end_doc), offsets_of(latest_doc)
    status = latest_doc.get(STATUS_KEY, {}) if latest_doc is not None else {}
    planned = status.get("planned", {}) if start_doc is None else {}
    result: dict[tuple[str, str], dict[str, Any]] = {}
    for key, stop in end.items():
        cluster, topic, _ = key
        entry = result.setdefault((cluster, topic), {"records": 0, "pending": 0, "behind": []})
        if key in start:
            entry["records"] += max(stop - start[key], 0)
        if key in latest:
            behind = max(latest[key] - stop, 0)
            entry["pending"] += behind
            entry["behind"].append(behind)
    for cluster, topics in planned.items():
        for topic, count in topics.items():
            if (cluster, topic) in result:
                result[(cluster, topic)]["records"] += int(count)
    partitions: dict[tuple[str, str], int] = {}
    for cluster, topic, _ in end:
        partitions[(cluster, topic)] = partitions.get((cluster, topic), 0) + 1
    return {
        pair: TopicMetrics(e["records"], e["pending"], partitions[pair], tuple(e["behind"]))
        for pair, e in result.items()
    }


def batch_end(progress: Mapping[str, Any]) -> float:
    """When the reported micro-batch ended (epoch seconds): its start plus its duration."""
    started = _epoch(progress.get("timestamp")) or 0.0
    duration = (progress.get("durationMs") or {}).get("triggerExecution", 0)
    return started + float(duration) / 1000.0


def batch_metrics(progress: Mapping[str, Any]) -> BatchMetrics | None:
    """The metrics of the ``dynamic_kafka`` sources of ``progress`` (a progress report as JSON),
    or ``None`` when the query has none.

    A source is recognised by its offsets (``{"version": ..., "clusters": ...}``). Two such
    sources in one query are added up per cluster and topic.
    """
    topics: dict[tuple[str, str], TopicMetrics] = {}
    clusters: set[str] = set()
    discovery: dict[str, Any] = {}
    changes: dict[int, dict[str, Any]] = {}
    handed: list[tuple[str, Mapping[str, Any]]] = []
    paths: dict[str, str] = {}
    rows = 0
    found = False
    for source in progress.get("sources") or ():
        end_doc = _document(source.get("endOffset"))
        if end_doc is None:
            continue
        latest_doc = _document(source.get("latestOffset"))
        per_topic = _source_topics(source, end_doc, latest_doc)
        found = True
        rows += int(source.get("numInputRows") or 0)
        for pair, metrics in per_topic.items():
            topics[pair] = topics[pair].merged(metrics) if pair in topics else metrics
        status = latest_doc.get(STATUS_KEY) if latest_doc is not None else None
        if isinstance(status, Mapping):
            clusters.update(status.get("assignment", {}))
            paths.update({str(c): str(p) for c, p in status.get("readPaths", {}).items()})
            discovery = dict(status.get("discovery", {})) or discovery
            changes.update({int(c["seq"]): dict(c) for c in status.get("changes", ())})
            if status.get("handoff"):
                handed.append((str(status["handoff"]), end_doc))
        else:
            clusters.update(cluster for cluster, _ in per_topic)
    if not found:
        return None
    observed = (progress.get("observedMetrics") or {}).get(OBSERVATION) or {}
    return BatchMetrics(
        query=query_label(progress),
        batch_id=int(progress.get("batchId", -1)),
        time=batch_end(progress),
        input_rows=rows,
        topics=dict(sorted(topics.items())),
        clusters=tuple(sorted(clusters)),
        discovery=discovery,
        changes=tuple(changes[seq] for seq in sorted(changes)),
        max_event_time=_epoch(observed.get(MAX_TIMESTAMP)),
        handoffs=tuple(handed),
        read_paths=dict(sorted(paths.items())),
    )
