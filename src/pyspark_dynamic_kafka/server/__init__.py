"""The reference HTTP metadata server (``dynamic-kafka serve``).

- :mod:`~pyspark_dynamic_kafka.server.app`: the Starlette application (:func:`create_app`).
- :mod:`~pyspark_dynamic_kafka.server.store`: the served file, cached reads and atomic writes.
- :mod:`~pyspark_dynamic_kafka.server.auth`: bearer tokens for reads and writes.
- :mod:`~pyspark_dynamic_kafka.server.run`: :func:`serve` with uvicorn.

Each name is imported from the module that defines it (the package re-exports nothing).
"""
