"""Spark's read limits for Python sources (PySpark 4.2's admission control), or stand-ins of the
same names and fields on PySpark 4.0 and 4.1, where the engine passes none
(:mod:`~pyspark_dynamic_kafka.spark_versions`): the stream reader then reads all available, the
limit it passes itself.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

__all__ = [
    "ReadAllAvailable",
    "ReadLimit",
    "ReadMaxFiles",
    "ReadMaxRows",
    "ReadMinRows",
    "SupportsTriggerAvailableNow",
]

try:
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxFiles,
        ReadMaxRows,
        ReadMinRows,
        SupportsTriggerAvailableNow,
    )
except ImportError:  # PySpark 4.0 and 4.1

    class ReadLimit:  # type: ignore[no-redef]
        """How much a micro-batch may read."""

    @dataclass
    class ReadAllAvailable(ReadLimit):  # type: ignore[no-redef]
        """Everything available."""

    @dataclass
    class ReadMinRows(ReadLimit):  # type: ignore[no-redef]
        """At least ``min_rows`` rows, else no micro-batch yet."""

        min_rows: int

    @dataclass
    class ReadMaxRows(ReadLimit):  # type: ignore[no-redef]
        """At most ``max_rows`` rows."""

        max_rows: int

    @dataclass
    class ReadMaxFiles(ReadLimit):  # type: ignore[no-redef]
        """At most ``max_files`` files."""

        max_files: int

    class SupportsTriggerAvailableNow(ABC):  # type: ignore[no-redef]
        """A source that records its target offsets for ``Trigger.AvailableNow``."""

        @abstractmethod
        def prepareForTriggerAvailableNow(self) -> None:
            """Record the offsets the query reads up to."""
