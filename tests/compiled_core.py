"""Test support: what needs the compiled core (``pyspark_dynamic_kafka_core``) is skipped, saying
why, where it is not installed (``make setup NATIVE=0``), or is installed without Avro decoding.

:data:`needs_core` and :data:`needs_avro_core` mark a test or a module; :func:`skip_without_core`
skips a test parametrised over the engines when it runs with the core's.
"""

from __future__ import annotations

import pytest

from pyspark_dynamic_kafka.kafka.engine import core

__all__ = ["NOT_INSTALLED", "needs_avro_core", "needs_core", "skip_without_core"]

NOT_INSTALLED = "the compiled core is not installed (make setup NATIVE=0)"
needs_core = pytest.mark.skipif(core() is None, reason=NOT_INSTALLED)
needs_avro_core = pytest.mark.skipif(
    not hasattr(core(), "AvroDecoder"),
    reason="the compiled core with Avro decoding is not installed",
)


def skip_without_core(engine: str) -> None:
    """Skip the calling test when ``engine`` is the compiled core's (``"native"``) and the core
    is not installed.

    Parameters
    ----------
    engine:
        The engine the test runs with: ``"python"`` or ``"native"``.
    """
    if engine == "native" and core() is None:
        pytest.skip(NOT_INSTALLED)
