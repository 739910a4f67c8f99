"""The package's log level from the environment, in every process that imports the package.

The source logs through :mod:`logging` (loggers ``pyspark_dynamic_kafka.*``) in Spark's Python
processes, where no one configures logging: Python then writes warnings and errors only, to the
process's standard error, which Spark copies into the driver's or the executor's log.
``DYNAMIC_KAFKA_LOG_LEVEL`` (``DEBUG``, ``INFO``, ``WARNING``, ``ERROR``) sets the level of those
loggers there and gives them a handler on standard error: Spark's Python processes inherit the
variable from the JVM (export it before the session starts; on a cluster also
``spark.executorEnv.DYNAMIC_KAFKA_LOG_LEVEL``).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping

__all__ = ["LOG_LEVEL_ENV", "configure_from_environment"]

#: The environment variable naming the level of the package's loggers.
LOG_LEVEL_ENV = "DYNAMIC_KAFKA_LOG_LEVEL"
_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_HANDLER_NAME = "dynamic-kafka-log-level"


def configure_from_environment(environ: Mapping[str, str] = os.environ) -> int | None:
    """Apply ``DYNAMIC_KAFKA_LOG_LEVEL`` to the ``pyspark_dynamic_kafka`` logger, once.

    Returns
    -------
    int or None
        The level applied; ``None`` when the variable is unset, empty or not a level (a wrong
        value is reported on standard error and otherwise ignored: logging never fails a job).
    """
    value = environ.get(LOG_LEVEL_ENV, "").strip().upper()
    if not value:
        return None
    if value not in _LEVELS:
        sys.stderr.write(
            f"pyspark_dynamic_kafka: {LOG_LEVEL_ENV}={value!r} is not a level "
            f"({', '.join(_LEVELS)}); ignored\n"
        )
        return None
    level: int = getattr(logging, value)
    logger = logging.getLogger("pyspark_dynamic_kafka")
    logger.setLevel(level)
    if not any(h.get_name() == _HANDLER_NAME for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.set_name(_HANDLER_NAME)
        handler.setFormatter(logging.Formatter(_FORMAT))
        logger.addHandler(handler)
        logger.propagate = False  # one line per record, also where the root logger has handlers
    return level
