"""The hot-path roles an engine plays, one :class:`~typing.Protocol` each, and the engine-neutral
values that cross the seam.

Each role has a Python implementation (confluent-kafka, fastavro) and a compiled one (the core),
side by side in this package under matching names:

=====================  ======================================  ==============================
role                   Python                                  compiled core
=====================  ======================================  ==============================
:class:`RangeReader`   :mod:`.read_python`                     :mod:`.read_core`
:class:`ColumnDecoder` :mod:`.decode_python`                   :mod:`.decode_core`
:class:`ColumnEncoder` :mod:`.encode_python`                   :mod:`.encode_core`
:class:`BatchProducer` :mod:`.write_python`                    :mod:`.write_core`
:class:`Transaction`   the sink's one, over either             the sink's one, over either
                       :class:`BatchProducer`                  :class:`BatchProducer`
=====================  ======================================  ==============================

The sink's one :class:`Transaction` stays with the sink (``sink/executor/transaction.py``): it
commits the sink's progress markers, with whichever :class:`BatchProducer` the cluster's engine
gives.

Which engine serves a cluster is :mod:`.choice`'s decision; the implementation of a role for an
engine is :mod:`.implementations`'. What crosses the seam is neutral: ranges as topic, partition,
start and end (:class:`Range`, which the source's offset ranges are), Arrow batches and arrays,
plain dataclasses (:class:`ReadOptions`, :class:`RangeRead`), so this package imports nothing
from the source or the sink.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import pyarrow as pa
from confluent_kafka import Consumer

from pyspark_dynamic_kafka.kafka.pool import ConsumerFactory

if TYPE_CHECKING:  # the Avro modules only where Avro columns are read
    from pyspark_dynamic_kafka.avro.decode import Decoded

__all__ = [
    "FLUSH_MARGIN_MS",
    "STAMP_HEADERS",
    "BatchProducer",
    "ColumnDecoder",
    "ColumnEncoder",
    "CommittedOffset",
    "ConsumerFactory",
    "CoreMissingError",
    "EncodeFailure",
    "GroupLender",
    "ProduceFailure",
    "Range",
    "RangeRead",
    "RangeReader",
    "ReadOptions",
    "TopicRoutes",
    "Transaction",
    "stamp_headers",
]

#: The dedupe headers' keys, in the order a record carries them (after its own headers): the
#: sink's stamp (sink id, batch, Spark partition) and the record's sequence in its task, each as
#: decimal or plain text, UTF-8 (both producers stamp them; the core names them in ``write.rs``).
STAMP_HEADERS = (
    "dynamic_kafka.sink",
    "dynamic_kafka.batch",
    "dynamic_kafka.partition",
    "dynamic_kafka.sequence",
)


def stamp_headers(stamp: tuple[str, str, int], sequence: int) -> list[tuple[str, bytes]]:
    """The dedupe headers of the ``sequence``-th record (from 0) of a task whose stamp is
    ``stamp`` (sink id, batch, Spark partition)."""
    sink, batch, partition = stamp
    values = (sink, batch, str(partition), str(sequence))
    return [(k, v.encode()) for k, v in zip(STAMP_HEADERS, values, strict=True)]


#: Makes the consumer of a group (by name) that lends the group's metadata to a transaction's
#: offset commit (confluent-kafka's producer needs one; the producer closes it).
GroupLender = Callable[[str], Consumer]

#: How long a producer's flush waits beyond its timeout: records fail, each naming its topic,
#: when their ``message.timeout.ms`` ends, before the flush gives up, which it does only when
#: librdkafka itself hangs.
FLUSH_MARGIN_MS = 10_000

#: What a task's writing reports (the sink's ``WriteReport``).
Report_co = TypeVar("Report_co", covariant=True)
#: Where a batch's rows go by their ``topic`` value: each value (``None`` for null) with the
#: topic its rows are produced to.
TopicRoutes = Sequence[tuple[str | None, str]]


class Range(Protocol):
    """An exact offset range of one partition: ``[start, end)``, its attributes read-only, so that
    a frozen dataclass (the source's offset ranges) is one.

    Attributes
    ----------
    topic
        The topic.
    partition
        The partition.
    start
        The first offset read.
    end
        The offset after the last one read.
    """

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...


@dataclass(frozen=True)
class ReadOptions:
    """How a range reader reads, as the task carries it.

    Attributes
    ----------
    poll_timeout_ms
        No progress for this long fails the read ("stuck").
    include_headers
        Whether the batches have a ``headers`` column.
    fail_on_data_loss
        Whether records of a range that are gone fail the read (else a warning).
    """

    poll_timeout_ms: int
    include_headers: bool
    fail_on_data_loss: bool


@dataclass(frozen=True)
class RangeRead:
    """One cluster's read, as a :class:`RangeReader` takes it.

    Attributes
    ----------
    cluster_id
        The cluster (records are named by it in errors).
    ranges
        Its exact ranges.
    options
        How they are read.
    properties
        The cluster's merged client properties: they mask secrets in what is logged.
    decoders
        The :class:`ColumnDecoder` of each Avro column by name (``key`` before ``value``; the
        batches then have ``headers``); none: the columns stay bytes.
    """

    cluster_id: str
    ranges: Sequence[Range]
    options: ReadOptions
    properties: Mapping[str, str]
    decoders: Mapping[str, ColumnDecoder] = field(default_factory=dict)


class RangeReader(Protocol):
    """Reads exact offset ranges of one cluster into Arrow batches of the source's schema, with
    a consumer of its :attr:`factory` lent by the consumer pool
    (:mod:`~pyspark_dynamic_kafka.kafka.pool`)."""

    @property
    def factory(self) -> ConsumerFactory:
        """The pool's factory of this reader's consumers."""
        ...

    def read(
        self, consumer: Any, request: RangeRead
    ) -> Iterator[tuple[pa.RecordBatch, dict[str, Decoded]]]:
        """Read ``request``'s ranges with ``consumer``, which is unassigned when reading ends:
        each batch with its Avro columns decoded by ``request.decoders`` (none: an empty dict).

        Raises
        ------
        DataLossError
            Records of a range are gone and ``fail_on_data_loss`` is on.
        ReadError
            No progress within the poll timeout, or the cluster answered with an error.
        AvroDecodeError
            ``FAILFAST``: a record cannot be decoded.
        SchemaRegistryError
            ``FAILFAST``: a record's schema could not be fetched.
        """
        ...


class ColumnDecoder(Protocol):
    """Decodes one cluster's Avro keys or values (Confluent's wire formats) into the reader
    schema's Arrow column."""

    def decode_arrow(
        self, values: pa.Array, headers: pa.Array | None, where: Callable[[int], str]
    ) -> Decoded:
        """Decode a batch's ``value`` (or ``key``) column with its ``headers`` column (or
        ``None``); ``where(i)`` names record ``i`` in a ``FAILFAST`` error."""
        ...


