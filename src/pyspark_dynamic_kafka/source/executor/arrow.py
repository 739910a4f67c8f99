"""Arrow output: Spark's kafka-source columns plus ``cluster``, built column-wise.

Records arrive in *runs*: consecutive records of one (topic, partition). The per-record columns
(key, value, timestamp, and headers when asked for) are gathered with one C-level call per
record and column; the run-constant columns (topic, partition, cluster) are built from the runs'
lengths. Offsets too, when a run has no gap (its last offset minus its first is its length minus
one, as almost always outside compacted or transactional topics): offsets only ever increase
within a partition, so the run is exactly ``first, first + 1, ...`` and is built by one
vectorised add, saving two per-record conversions (figures: docs/benchmarks.md, "What was made
faster").

The columns are Spark's, in Spark's order (``headers`` only with ``includeHeaders``), then
``cluster``: the schemas are :mod:`~pyspark_dynamic_kafka.source.schema`'s (importable
from here too).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import Message

from pyspark_dynamic_kafka.errors import ReadError
from pyspark_dynamic_kafka.source.schema import (
    ARROW_SCHEMA,
    HEADERS_TYPE,
    SPARK_SCHEMA,
    TIMESTAMP_TYPE,
    arrow_schema,
    spark_schema,
)

__all__ = ["ARROW_SCHEMA", "SPARK_SCHEMA", "BatchBuilder", "arrow_schema", "spark_schema"]


#: librdkafka's "timestamp not available" type; Spark's ids are librdkafka's minus one
#: (CreateTime 1 -> 0, LogAppendTime 2 -> 1, not available 0 -> -1).
_NO_TIMESTAMP = 0
#: ``Message.timestamp()`` pairs, converted in one pass (faster than one pass per field).
_STAMP = pa.struct([pa.field("type", pa.int32()), pa.field("ms", pa.int64())])
#: The latest and earliest record timestamps (ms) Spark's timestamp type holds (µs in a signed
#: 64-bit integer): Spark's kafka source multiplies exactly and fails the task on the others.
LATEST_MS = (2**63 - 1) // 1000
EARLIEST_MS = -LATEST_MS


def past_range(cluster_id: str, topic: str, partition: int, offset: int, ms: int) -> str:
    """The message of a read failing on a record whose timestamp is past Spark's range (the
    compiled core's, word for word)."""
    return (
        f"Reading from cluster '{cluster_id}' failed: the record of {topic}/{partition} at "
        f"offset {offset} has a timestamp of {ms} ms, past Spark's timestamp range "
        f"({EARLIEST_MS} to {LATEST_MS} ms): was it written in nanoseconds or microseconds? "
        "Spark's own kafka source fails on it too. Fix the producer; to read on, start from a "
        "later offset"
    )


