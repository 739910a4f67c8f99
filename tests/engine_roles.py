"""Each engine role's implementations, listed once: the parity tests (the same records, the same
results, with either engine) parametrise over these.

The roles are ``pyspark_dynamic_kafka.engines.roles``': the range reader, the Avro column decoder
and encoder, and the producer (its transaction). Each has a Python implementation and one in the
compiled core; a test of the core's is skipped, saying why, where the core is not installed
(``make setup NATIVE=0``).
"""

from __future__ import annotations

import pytest

from pyspark_dynamic_kafka.engines.core import core

#: The values of the options ``reader`` and ``writer`` that pick each implementation: the Python
#: one (confluent-kafka), then the compiled core's.
OPTION_VALUES = ("python", "native")

#: The range reader's implementations, as the ``reader`` option names them.
READERS = OPTION_VALUES
#: The producer's implementations, as the ``writer`` option names them.
WRITERS = OPTION_VALUES
#: The engine each ``writer`` plans a cluster on, whose producer
#: ``engines.implementations.batch_producer`` gives: confluent-kafka's, then the compiled core's
#: (its librdkafka producer, which the properties the direct path does not take plan); then
#: ``direct``, the core's direct produce path (``writer=native``'s, either guarantee).
PRODUCERS = {"python": "python", "native": "librdkafka", "direct": "direct"}
#: The producers of atLeastOnce: every one of :data:`PRODUCERS`.
AT_LEAST_ONCE_PRODUCERS = tuple(PRODUCERS)
#: The producers of exactlyOnce (transactions): every one of :data:`PRODUCERS` too.
EXACTLY_ONCE_PRODUCERS = tuple(PRODUCERS)
#: The Avro column decoder's implementations: whether the compiled core decodes (the Python
#: decoder, then the core's), with their ids.
DECODERS = pytest.mark.parametrize("native", [False, True], ids=["python", "core"])
#: The Avro column encoder's implementations: whether the compiled core encodes (the Python
#: encoder, then the core's), with their ids.
ENCODERS = pytest.mark.parametrize("native", [False, True], ids=["python", "core"])

#: Why a test of the compiled core's implementation is skipped.
NO_CORE = "the compiled core is not installed (NATIVE=0)"


def skip_without_core(implementation: str | bool) -> None:
    """Skip the test when ``implementation`` is the compiled core's (``"native"``, or ``True``
    for a decoder or an encoder) and the core is not installed."""
    if implementation in ("native", "direct", True) and core() is None:
        pytest.skip(NO_CORE)
