"""The Python column decoder: Avro keys or values decoded by fastavro, record by record, into the
reader schema's Arrow column (:class:`~pyspark_dynamic_kafka.avro.decode.Decoder`, which lives
with the rest of the Avro support).

It decodes the columns of clusters the Python reader reads, and it is what the compiled core's
decoder (:mod:`.decode_core`) hands a batch to where the core cannot decode it as Java does.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark_dynamic_kafka.avro.decode import Decoder
from pyspark_dynamic_kafka.avro.framing import SchemaRef
from pyspark_dynamic_kafka.registry.client import RegisteredSchema

__all__ = ["Decoder", "python_decoder"]


def python_decoder(
    reader_schema: str,
    fetch: Callable[[SchemaRef], RegisteredSchema],
    permissive: bool = False,
    key: bool = False,
    reader_name: str | None = None,
) -> Decoder:
    """The Python decoder of a column: the reader schema (Avro JSON), how a writer schema is
    fetched, the mode, whether keys are decoded, and the reader schema's registry name."""
    return Decoder(reader_schema, fetch, permissive, key, reader_name)
