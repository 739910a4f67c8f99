"""The Python column encoder: a column's values encoded by fastavro, value by value
(:class:`~pyspark_dynamic_kafka.avro.encode.Encoder`: the Spark values shaped into what fastavro
writes, Confluent's framing).

It encodes the columns of clusters confluent-kafka's producer writes, and it is what the compiled
core's encoder (:mod:`.encode_core`) hands a column to where the core does not write it as this
encoder does.
"""

from __future__ import annotations

import pyarrow as pa

from pyspark_dynamic_kafka.avro.encode import AvroEncodeError, Encoder
from pyspark_dynamic_kafka.avro.framing import id_prefix
from pyspark_dynamic_kafka.engines.roles import EncodeFailure

__all__ = ["PythonColumnEncoder"]


class PythonColumnEncoder(Encoder):
    """Encodes columns of one writer schema with fastavro: the :class:`~pyspark_dynamic_kafka.
    avro.encode.Encoder` of ``schema`` (the writer schema, Avro JSON text, as registered in the
    registry), value by value."""

    def encode_arrow(self, values: pa.Array, schema_id: int) -> pa.Array:
        """The payloads of ``values`` framed with ``schema_id``, null where a value is null.

        Raises
        ------
        EncodeFailure
            At the first value that does not fit the schema, naming its row and why.
        """
        prefix = id_prefix(schema_id)
        body = self.body
        payloads: list[bytes | None] = []
        for row, value in enumerate(values.to_pylist()):
            if value is None:
                payloads.append(None)
                continue
            try:
                payloads.append(prefix + body(value))
            except AvroEncodeError as exc:
                raise EncodeFailure(row, str(exc)) from None
        return pa.array(payloads, type=pa.binary())
