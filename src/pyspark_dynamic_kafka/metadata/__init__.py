"""Kafka metadata: the stream model and the services that resolve stream ids.

- :mod:`~pyspark_dynamic_kafka.metadata.model`: :class:`KafkaStream`, :class:`ClusterMetadata`.
- :mod:`~pyspark_dynamic_kafka.metadata.service`: the :class:`KafkaMetadataService` protocol.
- :mod:`~pyspark_dynamic_kafka.metadata.document`: the metadata document format (pure), its
  ``streams`` entries parsed by :mod:`~pyspark_dynamic_kafka.metadata.entries` and its fields
  checked by :mod:`~pyspark_dynamic_kafka.metadata.field_checks`.
- :mod:`~pyspark_dynamic_kafka.metadata.file`: :class:`FileMetadataService` and file I/O.
- :mod:`~pyspark_dynamic_kafka.metadata.memory`: :class:`InMemoryMetadataService`.
- :mod:`~pyspark_dynamic_kafka.metadata.single_cluster`: :class:`SingleClusterMetadataService`.
- :mod:`~pyspark_dynamic_kafka.metadata.http`: :class:`HttpMetadataService` (the HTTP contract,
  :mod:`~pyspark_dynamic_kafka.metadata.contract`, over
  :mod:`~pyspark_dynamic_kafka.metadata.http_client` and
  :mod:`~pyspark_dynamic_kafka.metadata.http_transport`).
- :mod:`~pyspark_dynamic_kafka.metadata.edit`: edits shared by the command line and the server.
- :mod:`~pyspark_dynamic_kafka.metadata.factory`: :func:`create_metadata_service`.

Every name in the ``__all__`` of those modules (except the entries, the field checks and the
HTTP plumbing: contract, client, transport, tokens) is importable from this package too; each is
defined in one module only.
"""

from pyspark_dynamic_kafka.metadata import (
    document,
    edit,
    factory,
    file,
    http,
    memory,
    model,
    service,
    single_cluster,
)
from pyspark_dynamic_kafka.metadata.document import *  # noqa: F403
from pyspark_dynamic_kafka.metadata.edit import *  # noqa: F403
from pyspark_dynamic_kafka.metadata.factory import *  # noqa: F403
from pyspark_dynamic_kafka.metadata.file import *  # noqa: F403
from pyspark_dynamic_kafka.metadata.http import *  # noqa: F403
from pyspark_dynamic_kafka.metadata.memory import *  # noqa: F403
from pyspark_dynamic_kafka.metadata.model import *  # noqa: F403
from pyspark_dynamic_kafka.metadata.service import *  # noqa: F403
from pyspark_dynamic_kafka.metadata.single_cluster import *  # noqa: F403

__all__: list[str] = []
__all__ += document.__all__
__all__ += edit.__all__
__all__ += factory.__all__
__all__ += file.__all__
__all__ += http.__all__
__all__ += memory.__all__
__all__ += model.__all__
__all__ += service.__all__
__all__ += single_cluster.__all__
