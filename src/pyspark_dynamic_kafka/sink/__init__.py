"""The Spark data sink: write a logical stream to the cluster its metadata routes writes to.

Every module, by role (sub-layers enforced by tests/unit/test_structure.py; this map by
tests/unit/test_module_map.py):

- :mod:`~pyspark_dynamic_kafka.sink.route`: metadata -> :class:`WriteRoute` (pure): the entry
  marked ``write: true``, else the stream's only cluster, else "ambiguous write route".
"""
