"""``DYNAMIC_KAFKA_LOG_LEVEL`` sets the level of the package's loggers in any process."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator

import pytest

from pyspark_dynamic_kafka.logs import LOG_LEVEL_ENV, configure_from_environment


@pytest.fixture
def package_logger() -> Iterator[logging.Logger]:
    logger = logging.getLogger("pyspark_dynamic_kafka")
    saved = (logger.level, list(logger.handlers), logger.propagate)
    yield logger
    logger.setLevel(saved[0])
    logger.handlers[:] = saved[1]
    logger.propagate = saved[2]


def test_a_level_is_applied_once_with_one_handler(package_logger: logging.Logger) -> None:
    assert configure_from_environment({LOG_LEVEL_ENV: "info"}) == logging.INFO
    assert configure_from_environment({LOG_LEVEL_ENV: "INFO"}) == logging.INFO
    assert package_logger.level == logging.INFO
    assert len(package_logger.handlers) == 1


def test_unset_or_wrong_values_change_nothing(
    package_logger: logging.Logger, capsys: pytest.CaptureFixture[str]
) -> None:
    before = (package_logger.level, list(package_logger.handlers))
    assert configure_from_environment({}) is None
    assert configure_from_environment({LOG_LEVEL_ENV: "verbose"}) is None
    assert (package_logger.level, list(package_logger.handlers)) == before
    assert "DYNAMIC_KAFKA_LOG_LEVEL='VERBOSE' is not a level" in capsys.readouterr().err


def test_importing_the_package_applies_it() -> None:
    """What a Spark Python worker does: import the package with the variable inherited."""
    code = (
        "import logging, pyspark_dynamic_kafka;"
        "logging.getLogger('pyspark_dynamic_kafka.source.status').info('seen')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={LOG_LEVEL_ENV: "INFO", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "INFO pyspark_dynamic_kafka.source.status: seen" in done.stderr
