"""A class-data sharing (CDS) archive of the Kafka broker's classes: test brokers start faster.

A broker JVM loads thousands of classes from the Kafka jars. Mapped from an archive instead, a
one-broker cluster is ready in about 2 s rather than 3.5 s on a small machine, which adds up
over a test suite that starts fresh clusters for every test. The archive fits one JVM build and
one set of jars (see :func:`~.kafka_jars.class_archive` for its name); an
:class:`~.apache_kafka.ApacheKafkaCluster` uses it when it exists and starts without it
otherwise.

``make kafka-jars`` runs ``python -m pyspark_dynamic_kafka.testing.kafka_cds``, which fetches
the jars (:func:`~.kafka_jars.ensure_kafka_jars`) and builds the archive once: it starts a
one-broker cluster whose JVMs record the classes they load, stops the broker gracefully (the
archive is written at a JVM's normal exit) and moves the archive into place.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark_dynamic_kafka.testing.apache_kafka import ApacheKafkaCluster
from pyspark_dynamic_kafka.testing.errors import KafkaTestingError
from pyspark_dynamic_kafka.testing.kafka_config import DEFAULT_JVM_OPTIONS
from pyspark_dynamic_kafka.testing.kafka_jars import (
    class_archive,
    ensure_kafka_jars,
    find_java,
    run_tool,
)

__all__ = ["ensure_class_archive", "main"]


def ensure_class_archive() -> Path:
    """The broker's class archive for the ``java`` in use, built first if missing.

    Returns
    -------
    Path
        The archive file.

    Raises
    ------
    KafkaTestingError
        If the recording cluster does not start, or its JVM writes no archive.
    """
    jars = ensure_kafka_jars()
    target = class_archive(find_java(), jars)
    if target.exists():
        return target
    recorded = target.with_name(f".{target.name}.{os.getpid()}.partial")
    options = [*DEFAULT_JVM_OPTIONS, f"-XX:ArchiveClassesAtExit={recorded}"]
    cluster = ApacheKafkaCluster("class-archive", jvm_options=options)
    try:
        cluster.start()
        cluster.stop_broker(0)  # a graceful exit writes the archive
        cluster.stop()
        if not recorded.exists():
            raise KafkaTestingError(f"the broker JVM wrote no class archive to {recorded}")
        os.replace(recorded, target)  # atomic: a concurrent start sees all of it or nothing
    finally:
        cluster.stop()
        recorded.unlink(missing_ok=True)
    return target


def main() -> int:
    """``make kafka-jars``: fetch the jars, build the class archive, print the archive's path."""
    return run_tool(ensure_class_archive)


if __name__ == "__main__":
    sys.exit(main())
