"""How the driver's listener tells a ``assignment=group`` reader that a micro-batch completed.

Spark tells a source that micro-batch N is done only when it plans N+1 (``latestOffset(start)``,
``commit``), and never for the last one before a ``query.stop()``. A
:class:`~pyspark_dynamic_kafka.monitoring.listener.DynamicKafkaListener` on the driver sees every
completed micro-batch (its progress report comes after its output and its commit log are
written). The reader runs in another process (the source's Python process on the driver), so
the two talk through a private directory the reader creates and names in its status
(``sources[].latestOffset.dynamicKafka.handoff``): the listener writes one file per completed
micro-batch (``batch-<id>.json`` with its end offset) and ``terminated`` when the query ended;
the reader takes them in with :class:`HandoffInbox`. Files only: no port, no secret.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["HandoffInbox", "Received", "write_completed", "write_terminated"]

_TERMINATED = "terminated"
_PREFIX = "batch-"


def _write(directory: Path, name: str, text: str) -> None:
    """Write ``directory/name`` atomically; a directory gone (reader ended) is no error."""
    with contextlib.suppress(OSError):
        temporary = directory / f".{name}.tmp"
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, directory / name)


def write_completed(directory: str, batch_id: int, end_offset: Mapping[str, Any]) -> None:
    """Tell the reader of ``directory`` that micro-batch ``batch_id`` ended at ``end_offset``."""
    document = json.dumps({"batchId": batch_id, "endOffset": end_offset})
    _write(Path(directory), f"{_PREFIX}{batch_id:020d}.json", document)


def write_terminated(directory: str) -> None:
    """Tell the reader of ``directory`` that its query ended: no batch completes any more."""
    _write(Path(directory), _TERMINATED, "")


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
            names = sorted(n for n in os.listdir(directory) if n.startswith(_PREFIX))
        except OSError:
            return Received([], False)
        for name in names:
            try:
                document = json.loads((directory / name).read_text(encoding="utf-8"))
                (directory / name).unlink()
            except (OSError, ValueError):
                continue
            end = document.get("endOffset")
            if isinstance(end, str):
                end = json.loads(end)
            if isinstance(end, Mapping):
                completed.append(end)
        terminated = (directory / _TERMINATED).exists()
        self.heard = self.heard or bool(completed) or terminated
        return Received(completed, terminated)

    def close(self) -> None:
        """Remove the directory."""
        shutil.rmtree(self.path, ignore_errors=True)
