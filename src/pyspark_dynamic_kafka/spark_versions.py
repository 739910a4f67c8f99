"""The PySpark versions the package supports, and what each of them offers a Python data source.

PySpark 4.0 is the lowest: its Python Data Source API has the streaming reader and writer. What a
later PySpark adds, and what the package does without it:

- 4.1: the Arrow streaming writer (``DataSourceStreamArrowWriter``); on 4.0 the sink takes
  Spark's rows and builds the same Arrow batches itself.
- 4.2: admission control for Python sources (``latestOffset(start, limit)``, read limits,
  ``Trigger.AvailableNow`` of their own); on 4.0 and 4.1 the options that need it
  (:data:`NEEDS_ADMISSION_CONTROL`) are refused when the query starts, and ``Trigger.AvailableNow``
  reads up to the offsets Spark saw when the query started (Spark's fallback).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from typing import Any

__all__ = [
    "ADMISSION_CONTROL",
    "LOWEST",
    "NEEDS_ADMISSION_CONTROL",
    "UnsupportedSparkError",
    "arrow_schema",
    "arrow_type",
    "check_supported",
    "needing_a_later_spark",
    "pyspark_version",
]

LOWEST = (4, 0)
ADMISSION_CONTROL = (4, 2)

#: Source options whose meaning is a read limit, which only admission control passes on.
NEEDS_ADMISSION_CONTROL = (
    "maxOffsetsPerTrigger",
    "minOffsetsPerTrigger",
    "maxTriggerDelay",
    "archive.maxFilesPerTrigger",
)


class UnsupportedSparkError(ImportError):
    """PySpark is older than the lowest version the package supports."""


def pyspark_version(text: str | None = None) -> tuple[int, int]:
    """The installed PySpark's ``(major, minor)`` (or of the version ``text``)."""
    if text is None:
        import pyspark

        text = pyspark.__version__
    found = re.match(r"(\d+)\.(\d+)", text)
    if found is None:
        raise ValueError(f"not a PySpark version: {text!r}")
    return int(found.group(1)), int(found.group(2))


def check_supported(version: tuple[int, int] | None = None) -> None:
    """Refuse a PySpark older than :data:`LOWEST`, in one sentence.

    Raises
    ------
    UnsupportedSparkError
        Naming the installed version and the lowest supported one.
    """
    found = pyspark_version() if version is None else version
    if found < LOWEST:
        raise UnsupportedSparkError(
            f"pyspark-dynamic-kafka needs PySpark {_text(LOWEST)} or newer (its Python Data "
            f"Source API), but PySpark {_text(found)} is installed: upgrade PySpark"
        )


def needing_a_later_spark(options: Iterable[str], version: tuple[int, int]) -> str | None:
    """Why a stream with the source options ``options`` (names, any case) cannot run on PySpark
    ``version``, or ``None`` when it can."""
    if version >= ADMISSION_CONTROL:
        return None
    given = {name.lower() for name in options}
    needing = [name for name in NEEDS_ADMISSION_CONTROL if name.lower() in given]
    if not needing:
        return None
    return (
        f"option {needing[0]} needs PySpark {_text(ADMISSION_CONTROL)} or newer (a Python "
        f"source's read limits come with its admission control), but this is PySpark "
        f"{_text(version)}: remove the option, or upgrade PySpark"
    )


def arrow_type(data_type: Any) -> Any:
    """PySpark's Arrow type of the Spark type ``data_type``, timestamps at UTC (PySpark 4.0's
    ``to_arrow_type`` has ``timestamp_utc`` where later ones have ``timezone``)."""
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(data_type, **_utc(to_arrow_type))


def arrow_schema(schema: Any) -> Any:
    """PySpark's Arrow schema of the Spark schema ``schema``, timestamps at UTC."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, **_utc(to_arrow_schema))


def _utc(convert: Any) -> dict[str, Any]:
    if "timezone" in inspect.signature(convert).parameters:
        return {"timezone": "UTC"}
    return {"timestamp_utc": True}


def _text(version: tuple[int, int]) -> str:
    return ".".join(map(str, version))
