"""Kafka metadata: the stream model and the services that resolve stream ids (the read model),
with the editing ``move`` does and the HTTP API in subpackages of their own.

The read model:

- :mod:`~pyspark_dynamic_kafka.metadata.model`: :class:`KafkaStream`, :class:`ClusterMetadata`.
- :mod:`~pyspark_dynamic_kafka.metadata.service`: the :class:`KafkaMetadataService` protocol.
- :mod:`~pyspark_dynamic_kafka.metadata.document`: the metadata document format (pure), its
  ``streams`` entries parsed by :mod:`~pyspark_dynamic_kafka.metadata.entries` and its fields
  checked by :mod:`~pyspark_dynamic_kafka.metadata.field_checks`.
- :mod:`~pyspark_dynamic_kafka.metadata.file`: :class:`FileMetadataService` and file I/O.
- :mod:`~pyspark_dynamic_kafka.metadata.memory`: :class:`InMemoryMetadataService`.
- :mod:`~pyspark_dynamic_kafka.metadata.single_cluster`: :class:`SingleClusterMetadataService`.
- :mod:`~pyspark_dynamic_kafka.metadata.http`: :class:`HttpMetadataService`, over the HTTP API
  of :mod:`~pyspark_dynamic_kafka.metadata.http_api` (its wire format, client, transport and
  tokens).
- :mod:`~pyspark_dynamic_kafka.metadata.factory`: :func:`create_metadata_service`.

Editing (:mod:`~pyspark_dynamic_kafka.metadata.editing`): the edits shared by the command line
and the server, a file's text edited keeping its comments, the ``write: true`` marker.

Every name in the ``__all__`` of those modules (except the entries, the field checks, the HTTP
API's modules and the editing's text and marker helpers) is importable from this package too;
each is defined in one module only.
"""

from pyspark_dynamic_kafka.metadata import (
    document,
    factory,
    file,
    http,
    memory,
    model,
    service,
    single_cluster,
)
from pyspark_dynamic_kafka.metadata.document import *  # noqa: F403
from pyspark_dynamic_kafka.metadata.editing import edit
from pyspark_dynamic_kafka.metadata.editing.edit import *  # noqa: F403
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
