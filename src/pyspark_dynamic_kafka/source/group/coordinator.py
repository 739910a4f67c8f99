"""The handoff side of ``assignment=group``: completed micro-batches as the listener reports
them, and the end of the query.

:class:`HandoffWatcher` takes the listener's reports in (:mod:`~pyspark_dynamic_kafka.source.
group.handoff`) in a thread of its own and hands each completed micro-batch's end offset over
(to :meth:`~pyspark_dynamic_kafka.source.group.ownership.GroupOwnership.completed`, which commits
it); at a stop it waits, briefly, for the listener's word on the last one.
:func:`stop_on_sigterm` runs that stop when Spark ends the source's process.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from pyspark_dynamic_kafka.offset_spec import PartitionKey
from pyspark_dynamic_kafka.source.checkpoint import decode
from pyspark_dynamic_kafka.source.group.handoff import HandoffInbox

__all__ = ["HandoffWatcher", "stop_on_sigterm"]

_log = logging.getLogger(__name__)

#: Longest wait, at a stop, for the listener's word on the last micro-batch.
STOP_WAIT_S = 5.0


class HandoffWatcher:
    """Watches the reader's handoff directory (:attr:`inbox`) and calls ``completed`` with the
    end offset of each completed micro-batch, oldest first."""

    def __init__(self, completed: Callable[[dict[PartitionKey, int]], None]) -> None:
        self.inbox = HandoffInbox()
        self._completed = completed
        self._lock = threading.Lock()
        self._completed_end: dict[PartitionKey, int] | None = None
        self._terminated = False
        self._closed = False
        self._thread = threading.Thread(target=self._watch, name="dynamic-kafka-handoff")
        self._thread.daemon = True
        self._thread.start()

    def take(self) -> None:
        """Take the listener's reports in."""
        received = self.inbox.take()
        for document in received.completed:
            end = dict(decode(document).offsets)
            self._completed(end)
            with self._lock:
                self._completed_end = end
        with self._lock:
            self._terminated = self._terminated or received.terminated

    def settled(self, last_end: Mapping[PartitionKey, int]) -> bool:
        """Whether no micro-batch can complete any more: the query ended, or the last one
        planned (ending at ``last_end``) completed."""
        with self._lock:
            return self._terminated or self._completed_end == last_end

    def drain(self, last_end: Callable[[], Mapping[PartitionKey, int]]) -> None:
        """At a stop: take what arrived, and wait (up to :data:`STOP_WAIT_S`) for the last
        micro-batch when a listener is attached."""
        deadline = time.monotonic() + STOP_WAIT_S
        self.take()
        while self.inbox.heard and not self.settled(last_end()) and time.monotonic() < deadline:
            time.sleep(0.05)
            self.take()

    def close(self) -> None:
        """Stop watching and remove the directory."""
        self._closed = True
        self.inbox.close()

    def _watch(self) -> None:
        while not self._closed:
            try:
                self.take()
            except Exception:  # the watcher must survive a malformed report
                _log.exception("Could not take a completed micro-batch in")
            time.sleep(0.1)


class Stoppable(Protocol):
    """What :func:`stop_on_sigterm` stops."""

    def shutdown(self) -> None:
        """Commit what is due and leave the groups."""


def stop_on_sigterm(ownership: Stoppable) -> None:
    """Shut ``ownership`` down when the process gets SIGTERM, then exit.

    At a ``query.stop()`` Spark sends SIGTERM to the source's Python process (twice, a few
    milliseconds apart, on PySpark 4.3), whose default action ends it before anything else
    runs: the members would vanish without leaving their groups, and their partitions would
    move only after ``session.timeout.ms``. Installed from the main thread only (where Spark
    calls the reader); elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        return

    def handle(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # Spark sends it twice: finish the first
        ownership.shutdown()
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, handle)
