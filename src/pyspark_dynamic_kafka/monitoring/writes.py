"""Write metrics of a query with a ``dynamic_kafka`` sink: running totals per cluster and topic.

The sink's ``commit`` hands each micro-batch's :class:`~pyspark_dynamic_kafka.sink.metrics.
BatchWrite` to the listener (:mod:`pyspark_dynamic_kafka.sink.metrics`); :class:`WriteTotals`
adds them up: rows and bytes per (cluster, topic), route switches (a micro-batch written to
another cluster than the micro-batch written before it), skipped replays and transaction time.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from pyspark_dynamic_kafka.sink.metrics import BatchWrite

__all__ = ["WriteTotals"]


@dataclass
class WriteTotals:
    """What a query's sink wrote since the query (run) started.

    Attributes
    ----------
    rows, bytes:
        Per (cluster, topic): records acknowledged, and their key and value bytes.
    batches:
        Micro-batches whose write was reported.
    route_switches:
        Micro-batches written to another cluster than the micro-batch written before them.
    skipped_replays:
        exactlyOnce tasks that wrote nothing: their rows were already committed.
    transaction_ms:
        exactlyOnce: milliseconds spent in transactions, all tasks added up.
    cluster:
        The cluster of the last micro-batch written (``None`` before the first).
    time:
        When the last reported micro-batch ended (epoch seconds).
    last:
        The last micro-batch's write.
    """

    rows: dict[tuple[str, str], int] = field(default_factory=dict)
    bytes: dict[tuple[str, str], int] = field(default_factory=dict)
    batches: int = 0
    route_switches: int = 0
    skipped_replays: int = 0
    transaction_ms: int = 0
    cluster: str | None = None
    time: float = 0.0
    last: BatchWrite | None = None

    def add(self, write: BatchWrite, time: float) -> None:
        """Take one micro-batch's write in (``time``: when the micro-batch ended)."""
        self.batches += 1
        self.skipped_replays += write.skipped
        self.transaction_ms += write.transaction_ms
        if write.cluster_id is not None:
            if self.cluster is not None and write.cluster_id != self.cluster:
                self.route_switches += 1
            self.cluster = write.cluster_id
            for topic, count in write.rows.items():
                pair = (write.cluster_id, topic)
                self.rows[pair] = self.rows.get(pair, 0) + count
            for topic, size in write.bytes.items():
                pair = (write.cluster_id, topic)
                self.bytes[pair] = self.bytes.get(pair, 0) + size
        self.time = time
        self.last = write

    def copy(self) -> WriteTotals:
        """An independent copy."""
        return replace(self, rows=dict(self.rows), bytes=dict(self.bytes))

    def to_json(self) -> dict[str, Any]:
        """The ``writes`` object of a JSON line: totals, and the last micro-batch's write."""
        clusters: dict[str, dict[str, Any]] = {}
        for (cluster, topic), count in sorted(self.rows.items()):
            entry = clusters.setdefault(cluster, {"rowsTotal": 0, "bytesTotal": 0, "topics": {}})
            size = self.bytes.get((cluster, topic), 0)
            entry["rowsTotal"] += count
            entry["bytesTotal"] += size
            entry["topics"][topic] = {"rowsTotal": count, "bytesTotal": size}
        return {
            "cluster": self.cluster,
            "batches": self.batches,
            "routeSwitches": self.route_switches,
            "skippedReplays": self.skipped_replays,
            "transactionMsTotal": self.transaction_ms,
            "clusters": clusters,
            "last": None if self.last is None else self.last.to_json(),
        }