class ColumnEncoder(Protocol):
    """Encodes a column of one Avro writer schema's Spark type (the sink's ``value`` or ``key``
    with ``valueFormat=avro`` / ``keyFormat=avro``) into Confluent-framed payloads."""

    def encode_arrow(self, values: pa.Array, schema_id: int) -> pa.Array:
        """The payloads of ``values``: a binary array, each the magic byte ``0``, ``schema_id``
        (4 bytes, big-endian) and the Avro body, null where the value is null (a tombstone).

        Raises
        ------
        EncodeFailure
            At the first value that does not fit the schema, naming its row and why.
        """
        ...


#: An offset a group committed: (topic, partition, offset (negative: none), its metadata).
CommittedOffset = tuple[str, int, int, str | None]


class BatchProducer(Protocol):
    """Produces the sink's Arrow batches (columns ``value``, ``key``, ``topic``, ``partition``,
    ``headers``) to one cluster, counting the deliveries, with exactlyOnce's transaction steps.
    Each step fails with :class:`ProduceFailure`, but for two errors confluent-kafka's producer
    raises as the sink's confluent-kafka path always did: :meth:`begin_transaction`'s
    ``KafkaException`` as it is, and a batch without a ``value`` column as a
    :class:`~pyspark_dynamic_kafka.errors.WriteError` saying so."""

    def send(
        self, batch: pa.RecordBatch, topic: str | None = None, topics: TopicRoutes = ()
    ) -> None:
        """Hand every row of ``batch`` to the producer: to ``topic`` when given, else to the
        topic ``topics`` routes the row's ``topic`` value to; stops early once a delivery
        failed."""

    def failed(self) -> bool:
        """Whether a delivery report failed."""
        ...

    def flush(self, timeout_ms: int) -> int:
        """Wait for the acknowledgements up to ``timeout_ms`` (the records'
        ``message.timeout.ms``) and :data:`FLUSH_MARGIN_MS` more: the records still waiting."""
        ...

    def deliveries(self) -> tuple[dict[str, int], dict[str, int], tuple[str, str] | None]:
        """Records and key+value bytes per topic acknowledged so far, and the first failure as
        (topic, reason) or ``None``."""
        ...

    def init_transactions(self, timeout_ms: int) -> None:
        """Fence older producers of the configured ``transactional.id``."""

    def begin_transaction(self) -> None:
        """Begin a transaction."""

    def send_offset(
        self, group: str, place: tuple[str, int, int], metadata: str, timeout_ms: int
    ) -> None:
        """Commit offset ``place[2]`` of (topic, partition) ``place[:2]`` with ``metadata`` for
        ``group`` inside the open transaction."""

    def commit_transaction(self, timeout_ms: int) -> None:
        """Commit the open transaction."""

    def abort_transaction(self, timeout_ms: int) -> None:
        """Abort the open transaction."""

    def committed(
        self, group: str, places: list[tuple[str, int]], timeout_ms: int
    ) -> list[CommittedOffset] | None:
        """The stable offsets (none pending in a transaction) ``group`` committed on ``places``
        (topic, partition) of the producer's cluster, where the producer asks for them itself;
        ``None`` where it does not (a consumer is asked)."""
        ...

    def close(self) -> None:
        """Release the producer (records not yet acknowledged are dropped)."""


