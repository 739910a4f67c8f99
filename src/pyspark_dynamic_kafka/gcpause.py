"""The one pause of Python's cyclic garbage collector, on the driver and on executors, for the
source and the sink.

- **Driver**: listing and planning thousands of partitions allocates hundreds of thousands of
  short-lived containers (confluent-kafka's futures, keys, offset maps) that live until the call
  returns. The cyclic collector, triggered by allocation counts, then runs many times in the
  middle of one call and each full collection walks every object of the process (PySpark,
  PyArrow, ...): most of a warm micro-batch's planning time at 10,000 partitions
  (docs/benchmarks.md, ``benchmarks.scale``).
- **Executors**: every consumed message is a GC-tracked object, so reading 10,000 of them per
  ``consume()`` triggers a young-generation collection every 700 and, as they survive in the
  batch being built, full collections that walk the whole heap of a Spark Python worker
  (docs/benchmarks.md).
- **Executors, writing**: the sink's tasks allocate no object per record, yet the collections
  that Spark's Arrow batches and the task's own objects trigger walked the worker's heap (its
  modules: PySpark, PyArrow, ours) for about 0.08 µs/record: half of what the sink's Python
  worker spent above a sink that discards the rows (``benchmarks.write_floor``, 2026-11-30).
- **After each task**: PySpark's daemon runs a full ``gc.collect()`` after every task of a reused
  Python worker (``pyspark/daemon.py``), which walks every object the worker holds: its modules
  (PySpark, PyArrow, confluent-kafka, ours), 20-30 ms of CPU a task, paid again by each
  micro-batch's tasks. :func:`freeze_worker_heap` moves what a worker holds when its first task
  of ours starts (modules, classes, functions: what lives as long as the process) out of every
  later collection (``gc.freeze()``, once per process and only in a Spark task); what later
  tasks leave is collected as before.

Reference counting frees those objects anyway (no path creates reference cycles); the
collector is paused for the call or the task and resumes after it (finding then any cycle left).
The pause is never left on: it ends when the call returns or raises, or the task ends, fails or
is abandoned; a collector already disabled by the caller stays so.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator

__all__ = ["cyclic_gc_paused", "executor_task_gc", "freeze_worker_heap"]

#: The process whose heap :func:`freeze_worker_heap` froze (a forked child's is its own).
_frozen_in: int | None = None


@contextlib.contextmanager
def cyclic_gc_paused(pause: bool = True) -> Iterator[None]:
    """Pause the cyclic garbage collector (if it runs and ``pause``) for the ``with`` block."""
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def freeze_worker_heap() -> bool:
    """In a Spark task, the first time in this process: move every object alive now to the
    collector's permanent generation (``gc.freeze()``), so the full collection PySpark's daemon
    runs after each task no longer walks the worker's modules. Whether it froze now; nothing
    outside a Spark task (the driver, a test calling a task's code directly)."""
    global _frozen_in
    if _frozen_in == os.getpid():
        return False
    from pyspark import TaskContext

    if TaskContext.get() is None:
        return False
    _frozen_in = os.getpid()
    gc.freeze()
    return True


@contextlib.contextmanager
def executor_task_gc() -> Iterator[None]:
    """The collector around an executor's task of ours (a read or a write): the worker's heap
    frozen first (:func:`freeze_worker_heap`), the collector paused for the ``with`` block."""
    freeze_worker_heap()
    with cyclic_gc_paused():
        yield
