"""The HTTP metadata API, version 1: what its client and the reference server share, and the
client's plumbing (the service that reads through them is
:mod:`pyspark_dynamic_kafka.metadata.http`):

- :mod:`~pyspark_dynamic_kafka.metadata.http_api.wire`: paths, bodies and ETags (pure).
- :mod:`~pyspark_dynamic_kafka.metadata.http_api.client`: requests, retries and credentials.
- :mod:`~pyspark_dynamic_kafka.metadata.http_api.transport`: one request and its answer (the
  seam tests replace).
- :mod:`~pyspark_dynamic_kafka.metadata.http_api.tokens`: bearer tokens, checked and read from a
  file.
"""
