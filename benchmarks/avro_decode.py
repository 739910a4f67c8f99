"""What decoding Avro values costs: the compiled core's decoder (``NativeDecoder``, arrow-avro
straight into Arrow) against the Python decoder (``Decoder``, fastavro into Python objects, then
Arrow), both through ``decode_arrow`` as the source's readers call it.

The records are :mod:`benchmarks.avro`'s (:mod:`benchmarks.avro_records`: the 10-field schema of
docs/benchmarks.md, "Avro values"), written by fastavro with Confluent's framing (a zero byte and
a 4-byte id), in batches of 65,536 as a reader gives them; the writer schema is the reader
schema, fetched once. CPU time of this process, one thread, median of the rounds. Run:
``python -m benchmarks.avro_decode [--records N] [--rounds R] [--batch N]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from benchmarks.avro_records import SCHEMA, framed

from pyspark_dynamic_kafka.avro.decode import Decoder
from pyspark_dynamic_kafka.avro.framing import SchemaRef
from pyspark_dynamic_kafka.engines.decode_core import NativeDecoder
from pyspark_dynamic_kafka.registry.client import RegisteredSchema


def payloads(records: int) -> pa.Array:
    """The first ``records`` records of :mod:`benchmarks.avro_records`, framed with schema id 1."""
    return pa.array([value for _, value in framed(records, 1)], pa.binary())


def _fetch(ref: SchemaRef) -> RegisteredSchema:
    return RegisteredSchema(json.dumps(SCHEMA), schema_id=ref.schema_id)


def per_record(decoder: Any, values: pa.Array, batch: int) -> float:
    """CPU µs per record of one pass of ``decoder`` over ``values`` in batches of ``batch``."""
    where: Callable[[int], str] = lambda i: f"record {i}"  # noqa: E731
    start = time.process_time()
    for offset in range(0, len(values), batch):
        decoder.decode_arrow(values.slice(offset, batch), None, where)
    return (time.process_time() - start) / len(values) * 1e6


def arguments(doc: str, records: int, batch: int) -> argparse.Namespace:
    """The command line of an Avro benchmark (``doc``: its module's docstring): ``--records``,
    ``--rounds`` (3) and ``--batch``, defaults ``records`` and ``batch``."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=records)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=batch)
    return parser.parse_args()


def main() -> None:
    args = arguments(__doc__, 200_000, 65_536)
    values = payloads(args.records)
    size = values.buffers()[2].size / len(values)
    print(f"{args.records} records, {size:.1f} bytes each on the wire, batches of {args.batch}")
    text = json.dumps(SCHEMA)
    decoders = {"native": NativeDecoder(text, _fetch), "python": Decoder(text, _fetch)}
    native, python = decoders["native"], decoders["python"]
    first = [native.decode_arrow(values.slice(0, 1000), None, str).values]
    assert first[0].equals(python.decode_arrow(values.slice(0, 1000), None, str).values)
    compare(decoders, args.rounds, lambda decoder: per_record(decoder, values, args.batch))


def compare(sides: dict[str, Any], rounds: int, measure: Callable[[Any], float]) -> None:
    """``rounds`` rounds of ``measure`` (µs/record) of each side, by name (``native`` and
    ``python``), then :func:`print_rounds`."""
    times: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(rounds):
        for name, side in sides.items():
            times[name].append(measure(side))
    print_rounds(times)


def print_rounds(rounds: dict[str, list[float]]) -> None:
    """Each side's median µs/record and its rounds, then python / native."""
    for name, times in rounds.items():
        listed = ", ".join(f"{t:.3f}" for t in times)
        print(f"{name:>6}: {statistics.median(times):.3f} us/record (rounds {listed})")
    ratio = statistics.median(rounds["python"]) / statistics.median(rounds["native"])
    print(f"python/native: {ratio:.1f}x")


if __name__ == "__main__":
    main()
