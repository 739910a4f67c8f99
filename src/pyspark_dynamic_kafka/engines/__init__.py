"""The engines: the Python and compiled implementations of each hot-path role, side by side.

- :mod:`~pyspark_dynamic_kafka.engines.roles`: a Protocol per role (range reader, column decoder,
  producer and transaction) and the engine-neutral values that cross the seam;
- :mod:`~pyspark_dynamic_kafka.engines.choice`: which engine serves a cluster, and why;
- :mod:`~pyspark_dynamic_kafka.engines.implementations`: the implementation of a role for a
  planned engine (what the source and the sink ask);
- :mod:`~pyspark_dynamic_kafka.engines.core`: the one module that imports the compiled core;
- ``read_python`` / ``read_core``, ``decode_python`` / ``decode_core``, ``write_python`` /
  ``write_core``: the implementations; ``batches``: the Arrow schema every range reader gives;
  ``columns``: a batch's Avro columns decoded after reading (where the core did not decode them
  as it read).

Nothing here imports the source or the sink: ranges, Arrow batches and plain dataclasses cross
the seam. The package's own modules are imported when first used (this one imports none).
"""
