"""Editing the metadata, what ``dynamic-kafka move`` and the reference server do (the read model
is :mod:`pyspark_dynamic_kafka.metadata`'s, below this package):

- :mod:`~pyspark_dynamic_kafka.metadata.editing.edit`: the edits (replace or remove a stream, add
  or remove a cluster, move a stream), each validated, and a file edited atomically.
- :mod:`~pyspark_dynamic_kafka.metadata.editing.text_edit`: a YAML file's text edited in place,
  keeping its comments.
- :mod:`~pyspark_dynamic_kafka.metadata.editing.write_marker`: the ``write: true`` marker moved
  between a stream's entries (``move --write``).
"""
