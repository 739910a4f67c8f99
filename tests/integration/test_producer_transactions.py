"""Each producer's transactions (``tests/engine_roles.py``' ``EXACTLY_ONCE_PRODUCERS``:
confluent-kafka's, the compiled core's librdkafka producer and its direct produce path), at the
level of the :class:`~pyspark_dynamic_kafka.engines.roles.BatchProducer`, on Apache Kafka, exact
record sets: a committed transaction's records and its group offset show to read_committed
readers together; an aborted one's never do (read_uncommitted readers see its records); a
producer fenced by a newer one with its ``transactional.id`` fails and commits nothing."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from tests.engine_roles import EXACTLY_ONCE_PRODUCERS, PRODUCERS, skip_without_core
from tests.integration.helpers import DEADLINE, requires_kafka, wait_until
from tests.integration.sink_records import read_topic

from pyspark_dynamic_kafka.engines.implementations import batch_producer
from pyspark_dynamic_kafka.engines.roles import BatchProducer, ProduceFailure
from pyspark_dynamic_kafka.sink.executor.markers import marker_consumer

pytestmark = requires_kafka("Kafka transactions (Tansu's are not what these tests check)")

TIMEOUT_MS = 60_000
#: The group coordinator's answers a committed() is asked again after.
RETRIED = (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS)
GROUP = "txn-test.progress.0"


@pytest.fixture(params=EXACTLY_ONCE_PRODUCERS)
def engine(request: pytest.FixtureRequest) -> str:
    skip_without_core(request.param)
    return PRODUCERS[request.param]


@pytest.fixture
def east(kafka_clusters: Any) -> Any:
    cluster = kafka_clusters("east")["east"]
    cluster.create_topic("orders", partitions=3)
    cluster.create_topic("audit", partitions=1)
    return cluster


def _config(cluster: Any, transactional_id: str = "txn-test.east.0") -> dict[str, str]:
    return {
        "bootstrap.servers": cluster.bootstrap_servers,
        "enable.idempotence": "true",
        "partitioner": "murmur2_random",
        "transactional.id": transactional_id,
        "transaction.timeout.ms": "60000",
        "message.timeout.ms": str(TIMEOUT_MS),
    }


@pytest.fixture
def producers(engine: str, east: Any) -> Iterator[Any]:
    """A factory of ``engine``'s transactional producers to ``east``, initialised; all closed
    after the test."""
    made: list[BatchProducer] = []

    def lend(group: str) -> Consumer:
        return marker_consumer({"bootstrap.servers": east.bootstrap_servers}, group)

    def make(transactional_id: str = "txn-test.east.0") -> BatchProducer:
        producer = batch_producer(engine, _config(east, transactional_id), None, lend)
        made.append(producer)
        producer.init_transactions(TIMEOUT_MS)
        return producer

    yield make
    for producer in made:
        producer.close()


def _batch(prefix: str, n: int, topics: tuple[str, ...] = ("orders", "audit")) -> pa.RecordBatch:
    return pa.record_batch(
        {
            "key": [f"k{i}" for i in range(n)],
            "value": [f"{prefix}{i}" for i in range(n)],
            "topic": [topics[i % len(topics)] for i in range(n)],
        }
    )


ROUTES = [("orders", "orders"), ("audit", "audit")]


def _values(cluster: Any, isolation: str = "read_committed") -> list[str]:
    return sorted(r.value for t in ("orders", "audit") for r in read_topic(cluster, t, isolation))


def _shows(cluster: Any, want: list[str]) -> None:
    """Wait until read_committed readers see exactly ``want`` (sorted): a commit's markers are
    written to the partitions after EndTxn is answered."""
    seen: list[list[str]] = [[]]

    def shown() -> bool:
        seen[0] = _values(cluster)
        return seen[0] == want

    try:
        wait_until(shown, DEADLINE, "the committed records")
    except AssertionError:
        assert seen[0] == want  # the difference shown
        raise


def _marker(cluster: Any, group: str = GROUP) -> tuple[int, str] | None:
    """The group's committed offset of orders-0 and its metadata (read_committed), or None."""
    found: list[TopicPartition] = []

    def read() -> bool:
        consumer = marker_consumer({"bootstrap.servers": cluster.bootstrap_servers}, group)
        try:
            found[:] = consumer.committed([TopicPartition("orders", 0)], timeout=60)
        except KafkaException as exc:  # the group's coordinator still loading, or moving
            if not exc.args[0].retriable() and exc.args[0].code() not in RETRIED:
                raise
            return False
        finally:
            consumer.close()
        return True

    wait_until(read, DEADLINE, "the group's committed offsets")
    (place,) = found
    if place.offset < 0:
        return None
    return place.offset, (place.metadata or "").rstrip("\0")


