"""What the command line does, apart from parsing arguments and printing.

- :mod:`~pyspark_dynamic_kafka.tools.location`: metadata from a file or a service URL; ``move``.
- :mod:`~pyspark_dynamic_kafka.tools.describe`: streams, partitions, offsets and lag.
- :mod:`~pyspark_dynamic_kafka.tools.render`: tables for people (``rich``).
"""

from pyspark_dynamic_kafka.tools.describe import Report, build_report
from pyspark_dynamic_kafka.tools.location import MetadataLocation, select_streams

__all__ = ["MetadataLocation", "Report", "build_report", "select_streams"]