class BatchBuilder:
    """Accumulates runs of records of one cluster and emits bounded Arrow record batches.

    Parameters
    ----------
    cluster_id:
        Value of the ``cluster`` column.
    include_headers:
        Whether to build the ``headers`` column.
    max_rows, max_bytes:
        A batch is due when either bound is reached (``max_bytes`` counts value bytes).
    """

    def __init__(
        self,
        cluster_id: str,
        include_headers: bool = False,
        max_rows: int = 65536,
        max_bytes: int = 32 << 20,
    ) -> None:
        self.cluster_id = cluster_id
        self.include_headers = include_headers
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self._schema = arrow_schema(include_headers)
        self._cluster = pa.scalar(cluster_id, pa.string())
        self._reset()

    def _reset(self) -> None:
        self._keys: list[bytes | None] = []
        self._values: list[bytes | None] = []
        #: per run: (first offset, count) when gap-free, else the run's offsets
        self._offsets: list[tuple[int, int] | list[int | None]] = []
        self._rows = 0
        self._stamps: list[tuple[int, int]] = []
        self._runs: list[tuple[str, int, int]] = []
        self._headers: list[Any] = []
        self._bytes = 0

    def add_run(self, topic: str, partition: int, messages: list[Any]) -> None:
        """Add confluent-kafka messages of one partition, already checked to be in range."""
        if not messages:
            return
        headers = self._headers_of(topic, partition, messages) if self.include_headers else []
        self._keys += map(Message.key, messages)
        values = list(map(Message.value, messages))
        self._values += values
        first, count = messages[0].offset(), len(messages)
        if messages[-1].offset() - first == count - 1:
            self._offsets.append((first, count))
        else:
            self._offsets.append(list(map(Message.offset, messages)))
        self._rows += count
        self._stamps += map(Message.timestamp, messages)
        self._headers += headers
        if self._runs and self._runs[-1][:2] == (topic, partition):
            self._runs[-1] = (topic, partition, self._runs[-1][2] + len(messages))
        else:
            self._runs.append((topic, partition, len(messages)))
        self._bytes += sum(map(len, filter(None, values)))

    def _headers_of(self, topic: str, partition: int, messages: list[Any]) -> list[Any]:
        """The messages' headers (``None`` for none).

        Raises
        ------
        ReadError
            A header name is not UTF-8: confluent-kafka cannot decode it (``Message.headers()``
            raises ``SystemError``, and a second call gives broken names), so nothing is added.
        """
        headers: list[Any] = []
        try:
            headers.extend(h or None for h in map(Message.headers, messages))
        except (SystemError, UnicodeDecodeError):
            offset = messages[len(headers)].offset()
            raise ReadError(
                f"Reading from cluster '{self.cluster_id}' failed: the record of "
                f"{topic}/{partition} at offset {offset} has a header name that is not UTF-8, "
                "which confluent-kafka (the Python reader's client) cannot decode. Read the "
                "cluster with the compiled core (reader=auto or native), which gives such a name "
                "as Spark's own source does (invalid bytes as U+FFFD), or without includeHeaders."
            ) from None
        return headers

    @property
    def due(self) -> bool:
        """Whether a batch should be emitted now."""
        return self._rows >= self.max_rows or self._bytes >= self.max_bytes

    def __len__(self) -> int:
        return self._rows

    def flush(self) -> pa.RecordBatch:
        """Build one record batch from what was added and reset.

        Raises
        ------
        ReadError
            A record's timestamp is past Spark's range (:func:`past_range`).
        """
        n = self._rows
        stamps = pa.array(self._stamps, _STAMP)
        kind, ms = stamps.field(0), stamps.field(1)
        missing = pc.equal(kind, _NO_TIMESTAMP)
        offsets = _offsets(self._offsets)
        try:
            micros = pc.multiply_checked(ms, 1000)
        except pa.ArrowInvalid:
            self._refuse(missing, ms, offsets)
            micros = pc.multiply(ms, 1000)  # only rows without a timestamp overflowed
        timestamp = pc.if_else(
            missing, pa.scalar(None, TIMESTAMP_TYPE), micros.cast(TIMESTAMP_TYPE)
        )
        columns = [
            pa.array(self._keys, pa.binary()),
            pa.array(self._values, pa.binary()),
            _repeated([(t, c) for t, _, c in self._runs], pa.string()),
            _repeated([(p, c) for _, p, c in self._runs], pa.int32()),
            offsets,
            timestamp,
            pc.subtract(kind, 1),
        ]
        if self.include_headers:
            columns.append(pa.array(self._headers, HEADERS_TYPE))
        columns.append(pa.repeat(self._cluster, n))
        self._reset()
        return pa.RecordBatch.from_arrays(columns, schema=self._schema)

    def _refuse(self, missing: pa.Array, ms: pa.Array, offsets: pa.Array) -> None:
        """Raise for the first record with a timestamp past Spark's range, if any."""
        past = pc.or_(pc.greater(ms, LATEST_MS), pc.less(ms, EARLIEST_MS))
        first = pc.index(pc.and_not(past, missing), True).as_py()
        if first < 0:
            return
        row = 0
        for topic, partition, count in self._runs:  # the run holding the row
            row += count
            if first < row:
                offset = offsets[first].as_py()
                message = past_range(self.cluster_id, topic, partition, offset, ms[first].as_py())
                raise ReadError(message)


def _offsets(runs: list[tuple[int, int] | list[int | None]]) -> pa.Array:
    """The offset column: ``first + 0 .. count - 1`` per gap-free run, else the run's list."""
    parts = [
        pc.add(_iota(run[1]), run[0]) if isinstance(run, tuple) else pa.array(run, pa.int64())
        for run in runs
    ]
    if not parts:
        return pa.array([], pa.int64())
    return parts[0] if len(parts) == 1 else pa.concat_arrays(parts)


#: Built on first use: building an array from Python values makes pyarrow import pandas.
_IOTA: list[pa.Array] = []


def _iota(count: int) -> pa.Array:
    """``0, 1, ..., count - 1`` as int64, sliced from one cached array grown on demand."""
    if not _IOTA:
        _IOTA.append(pa.array(range(max(count, 65536)), pa.int64()))
    elif len(_IOTA[0]) < count:
        _IOTA[0] = pa.array(range(max(count, 65536)), pa.int64())
    return _IOTA[0].slice(0, count)


def _repeated(runs: list[tuple[Any, int]], type_: pa.DataType) -> pa.Array:
    """An array holding each run's value ``count`` times, in order."""
    if not runs:
        return pa.array([], type_)
    parts = [pa.repeat(pa.scalar(value, type_), count) for value, count in runs]
    return parts[0] if len(parts) == 1 else pa.concat_arrays(parts)
