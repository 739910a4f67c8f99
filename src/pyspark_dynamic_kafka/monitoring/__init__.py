"""Metrics of ``dynamic_kafka`` queries per cluster and topic, for people and Prometheus.

``attach(spark)`` registers a :class:`~pyspark.sql.streaming.StreamingQueryListener` on the
driver that follows every ``dynamic_kafka`` query of the session: records read, pending records
and offsets behind latest per cluster and topic, clusters read, idle time per cluster, metadata
discovery outcome and reconciliations. With ``prometheus_port`` it serves them in Prometheus'
text format (names in :data:`~pyspark_dynamic_kafka.monitoring.prometheus.METRICS`); with
``path`` it appends one JSON line per micro-batch, which ``dynamic-kafka report`` draws.
Needs the ``monitoring`` extra (``prometheus-client``; ``matplotlib`` for the report).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark_dynamic_kafka.errors import DynamicKafkaError
from pyspark_dynamic_kafka.monitoring.listener import DynamicKafkaListener
from pyspark_dynamic_kafka.monitoring.progress import MAX_TIMESTAMP, OBSERVATION

__all__ = ["MonitorHandle", "attach", "observe_event_time"]

_log = logging.getLogger(__name__)


@dataclass
class MonitorHandle:
    """What :func:`attach` returns.

    Attributes
    ----------
    listener:
        The registered listener (its ``states()`` are the current metrics).
    port:
        The port Prometheus scrapes (``None`` without exposition).
    path:
        The JSON-lines file (``None`` without one).
    """

    spark: Any
    listener: DynamicKafkaListener
    port: int | None = None
    path: Path | None = None
    _server: Any = None

    def detach(self) -> None:
        """Unregister the listener, stop serving and close the file."""
        self.spark.streams.removeListener(self.listener)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self.listener.close()


def attach(
    spark: Any,
    *,
    prometheus_port: int | None = None,
    path: str | Path | None = None,
    host: str = "127.0.0.1",
) -> MonitorHandle:
    """Follow every ``dynamic_kafka`` query of ``spark`` (running or started later).

    Parameters
    ----------
    spark:
        The SparkSession (classic PySpark: the listener runs in this driver process).
    prometheus_port:
        Serve Prometheus exposition on this port (``0``: any free port, see
        :attr:`MonitorHandle.port`); ``None``: no exposition.
    path:
        Append one JSON line per micro-batch to this file.
    host:
        Address the exposition binds to (loopback by default; ``0.0.0.0`` exposes it).
    """
    listener = DynamicKafkaListener(path)
    server = port = None
    if prometheus_port is not None:
        try:
            from pyspark_dynamic_kafka.monitoring.prometheus import StateCollector, serve
        except ModuleNotFoundError as exc:
            raise DynamicKafkaError(
                f"prometheus_port needs prometheus-client ({exc.name} is not installed): "
                "pip install 'pyspark-dynamic-kafka[monitoring]'"
            ) from None

        server, _, port = serve(StateCollector(listener.states), prometheus_port, host)
        _log.info("Serving dynamic_kafka metrics on http://%s:%d/metrics", host, port)
    spark.streams.addListener(listener)
    return MonitorHandle(spark, listener, port, Path(path) if path else None, server)


def observe_event_time(df: Any) -> Any:
    """``df`` observing the largest record ``timestamp`` of each micro-batch.

    The listener then reports ``currentEmitEventTimeLag`` (end of the micro-batch minus that
    timestamp). Costs one aggregate over the batch's rows (see docs/benchmarks.md).
    """
    from pyspark.sql import functions as F

    return df.observe(OBSERVATION, F.max("timestamp").alias(MAX_TIMESTAMP))
