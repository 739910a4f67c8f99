"""The Python column decoder: Avro keys or values decoded by fastavro, record by record, into the
reader schema's Arrow column. It is :class:`~pyspark_dynamic_kafka.avro.decode.Decoder` itself,
which lives with the rest of the Avro support: :func:`.implementations.column_decoder` builds it
from the parameters it was given.

It decodes the columns of clusters the Python reader reads, and it is what the compiled core's
decoder (:mod:`.decode_core`) hands a batch to where the core cannot decode it as Java does.
"""

from __future__ import annotations

from pyspark_dynamic_kafka.avro.decode import Decoder

__all__ = ["Decoder"]
