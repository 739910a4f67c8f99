"""Planning a micro-batch without Python's cyclic garbage collector interrupting it.

Listing and planning thousands of partitions allocates hundreds of thousands of short-lived
containers (confluent-kafka's futures, keys, offset maps) that live until the call returns. The
cyclic collector, triggered by allocation counts, then runs many times in the middle of one call
and each full collection walks every object of the process (PySpark, PyArrow, ...): measured by
``python -m benchmarks.scale``, it was most of a warm micro-batch's planning time at 10,000
partitions. Reference counting frees those objects anyway; the collector is paused for the call
and resumes after it (finding then any cycle the call left).

The driver-side methods run in Spark's Python process dedicated to the source, one call at a
time; the pause is never left on: it ends when the call returns or raises.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["PAUSE", "gc_paused"]

P = ParamSpec("P")
R = TypeVar("R")

#: Whether :func:`gc_paused` pauses the collector (``benchmarks/scale.py`` compares both).
PAUSE = True


def gc_paused(method: Callable[P, R]) -> Callable[P, R]:
    """Run ``method`` with the cyclic garbage collector paused (if it was running)."""

    @functools.wraps(method)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        if not PAUSE or not gc.isenabled():
            return method(*args, **kwargs)
        gc.disable()
        try:
            return method(*args, **kwargs)
        finally:
            gc.enable()

    return paused