def test_a_committed_transaction_shows_its_records_and_its_offset_together(
    producers: Any, east: Any
) -> None:
    producer = producers()
    producer.begin_transaction()
    producer.send(_batch("a", 1_000), None, ROUTES)
    producer.send(_batch("b", 10, ("audit",)), "audit")
    assert producer.flush(TIMEOUT_MS) == 0
    # sent and acknowledged, not committed: read_committed readers see none of it
    assert _values(east) == []
    assert _marker(east) is None
    producer.send_offset(GROUP, ("orders", 0, 7), "batch 7", TIMEOUT_MS)
    producer.commit_transaction(TIMEOUT_MS)
    want = sorted([f"a{i}" for i in range(1_000)] + [f"b{i}" for i in range(10)])
    _shows(east, want)
    assert _marker(east) == (7, "batch 7")
    rows, _, error = producer.deliveries()
    assert error is None
    assert rows == {"orders": 500, "audit": 510}
    # a second transaction of the same producer
    producer.begin_transaction()
    producer.send(_batch("c", 4), None, ROUTES)
    producer.send_offset(GROUP, ("orders", 0, 8), "batch 8", TIMEOUT_MS)
    producer.commit_transaction(TIMEOUT_MS)
    _shows(east, sorted(want + [f"c{i}" for i in range(4)]))
    assert _marker(east) == (8, "batch 8")


def test_an_aborted_transaction_shows_neither_its_records_nor_its_offset(
    producers: Any, east: Any
) -> None:
    producer = producers()
    producer.begin_transaction()
    producer.send(_batch("x", 300), None, ROUTES)
    assert producer.flush(TIMEOUT_MS) == 0
    producer.send_offset(GROUP, ("orders", 0, 3), "batch 3", TIMEOUT_MS)
    producer.send(_batch("y", 50), None, ROUTES)  # some perhaps never sent
    producer.abort_transaction(TIMEOUT_MS)
    assert _values(east) == []
    assert _marker(east) is None
    uncommitted = set(_values(east, "read_uncommitted"))
    assert {f"x{i}" for i in range(300)} <= uncommitted
    assert uncommitted <= {f"x{i}" for i in range(300)} | {f"y{i}" for i in range(50)}
    # The transactional id writes on: a new producer (a task's retry) commits its own rows.
    # The aborted one is closed first, as the sink closes a task's producer before its retry:
    # left open, librdkafka's is fenced by the new one and its close may hang.
    producer.close()
    again = producers()
    again.begin_transaction()
    again.send(_batch("z", 20), None, ROUTES)
    again.send_offset(GROUP, ("orders", 0, 3), "batch 3", TIMEOUT_MS)
    again.commit_transaction(TIMEOUT_MS)
    _shows(east, sorted(f"z{i}" for i in range(20)))
    assert _marker(east) == (3, "batch 3")


def test_a_fenced_producer_fails_and_commits_nothing(producers: Any, east: Any) -> None:
    older = producers()
    older.begin_transaction()
    older.send(_batch("old", 100), None, ROUTES)
    assert older.flush(TIMEOUT_MS) == 0
    # Another attempt initialises the same transactional id: the older one is fenced and its
    # open transaction aborted.
    newer = producers()
    newer.begin_transaction()
    newer.send(_batch("new", 30), None, ROUTES)
    newer.send_offset(GROUP, ("orders", 0, 1), "newer", TIMEOUT_MS)
    newer.commit_transaction(TIMEOUT_MS)
    with pytest.raises(ProduceFailure):
        older.send(_batch("late", 100), None, ROUTES)
        older.flush(TIMEOUT_MS)
        older.send_offset(GROUP, ("orders", 0, 2), "older", TIMEOUT_MS)
        older.commit_transaction(TIMEOUT_MS)
    with contextlib.suppress(ProduceFailure):  # as the sink aborts: it may fail, fenced
        older.abort_transaction(TIMEOUT_MS)
    _shows(east, sorted(f"new{i}" for i in range(30)))
    assert _marker(east) == (1, "newer")
    everything = set(_values(east, "read_uncommitted"))
    assert {f"old{i}" for i in range(100)} <= everything