class Transaction(Protocol[Report_co]):
    """One producer's side of a task's transaction (confluent-kafka's or the compiled core's),
    its ``transactional.id`` initialised: older attempts are fenced. Each step fails with a
    :class:`~pyspark_dynamic_kafka.errors.WriteError` naming the cluster."""

    def begin(self) -> None:
        """Begin the transaction."""

    def write(self, batches: Iterable[pa.RecordBatch]) -> Report_co:
        """Send every row, flush, and check the deliveries."""
        ...

    def commit(self, batch_id: int, metadata: str) -> None:
        """Send the progress marker of micro-batch ``batch_id`` (its offset metadata
        ``metadata``) and commit, atomically."""

    def abort(self) -> None:
        """Abort the open transaction (its errors ignored: the broker aborts it on timeout)."""

    def committed(self, group: str, places: list[tuple[str, int]]) -> list[CommittedOffset] | None:
        """:meth:`BatchProducer.committed` of the transaction's producer (its timeout the
        task's)."""
        ...

    def close(self) -> None:
        """Release the producer."""


class CoreMissingError(ImportError):
    """The compiled core is not installed in this Python process (a compiled implementation
    was asked for)."""


class EncodeFailure(Exception):
    """A value a :class:`ColumnEncoder` cannot write, engine-neutral: its row in the column and
    why, for the sink to word as its :class:`~pyspark_dynamic_kafka.avro.encode.AvroEncodeError`
    (naming the row in the task, the topic, cluster, subject and schema id)."""

    def __init__(self, row: int, reason: str) -> None:
        super().__init__(row, reason)
        self.row = row
        self.reason = reason


class ProduceFailure(Exception):
    """A producer's failure, engine-neutral: the topic (``None`` for the whole producer) and
    librdkafka's reason, for the sink to word as its
    :class:`~pyspark_dynamic_kafka.errors.WriteError`."""

    def __init__(self, topic: str | None, reason: str) -> None:
        super().__init__(topic, reason)
        self.topic = topic
        self.reason = reason
