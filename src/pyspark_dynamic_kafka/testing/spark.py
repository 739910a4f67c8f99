"""A local SparkSession for tests, the demo and benchmarks, bound to loopback."""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["local_spark_session"]


def local_spark_session(
    app_name: str = "pyspark-dynamic-kafka", cores: int = 2, max_failures: int = 1, **conf: str
) -> Any:
    """Get or create a ``local[cores]`` SparkSession whose every connection stays on 127.0.0.1.

    The Spark UI is off and shuffles use two partitions. Spark's Python workers run the Python
    that runs this function (``sys.executable``, as ``spark.pyspark.python`` and
    ``PYSPARK_PYTHON``), whatever ``python3`` is on ``PATH`` and whether a virtual environment is
    activated or not: a script run as ``.venv/bin/python job.py`` finds the ``dynamic_kafka``
    format in its workers too (otherwise ``DATA_SOURCE_NOT_FOUND``). Give
    ``**{"spark.pyspark.python": path}`` for another worker Python. pyspark is imported here, so
    the rest of :mod:`pyspark_dynamic_kafka.testing` works without it.

    Parameters
    ----------
    app_name:
        The application name.
    cores:
        Worker threads of the local master.
    max_failures:
        Attempts of a task before its job fails: ``local[cores,max_failures]``. Local masters
        ignore ``spark.task.maxFailures``; 1, their default, retries no task.
    **conf:
        More Spark settings; use a dict with ``**`` for dotted keys.
    """
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # The workers' Python: Spark's data source lookup and the Python workers of a local master
    # run PYSPARK_PYTHON (read when the SparkContext starts), python3 on PATH without it.
    python = conf.pop("spark.pyspark.python", None) or sys.executable
    os.environ["PYSPARK_PYTHON"] = python
    master = f"local[{cores}]" if max_failures == 1 else f"local[{cores},{max_failures}]"
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.pyspark.python", python)
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
