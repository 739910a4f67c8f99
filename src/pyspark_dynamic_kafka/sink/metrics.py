"""What one micro-batch wrote, handed from the sink's ``commit`` to the monitoring listener.

Each task returns a :class:`~pyspark_dynamic_kafka.sink.executor.task.WriteReport`; the
driver's ``commit`` adds them up (:func:`summarize`) into a :class:`BatchWrite`: rows and bytes
per topic of the micro-batch's cluster, the tasks that skipped an already committed replay and
the time spent in transactions. Spark runs ``commit`` in a Python worker of its own, not in the
driver process where :mod:`pyspark_dynamic_kafka.monitoring` listens, so the summary travels as a
file (as the source's handoff does, :mod:`pyspark_dynamic_kafka.source.contract`)::

    <tmp>/dynamic-kafka-writes-<uid>/<query id>/batch-<id>.json
    {"batchId": 7, "cluster": "west", "rows": {"orders": 120}, "bytes": {"orders": 1480},
     "tasks": 2, "skipped": 0, "transactionMs": 84}

The listener takes the file in (:func:`take_batch`) when the micro-batch's progress report
arrives; without a listener a query's directory keeps its last :data:`KEPT` files. Ids, counts
and times only: never a client property.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark_dynamic_kafka.atomic_file import replace_text
from pyspark_dynamic_kafka.sink.executor.task import WriteReport

__all__ = [
    "KEPT",
    "BatchWrite",
    "forget_query",
    "query_of",
    "record_batch",
    "summarize",
    "take_batch",
]


@dataclass(frozen=True)
class BatchWrite:
    """What the committed tasks of one micro-batch wrote.

    Parameters
    ----------
    batch_id:
        The micro-batch (``-1`` for a ``df.write``).
    cluster_id:
        The cluster written to (one per micro-batch); ``None`` when no task reported.
    rows, bytes:
        Per topic: records acknowledged, and their key and value bytes.
    tasks:
        Tasks that reported.
    skipped:
        exactlyOnce: tasks that wrote nothing because their rows were already committed (a
        retried task, a replayed micro-batch).
    transaction_ms:
        exactlyOnce: milliseconds the tasks spent in their transactions, added up.
    """

    batch_id: int
    cluster_id: str | None
    rows: Mapping[str, int] = field(default_factory=dict)
    bytes: Mapping[str, int] = field(default_factory=dict)
    tasks: int = 0
    skipped: int = 0
    transaction_ms: int = 0

    def to_json(self) -> dict[str, Any]:
        """The file's JSON object."""
        return {
            "batchId": self.batch_id,
            "cluster": self.cluster_id,
            "rows": dict(sorted(self.rows.items())),
            "bytes": dict(sorted(self.bytes.items())),
            "tasks": self.tasks,
            "skipped": self.skipped,
            "transactionMs": self.transaction_ms,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> BatchWrite:
        """Read :meth:`to_json`'s object back."""
        cluster = value.get("cluster")
        return cls(
            int(value["batchId"]),
            None if cluster is None else str(cluster),
            {str(t): int(n) for t, n in dict(value.get("rows", {})).items()},
            {str(t): int(n) for t, n in dict(value.get("bytes", {})).items()},
            int(value.get("tasks", 0)),
            int(value.get("skipped", 0)),
            int(value.get("transactionMs", 0)),
        )


#: Files a query's directory keeps when no listener takes them in.
KEPT = 100
_PREFIX = "batch-"


def summarize(batch_id: int, reports: Iterable[object]) -> BatchWrite:
    """Add up the :class:`WriteReport` among ``reports`` (a failed task's message is ``None``)."""
    rows: dict[str, int] = {}
    sizes: dict[str, int] = {}
    clusters: set[str] = set()
    tasks = skipped = elapsed = 0
    for report in reports:
        if not isinstance(report, WriteReport):
            continue
        tasks += 1
        clusters.add(report.cluster_id)
        skipped += int(report.skipped)
        elapsed += report.transaction_ms
        for topic, count in report.rows.items():
            rows[topic] = rows.get(topic, 0) + count
        for topic, size in report.topic_bytes.items():
            sizes[topic] = sizes.get(topic, 0) + size
    cluster = min(clusters) if clusters else None  # one cluster per micro-batch
    return BatchWrite(batch_id, cluster, rows, sizes, tasks, skipped, elapsed)


def query_of(reports: Iterable[object]) -> str | None:
    """The streaming query the reporting tasks belong to (``None`` for a ``df.write``)."""
    return next((r.query_id for r in reports if isinstance(r, WriteReport) and r.query_id), None)


def _root() -> Path:
    return Path(tempfile.gettempdir()) / f"dynamic-kafka-writes-{os.getuid()}"


def _directory(query_id: str) -> Path:
    if not query_id or "/" in query_id or query_id.startswith("."):
        raise ValueError(f"not a query id: {query_id!r}")
    return _root() / query_id


def record_batch(query_id: str, write: BatchWrite, kept: int = KEPT) -> Path:
    """Write ``write`` for the listener (atomically) and drop the query's files older than the
    last ``kept``; returns the file."""
    directory = _directory(query_id)
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = directory / f"{_PREFIX}{write.batch_id}.json"
    replace_text(path, json.dumps(write.to_json()))
    for old in directory.glob(f"{_PREFIX}*.json"):
        number = old.name.removeprefix(_PREFIX).removesuffix(".json")
        if number.lstrip("-").isdigit() and int(number) <= write.batch_id - kept:
            with contextlib.suppress(OSError):
                old.unlink()
    return path


def take_batch(query_id: str, batch_id: int) -> BatchWrite | None:
    """The write of micro-batch ``batch_id`` of the query, removed once read; ``None`` when the
    query's sink wrote none (not a ``dynamic_kafka`` sink, or no task reported)."""
    try:
        path = _directory(query_id) / f"{_PREFIX}{batch_id}.json"
        text = path.read_text()
        path.unlink()
    except (OSError, ValueError):
        return None
    try:
        return BatchWrite.from_json(json.loads(text))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def forget_query(query_id: str) -> None:
    """Remove the query's directory (it ended)."""
    with contextlib.suppress(OSError, ValueError):
        shutil.rmtree(_directory(query_id))
