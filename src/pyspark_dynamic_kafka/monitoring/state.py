"""What the listener keeps per query between progress reports, and the JSON line of a report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyspark_dynamic_kafka.monitoring.progress import BatchMetrics
from pyspark_dynamic_kafka.monitoring.writes import WriteTotals

__all__ = ["QueryState"]


@dataclass
class QueryState:
    """Running totals of one query: records per (cluster, topic), when each cluster last gave
    records, the reconciliations already seen, the last :class:`BatchMetrics` (of its
    ``dynamic_kafka`` sources) and what its ``dynamic_kafka`` sink wrote.

    Attributes
    ----------
    query:
        The query's label (name, else id).
    run_id:
        The run the state belongs to (a restarted query starts a new state).
    """

    query: str
    run_id: str
    totals: dict[tuple[str, str], int] = field(default_factory=dict)
    last_read: dict[str, float] = field(default_factory=dict)
    seen_seq: int = 0
    reconciliations: int = 0
    last: BatchMetrics | None = None
    writes: WriteTotals = field(default_factory=WriteTotals)

    def update(self, metrics: BatchMetrics) -> list[dict[str, Any]]:
        """Take one report in; return the reconciliations not seen before.

        Series of clusters and topics the query no longer reads are dropped here, so they
        vanish from every exposition built from this state.
        """
        for pair, topic in metrics.topics.items():
            self.totals[pair] = self.totals.get(pair, 0) + topic.records
            if topic.records:
                self.last_read[pair[0]] = metrics.time
        for pair in [p for p in self.totals if p not in metrics.topics]:
            del self.totals[pair]
        live = set(self.clusters(metrics))
        for cluster in live:
            self.last_read.setdefault(cluster, metrics.time)
        for cluster in [c for c in self.last_read if c not in live]:
            del self.last_read[cluster]
        fresh = [c for c in metrics.changes if int(c["seq"]) > self.seen_seq]
        if fresh:
            self.seen_seq = max(int(c["seq"]) for c in fresh)
            self.reconciliations += len(fresh)
        self.last = metrics
        return fresh

    @staticmethod
    def clusters(metrics: BatchMetrics) -> list[str]:
        """The clusters read: the source's assignment and every cluster with a topic read."""
        return sorted({*metrics.clusters, *(cluster for cluster, _ in metrics.topics)})

    def idle_seconds(self, cluster: str, now: float) -> float:
        """Seconds since ``cluster`` last gave records (or since the query first read it)."""
        return max(now - self.last_read.get(cluster, now), 0.0)

    def line(self, fresh: list[dict[str, Any]]) -> dict[str, Any]:
        """The JSON line of the last report (``fresh``: its new reconciliations)."""
        metrics = self.last
        if metrics is None:
            if self.writes.last is None:
                return {}
            return {  # a query that only writes with dynamic_kafka
                "time": round(self.writes.time, 3),
                "query": self.query,
                "runId": self.run_id,
                "batchId": self.writes.last.batch_id,
                "writes": self.writes.to_json(),
            }
        clusters: dict[str, dict[str, Any]] = {}
        for cluster in self.clusters(metrics):
            clusters[cluster] = {
                "records": 0,
                "pending": 0,
                "idleSeconds": round(self.idle_seconds(cluster, metrics.time), 3),
                "readPath": metrics.read_paths.get(cluster),
                "topics": {},
            }
        for (cluster, topic), m in metrics.topics.items():
            entry = clusters[cluster]
            entry["records"] += m.records
            entry["pending"] += m.pending
            entry["topics"][topic] = {
                "records": m.records,
                "recordsTotal": self.totals.get((cluster, topic), 0),
                "pending": m.pending,
                "partitions": m.partitions,
                "minOffsetsBehindLatest": min(m.behind, default=0),
                "maxOffsetsBehindLatest": max(m.behind, default=0),
                "avgOffsetsBehindLatest": (sum(m.behind) / len(m.behind)) if m.behind else 0.0,
            }
        lag = None if metrics.max_event_time is None else metrics.time - metrics.max_event_time
        return {
            "time": round(metrics.time, 3),
            "query": self.query,
            "runId": self.run_id,
            "batchId": metrics.batch_id,
            "numInputRows": metrics.input_rows,
            "kafkaClustersCount": len(clusters),
            "clusters": clusters,
            "discovery": metrics.discovery,
            "reconciliations": fresh,
            "currentEmitEventTimeLagSeconds": None if lag is None else round(lag, 3),
        } | ({"writes": self.writes.to_json()} if self.writes.batches else {})
