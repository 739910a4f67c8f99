"""One side of :mod:`benchmarks.trees`: a SparkSession in a process of its own, reading on request.

Run by ``trees.py`` as ``python -m benchmarks.tree_side READER`` (``READER`` is ``-`` for a tree
without the ``reader`` option) with the tree under test first on ``PYTHONPATH``: PYTHONPATH comes
before the editable install's ``.pth`` on ``sys.path``, in this process and in every Python worker
its Spark JVM starts (the JVM inherits the environment and appends it to the workers'
``PYTHONPATH`` after PySpark's own zips, which hold no ``pyspark_dynamic_kafka``). So this module
uses only what both trees have: the public ``dynamic_kafka`` format and options,
``testing.local_spark_session`` and ``testing.procfs`` (unchanged since the old tree).

Protocol, one JSON object a line: first this process prints where ``pyspark_dynamic_kafka`` was
imported from, here and in a Python worker; then for every line ``{"metadata": path, "total": n}``
on stdin it reads the stream once (:func:`benchmarks.spark_sides.measure`) and prints the run.
Only lines that start with ``SIDE `` are the protocol's (Spark may print to stdout too).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from benchmarks.measure import spark_jvm
from benchmarks.spark_sides import dynamic_kafka, measure

import pyspark_dynamic_kafka
from pyspark_dynamic_kafka.testing import local_spark_session

PREFIX = "SIDE "


def _say(message: dict[str, Any]) -> None:
    print(PREFIX + json.dumps(message), flush=True)


def _package_file(_: object) -> str:
    import pyspark_dynamic_kafka as package  # in the Python worker, as the data source imports it

    return str(package.__file__)


def main() -> None:
    reader = None if sys.argv[1] == "-" else sys.argv[1]
    # The workers run this Python: the old tree's local_spark_session does not set it itself.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = local_spark_session(
        "dynamic-kafka-trees",
        **{"spark.ui.showConsoleProgress": "false", "spark.pyspark.python": sys.executable},
    )
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark_jvm()
    worker = spark.sparkContext.parallelize([0], 1).map(_package_file).first()
    _say({"driver": pyspark_dynamic_kafka.__file__, "worker": worker})
    for line in sys.stdin:
        ask = json.loads(line)
        metadata = Path(ask["metadata"])
        run = measure(jvm, lambda m=metadata: dynamic_kafka(spark, m, reader), int(ask["total"]))
        _say({"rows": run.rows, "seconds": run.seconds, "cpu": run.cpu})
    spark.stop()


if __name__ == "__main__":
    main()
