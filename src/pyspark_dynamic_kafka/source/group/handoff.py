"""The reader's side of the handoff: how the driver's listener tells a ``assignment=group``
reader that a micro-batch completed.

Spark tells a source that micro-batch N is done only when it plans N+1 (``latestOffset(start)``,
``commit``), and never for the last one before a ``query.stop()``. A
:class:`~pyspark_dynamic_kafka.monitoring.listener.DynamicKafkaListener` on the driver sees every
completed micro-batch (its progress report comes after its output and its commit log are
written). The reader runs in another process (the source's Python process on the driver), so
the two talk through a private directory the reader creates and names in its status; the files
written there are the contract of :mod:`~pyspark_dynamic_kafka.source.contract`, which the
listener writes and :class:`HandoffInbox` takes in.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark_dynamic_kafka.source.contract import HANDOFF_PREFIX, read_completed, terminated

__all__ = ["HandoffInbox", "Received"]


@dataclass
class Received:
    """What the listener reported since the last look.

    Attributes
    ----------
    completed:
        End offsets of the completed micro-batches, oldest first.
    terminated:
        Whether the query ended.
    """

    completed: list[Mapping[str, Any]]
    terminated: bool


class HandoffInbox:
    """The reader's side: a private directory the listener writes into."""

    def __init__(self) -> None:
        self.path = tempfile.mkdtemp(prefix="dynamic-kafka-handoff-")
        self.heard = False  # whether a listener ever wrote: one is attached

    def take(self) -> Received:
        """Read and remove what arrived."""
        directory = Path(self.path)
        completed: list[Mapping[str, Any]] = []
        try:
            names = sorted(n for n in os.listdir(directory) if n.startswith(HANDOFF_PREFIX))
        except OSError:
            return Received([], False)
        for name in names:
            end = read_completed(directory / name)
            if end is None:
                continue
            with contextlib.suppress(OSError):
                (directory / name).unlink()
            completed.append(end)
        ended = terminated(directory)
        self.heard = self.heard or bool(completed) or ended
        return Received(completed, ended)

    def close(self) -> None:
        """Remove the directory."""
        shutil.rmtree(self.path, ignore_errors=True)
