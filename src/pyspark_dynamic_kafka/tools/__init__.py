"""What the command line does, apart from parsing arguments and printing.

- :mod:`~pyspark_dynamic_kafka.tools.location`: metadata from a file or a service URL; ``move``.
- :mod:`~pyspark_dynamic_kafka.tools.describe`: streams, partitions, offsets and lag.
- :mod:`~pyspark_dynamic_kafka.tools.render`: tables for people (``rich``).

Each name is imported from the module that defines it (the package re-exports nothing).
"""
