"""The driver-side listener: follows every ``dynamic_kafka`` query of a SparkSession.

It runs in the driver's Python process, on Spark's listener bus (never on the query's own
thread): each progress report of a query with a ``dynamic_kafka`` source updates that query's
:class:`~pyspark_dynamic_kafka.monitoring.state.QueryState`, appends one JSON line to ``path``
when given, and logs each new reconciliation as one structured line (event ``reconciliation``).
For a source with ``assignment=group`` it also tells the source each completed micro-batch and
the query's end (:mod:`~pyspark_dynamic_kafka.source.contract`), so the source commits every
micro-batch to the group at once, the last one before a ``query.stop()`` included.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

from pyspark.sql.streaming.listener import StreamingQueryListener

from pyspark_dynamic_kafka.events import log_event
from pyspark_dynamic_kafka.monitoring.progress import (
    BatchMetrics,
    batch_end,
    batch_metrics,
    query_label,
)
from pyspark_dynamic_kafka.monitoring.state import QueryState
from pyspark_dynamic_kafka.sink.metrics import forget_query, take_batch
from pyspark_dynamic_kafka.source.contract import write_completed, write_terminated

__all__ = ["DynamicKafkaListener"]

_log = logging.getLogger(__name__)


class DynamicKafkaListener(StreamingQueryListener):  # type: ignore[misc]
    """Keeps a :class:`QueryState` per running ``dynamic_kafka`` query.

    Parameters
    ----------
    path:
        JSON-lines file to append one line per progress report to, or ``None``.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._states: dict[str, QueryState] = {}
        self._handoffs: dict[str, set[str]] = {}
        self._path = Path(path) if path is not None else None
        self._file: Any = None
        if self._path is not None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self._path.open("a", encoding="utf-8")

    def states(self) -> list[QueryState]:
        """A copy of the state of every followed query."""
        with self._lock:
            return [
                QueryState(
                    s.query,
                    s.run_id,
                    dict(s.totals),
                    dict(s.last_read),
                    s.seen_seq,
                    s.reconciliations,
                    s.last,
                    s.writes.copy(),
                )
                for s in self._states.values()
            ]

    def record(self, progress: dict[str, Any]) -> BatchMetrics | None:
        """Take one progress report (as JSON) in; what :meth:`onQueryProgress` does.

        Returns the metrics of the query's ``dynamic_kafka`` sources (``None`` without one); the
        write of its ``dynamic_kafka`` sink, if any, is taken in too
        (:func:`~pyspark_dynamic_kafka.sink.metrics.take_batch`).
        """
        query_id, run_id = str(progress.get("id")), str(progress.get("runId"))
        metrics = batch_metrics(progress)
        write = take_batch(query_id, int(progress.get("batchId", -1)))  # the sink's
        if metrics is None and write is None:
            return None
        batch_id = int(progress.get("batchId", -1))
        for directory, end in metrics.handoffs if metrics is not None else ():
            write_completed(directory, batch_id, end)
            with self._lock:
                self._handoffs.setdefault(query_id, set()).add(directory)
        with self._lock:
            state = self._states.get(query_id)
            if state is None or state.run_id != run_id:
                state = self._states[query_id] = QueryState(query_label(progress), run_id)
            fresh = state.update(metrics) if metrics is not None else []
            if write is not None:
                state.writes.add(write, batch_end(progress))
            line = state.line(fresh)
            if self._file is not None:
                self._file.write(json.dumps(line) + "\n")
                self._file.flush()
        for change in fresh:
            log_event(_log, logging.INFO, "reconciliation", query=state.query, **change)
        return metrics

    def onQueryStarted(self, event: Any) -> None:
        """Nothing yet: a query is followed from its first progress report."""

    def onQueryProgress(self, event: Any) -> None:
        """Update the query's state from its progress report; never raises into Spark."""
        try:
            self.record(json.loads(event.progress.json))
        except Exception:  # a listener must not break the listener bus
            _log.exception("Could not take a progress report into the dynamic_kafka metrics")

    def onQueryIdle(self, event: Any) -> None:
        """Nothing: idle times are computed when read."""

    def onQueryTerminated(self, event: Any) -> None:
        """Forget the query: its series leave the exposition; its group sources hear it ended."""
        with self._lock:
            self._states.pop(str(event.id), None)
            directories = self._handoffs.pop(str(event.id), set())
        for directory in directories:
            write_terminated(directory)
        forget_query(str(event.id))

    def close(self) -> None:
        """Close the JSON-lines file."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
