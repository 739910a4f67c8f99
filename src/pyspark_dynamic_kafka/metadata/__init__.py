"""Kafka metadata: the stream model and the services that resolve stream ids.

- :mod:`~pyspark_dynamic_kafka.metadata.model`: :class:`KafkaStream`, :class:`ClusterMetadata`.
- :mod:`~pyspark_dynamic_kafka.metadata.service`: the :class:`KafkaMetadataService` protocol.
- :mod:`~pyspark_dynamic_kafka.metadata.document`: the metadata document format (pure).
- :mod:`~pyspark_dynamic_kafka.metadata.file`: :class:`FileMetadataService` and file I/O.
- :mod:`~pyspark_dynamic_kafka.metadata.memory`: :class:`InMemoryMetadataService`.
- :mod:`~pyspark_dynamic_kafka.metadata.single_cluster`: :class:`SingleClusterMetadataService`.
- :mod:`~pyspark_dynamic_kafka.metadata.http`: :class:`HttpMetadataService` (the HTTP contract,
  :mod:`~pyspark_dynamic_kafka.metadata.contract`, over
  :mod:`~pyspark_dynamic_kafka.metadata.http_client` and
  :mod:`~pyspark_dynamic_kafka.metadata.http_transport`).
- :mod:`~pyspark_dynamic_kafka.metadata.edit`: edits shared by the command line and the server.
- :mod:`~pyspark_dynamic_kafka.metadata.factory`: :func:`create_metadata_service`.
"""

from pyspark_dynamic_kafka.metadata.document import (
    ParsedMetadata,
    dump_metadata_document,
    parse_metadata_document,
    validate_metadata_document,
)
from pyspark_dynamic_kafka.metadata.edit import edit_metadata_file, move_stream
from pyspark_dynamic_kafka.metadata.factory import create_metadata_service
from pyspark_dynamic_kafka.metadata.file import (
    FileMetadataService,
    load_metadata_file,
    read_metadata_document,
    validate_metadata_file,
    write_metadata_file,
)
from pyspark_dynamic_kafka.metadata.http import HttpMetadataService
from pyspark_dynamic_kafka.metadata.memory import InMemoryMetadataService
from pyspark_dynamic_kafka.metadata.model import ClusterMetadata, KafkaStream, StartingPosition
from pyspark_dynamic_kafka.metadata.service import KafkaMetadataService
from pyspark_dynamic_kafka.metadata.single_cluster import SingleClusterMetadataService

__all__ = [
    "ClusterMetadata",
    "FileMetadataService",
    "HttpMetadataService",
    "InMemoryMetadataService",
    "KafkaMetadataService",
    "KafkaStream",
    "ParsedMetadata",
    "SingleClusterMetadataService",
    "StartingPosition",
    "create_metadata_service",
    "dump_metadata_document",
    "edit_metadata_file",
    "load_metadata_file",
    "move_stream",
    "parse_metadata_document",
    "read_metadata_document",
    "validate_metadata_document",
    "validate_metadata_file",
    "write_metadata_file",
]
