"""What encoding Avro values costs on the sink: the compiled core's encoder
(``NativeColumnEncoder``, Arrow straight into Confluent-framed Avro) against the Python encoder
(``PythonColumnEncoder``, Arrow into Python objects, then fastavro), both through
``encode_arrow`` as the sink's ``valueFormat=avro`` calls it.

The column is the one Spark hands the sink for :mod:`benchmarks.avro_records`' records (the
10-field schema of docs/benchmarks.md, "Avro values"): the records written by fastavro and read
back by the Python decoder into the schema's Spark type, in batches of 10,000 rows (Spark's
``spark.sql.execution.arrow.maxRecordsPerBatch``). Both encoders' payloads are checked equal
first. CPU time of this process, one thread, median of the rounds. Run:
``python -m benchmarks.avro_encode [--records N] [--rounds R] [--batch N]``.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pyarrow as pa
from benchmarks.avro_decode import _fetch, arguments, compare, payloads
from benchmarks.avro_records import SCHEMA

from pyspark_dynamic_kafka.avro.decode import Decoder
from pyspark_dynamic_kafka.engines.encode_core import NativeColumnEncoder
from pyspark_dynamic_kafka.engines.encode_python import PythonColumnEncoder


def column(records: int) -> pa.Array:
    """The Spark column of the first ``records`` records."""
    decoded = Decoder(json.dumps(SCHEMA), _fetch).decode_arrow(payloads(records), None, str)
    values: pa.Array = decoded.values
    return values


def batches(values: pa.Array, batch: int) -> list[pa.Array]:
    """``values`` in columns of ``batch`` rows, each with buffers of its own (as Spark hands
    each batch over; a slice would carry the whole column's buffers across the C interface)."""
    return [pa.concat_arrays([values.slice(o, batch)]) for o in range(0, len(values), batch)]


def per_record(encoder: Any, columns: list[pa.Array]) -> float:
    """CPU µs per record of one pass of ``encoder`` over ``columns``."""
    start = time.process_time()
    for values in columns:
        encoder.encode_arrow(values, 1)
    return (time.process_time() - start) / sum(len(c) for c in columns) * 1e6


def main() -> None:
    args = arguments(__doc__, 1_000_000, 10_000)
    values = column(args.records)
    print(f"{args.records} records of {values.type}, batches of {args.batch}")
    text = json.dumps(SCHEMA)
    native = NativeColumnEncoder(text)
    encoders = {"native": native, "python": PythonColumnEncoder(text)}
    sample = values.slice(0, 1000)
    assert (
        encoders["native"]
        .encode_arrow(sample, 1)
        .equals(encoders["python"].encode_arrow(sample, 1))
    )
    columns = batches(values, args.batch)
    compare(encoders, args.rounds, lambda encoder: per_record(encoder, columns))
    assert native._python is None, "the core handed batches to the Python encoder"


if __name__ == "__main__":
    main()
