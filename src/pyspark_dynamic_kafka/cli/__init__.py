"""The ``dynamic-kafka`` command line.

- :mod:`~pyspark_dynamic_kafka.cli.commands`: argument parsing, printing and exit codes
  (:func:`~pyspark_dynamic_kafka.cli.commands.main` is the ``dynamic-kafka`` entry point).
- :mod:`~pyspark_dynamic_kafka.cli.location`: metadata from a file or a service URL; ``move``.
- :mod:`~pyspark_dynamic_kafka.cli.describe`: streams, partitions, offsets and lag.
- :mod:`~pyspark_dynamic_kafka.cli.render`: tables for people (``rich``).
"""

from pyspark_dynamic_kafka.cli.commands import main

__all__ = ["main"]
