"""Prometheus exposition of the listener's state (``prometheus-client``).

A collector builds every series from the current state at each scrape, so the series of a
cluster or topic the query no longer reads (or of a query that ended) are simply not there any
more. Names and meanings are listed in :data:`METRICS`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from pyspark_dynamic_kafka.monitoring.state import QueryState

__all__ = ["METRICS", "StateCollector", "serve"]

_TOPIC = ("query", "cluster", "topic")
_CLUSTER = ("query", "cluster")
_PATH = ("query", "cluster", "path")
_QUERY = ("query",)

#: name -> (kind, labels, help)
METRICS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "dynamic_kafka_records": (
        "counter",
        _TOPIC,
        "Records read (offsets covered by the query's micro-batches) since the query started "
        "reading the topic on the cluster.",
    ),
    "dynamic_kafka_pending_records": (
        "gauge",
        _TOPIC,
        "Records available and not read yet at the last micro-batch (Flink's pendingRecords).",
    ),
    "dynamic_kafka_min_offsets_behind_latest": (
        "gauge",
        _TOPIC,
        "Smallest latest-minus-end offset over the topic's partitions.",
    ),
    "dynamic_kafka_max_offsets_behind_latest": (
        "gauge",
        _TOPIC,
        "Largest latest-minus-end offset over the topic's partitions.",
    ),
    "dynamic_kafka_avg_offsets_behind_latest": (
        "gauge",
        _TOPIC,
        "Average latest-minus-end offset over the topic's partitions.",
    ),
    "dynamic_kafka_partitions": ("gauge", _TOPIC, "Partitions of the topic the query reads."),
    "dynamic_kafka_clusters": (
        "gauge",
        _QUERY,
        "Clusters the query reads (Flink's kafkaClustersCount).",
    ),
    "dynamic_kafka_source_idle_seconds": (
        "gauge",
        _CLUSTER,
        "Seconds since a micro-batch last read records from the cluster (Flink's sourceIdleTime).",
    ),
    "dynamic_kafka_read_path": (
        "gauge",
        _PATH,
        "1 for the engine that reads the cluster: path direct (the compiled core's direct fetch "
        "path), librdkafka (the compiled core through librdkafka's consumer) or python (the "
        "Python reader).",
    ),
    "dynamic_kafka_discovery_failures": (
        "gauge",
        _QUERY,
        "Consecutive metadata discovery failures (the query fails above the threshold).",
    ),
    "dynamic_kafka_discovery_failure_threshold": (
        "gauge",
        _QUERY,
        "metadataDiscoveryFailureThreshold of the query.",
    ),
    "dynamic_kafka_discovery_last_success_timestamp_seconds": (
        "gauge",
        _QUERY,
        "When metadata was last read successfully (epoch seconds).",
    ),
    "dynamic_kafka_reconciliations": (
        "counter",
        _QUERY,
        "Reconciliations that changed the clusters, topics or partitions read.",
    ),
    "dynamic_kafka_emit_event_time_lag_seconds": (
        "gauge",
        _QUERY,
        "End of the last micro-batch minus its largest record timestamp (Flink's "
        "currentEmitEventTimeLag); only for queries that call observe_event_time.",
    ),
    "dynamic_kafka_written_records": (
        "counter",
        _TOPIC,
        "Records the query's dynamic_kafka sink wrote to the topic on the cluster (acknowledged; "
        "exactlyOnce: committed).",
    ),
    "dynamic_kafka_written_bytes": (
        "counter",
        _TOPIC,
        "Key and value bytes of those records.",
    ),
    "dynamic_kafka_write_route_switches": (
        "counter",
        _QUERY,
        "Micro-batches the sink wrote to another cluster than the micro-batch before them.",
    ),
    "dynamic_kafka_write_skipped_replays": (
        "counter",
        _QUERY,
        "exactlyOnce tasks that wrote nothing because their rows were already committed.",
    ),
    "dynamic_kafka_write_transaction_seconds": (
        "counter",
        _QUERY,
        "exactlyOnce: seconds the sink's tasks spent in their transactions, added up.",
    ),
}


def _family(name: str) -> Any:
    kind, labels, text = METRICS[name]
    factory = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
    return factory(name, text, labels=list(labels))


class StateCollector(Collector):
    """Builds every series from ``states()`` at each scrape.

    Parameters
    ----------
    states:
        Returns the state of every followed query (a consistent copy).
    clock:
        Wall clock in epoch seconds (for idle times).
    """

    def __init__(
        self, states: Callable[[], list[QueryState]], clock: Callable[[], float] = time.time
    ) -> None:
        self._states = states
        self._clock = clock

    def collect(self) -> Iterator[Metric]:
        """Every family, with one sample per live label set."""
        families = {name: _family(name) for name in METRICS}
        now = self._clock()
        for state in self._states():
            _add_writes(families, state)
            metrics = state.last
            if metrics is None:
                continue
            query = state.query
            for (cluster, topic), m in metrics.topics.items():
                labels = [query, cluster, topic]
                families["dynamic_kafka_records"].add_metric(
                    labels, state.totals.get((cluster, topic), 0)
                )
                families["dynamic_kafka_pending_records"].add_metric(labels, m.pending)
                families["dynamic_kafka_partitions"].add_metric(labels, m.partitions)
                behind = m.behind or (0,)
                families["dynamic_kafka_min_offsets_behind_latest"].add_metric(labels, min(behind))
                families["dynamic_kafka_max_offsets_behind_latest"].add_metric(labels, max(behind))
                families["dynamic_kafka_avg_offsets_behind_latest"].add_metric(
                    labels, sum(behind) / len(behind)
                )
            clusters = state.clusters(metrics)
            families["dynamic_kafka_clusters"].add_metric([query], len(clusters))
            for cluster in clusters:
                families["dynamic_kafka_source_idle_seconds"].add_metric(
                    [query, cluster], state.idle_seconds(cluster, now)
                )
                path = metrics.read_paths.get(cluster)
                if path is not None:
                    families["dynamic_kafka_read_path"].add_metric([query, cluster, path], 1)
            discovery = metrics.discovery
            if discovery:
                families["dynamic_kafka_discovery_failures"].add_metric(
                    [query], discovery.get("consecutiveFailures", 0)
                )
                families["dynamic_kafka_discovery_failure_threshold"].add_metric(
                    [query], discovery.get("threshold", 0)
                )
                if discovery.get("lastSuccessMs") is not None:
                    families["dynamic_kafka_discovery_last_success_timestamp_seconds"].add_metric(
                        [query], discovery["lastSuccessMs"] / 1000.0
                    )
            families["dynamic_kafka_reconciliations"].add_metric([query], state.reconciliations)
            if metrics.max_event_time is not None:
                families["dynamic_kafka_emit_event_time_lag_seconds"].add_metric(
                    [query], metrics.time - metrics.max_event_time
                )
        yield from families.values()


def _add_writes(families: dict[str, Any], state: QueryState) -> None:
    """The series of what the query's ``dynamic_kafka`` sink wrote (none when it has none)."""
    writes = state.writes
    if not writes.batches:
        return
    for (cluster, topic), count in writes.rows.items():
        labels = [state.query, cluster, topic]
        families["dynamic_kafka_written_records"].add_metric(labels, count)
        families["dynamic_kafka_written_bytes"].add_metric(
            labels, writes.bytes.get((cluster, topic), 0)
        )
    query = [state.query]
    families["dynamic_kafka_write_route_switches"].add_metric(query, writes.route_switches)
    families["dynamic_kafka_write_skipped_replays"].add_metric(query, writes.skipped_replays)
    families["dynamic_kafka_write_transaction_seconds"].add_metric(
        query, writes.transaction_ms / 1000.0
    )


def serve(collector: StateCollector, port: int, host: str) -> tuple[Any, Any, int]:
    """Serve ``collector`` over HTTP (``/metrics``, any path); return (server, thread, port)."""
    from prometheus_client import start_http_server

    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    server, thread = start_http_server(port, addr=host, registry=registry)
    return server, thread, int(server.server_address[1])
