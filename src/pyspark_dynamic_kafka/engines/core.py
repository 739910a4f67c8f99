"""The compiled core (``pyspark-dynamic-kafka-core``, module ``pyspark_dynamic_kafka_core``): the
one module of the package that imports it.

The core is a separate distribution, optional: a wheel without it imports, reads with the Python
reader and writes with confluent-kafka. Its import is static and typed by its stub
(``native/python/pyspark_dynamic_kafka_core/_core.pyi``, which mypy reads: no ``Any`` for its
objects). The engines' compiled implementations (:mod:`.read_core`, :mod:`.decode_core`,
:mod:`.write_core`) reach it as :data:`compiled` after :func:`require`; the decision of which
engine serves a cluster (:mod:`.choice`) asks it through :func:`config_problem` and
:func:`direct_problem`. Each of them imports this module when first used, so a process that
only reads and writes with the Python engines never loads the core.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

from pyspark_dynamic_kafka.engines.roles import CoreMissingError

try:
    import pyspark_dynamic_kafka_core as compiled
except ImportError:  # the core is optional: the Python engines serve every cluster
    INSTALLED = False
else:
    INSTALLED = True

__all__ = [
    "INSTALLED",
    "NOT_INSTALLED",
    "CoreMissingError",
    "compiled",
    "config_problem",
    "core",
    "direct_problem",
    "require",
]

#: Why the compiled core serves no cluster of this process.
NOT_INSTALLED = "the compiled core (pyspark-dynamic-kafka-core) is not installed"


def core() -> ModuleType | None:
    """The compiled core's module, or ``None`` when it is not installed (for diagnostics and
    tests: the package itself reaches the core through the typed :data:`compiled`)."""
    return compiled if INSTALLED else None


def require() -> None:
    """Make sure the compiled core is installed before :data:`compiled` is used.

    Raises
    ------
    CoreMissingError
        When it is not.
    """
    if not INSTALLED:
        raise CoreMissingError(NOT_INSTALLED)


def config_problem(config: Sequence[tuple[str, str]]) -> str | None:
    """librdkafka's reason for refusing this full client configuration, or ``None``: asked of
    the core's statically linked librdkafka (the core must be installed)."""
    require()
    return compiled.config_problem(list(config))


def direct_problem(config: Sequence[tuple[str, str]], produce: bool = False) -> str | None:
    """Why the core's direct fetch path does not serve a consumer of this full configuration
    (then librdkafka's consumer reads the cluster), or ``None`` (the core must be installed);
    with ``produce``, why its direct produce path does not serve a producer of it (then
    librdkafka's producer writes to the cluster)."""
    require()
    return compiled.direct_problem(list(config), produce)
