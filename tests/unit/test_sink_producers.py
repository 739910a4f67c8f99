"""The sink's one producing path over either producer (``tests/engine_roles.py``' ``PRODUCERS``):
the same batches fail the same way, naming the cluster and never a secret, without a broker (a
closed loopback port; what they write is checked on Apache Kafka in
tests/integration/test_sink_write.py and the exactlyOnce tests)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from tests.engine_roles import AT_LEAST_ONCE_PRODUCERS, PRODUCERS, skip_without_core

from pyspark_dynamic_kafka.errors import WriteError, WriteRouteError
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.sink.executor.produce import produce_batches
from pyspark_dynamic_kafka.sink.executor.task import WriteTask
from pyspark_dynamic_kafka.sink.executor.transaction import produce_transaction
from pyspark_dynamic_kafka.sink.route import WriteRoute

SECRET = "sink-producers-SENTINEL"
WHERE = "cluster 'east' (stream 'orders')"


@pytest.fixture(params=AT_LEAST_ONCE_PRODUCERS)
def engine(request: pytest.FixtureRequest) -> str:
    """The planned engine of each producer: confluent-kafka's, then the compiled core's
    (librdkafka's producer, then its direct produce path)."""
    skip_without_core(request.param)
    return PRODUCERS[request.param]


def _task(engine: str, topics: tuple[str, ...] = ("orders",), **kwargs: object) -> WriteTask:
    properties = FrozenProperties({"bootstrap.servers": "127.0.0.1:9", "sasl.password": SECRET})
    route = WriteRoute("orders", "east", frozenset(topics), properties)
    return WriteTask(route, engine=engine, flush_timeout_ms=500, **kwargs)  # type: ignore[arg-type]


def test_a_row_outside_the_route_fails_before_anything_is_sent(engine: str) -> None:
    batch = pa.record_batch({"value": ["a", "b"], "topic": ["orders", "elsewhere"]})
    with pytest.raises(WriteRouteError, match="A row's topic 'elsewhere' is not in the write"):
        produce_batches(_task(engine), [batch])


def test_of_several_topics_outside_the_route_the_first_of_a_set_of_them_is_named(
    engine: str,
) -> None:
    # The route check takes a batch's topic values in the order a set of the column iterates
    # (the Python path's order, whatever the hash seed), for either producer.
    given = [f"t{i}" for i in range(30)] * 2 + ["orders"]
    first = next(t for t in set(given) if t != "orders")
    batch = pa.record_batch({"value": ["v"] * len(given), "topic": given})
    with pytest.raises(WriteRouteError, match=f"A row's topic {first!r} is not in"):
        produce_batches(_task(engine, ("orders", "audit")), [batch])


def test_rows_without_a_topic_on_a_route_of_several_fail_naming_it(engine: str) -> None:
    batch = pa.record_batch({"value": ["a"]})
    with pytest.raises(WriteRouteError, match="A row has no topic and the write route"):
        produce_batches(_task(engine, ("orders", "audit")), [batch])


def test_an_empty_batch_without_a_topic_writes_nothing(engine: str) -> None:
    batch = pa.record_batch({"value": pa.array([], pa.string())})
    report = produce_batches(_task(engine, ("orders", "audit")), [batch])
    assert (report.cluster_id, report.rows, report.skipped) == ("east", {}, False)


def test_rows_without_a_value_column_fail_saying_so(engine: str) -> None:
    batch = pa.record_batch({"key": ["k"]})
    with pytest.raises(WriteError) as caught:
        produce_batches(_task(engine), [batch])
    # confluent-kafka's producer says it alone, the core's after "Cannot produce to <cluster>"
    assert str(caught.value).endswith(
        "The rows have no 'value' column: it is required (binary or string)."
    )


def test_records_the_cluster_never_acknowledges_fail_naming_topic_and_cluster(
    engine: str,
) -> None:
    batch = pa.record_batch({"value": ["a", "b"]})
    with pytest.raises(WriteError) as caught:
        produce_batches(_task(engine), [batch])
    text = str(caught.value)
    assert text.startswith(f"A record was not written to topic 'orders' on {WHERE}: "), text
    assert SECRET not in text


def test_a_refused_configuration_fails_naming_the_cluster(engine: str) -> None:
    task = _task(engine, kafka_properties=FrozenProperties({"linger.ms": "many"}))
    with pytest.raises(WriteError) as caught:
        produce_batches(task, [pa.record_batch({"value": ["a"]})])
    text = str(caught.value)
    assert text.startswith(f"Cannot create a producer for {WHERE}: "), text
    # linger.ms, as librdkafka names it
    assert "queue.buffering.max.ms" in text and SECRET not in text


def test_a_transaction_librdkafka_refuses_fails_to_start_naming_the_cluster(engine: str) -> None:
    # message.timeout.ms above transaction.timeout.ms: librdkafka refuses the producer.
    kafka = FrozenProperties({"message.timeout.ms": "900000"})
    task = _task(engine, kafka_properties=kafka, exactly_once=True, sink_id="s")
    with pytest.raises(WriteError) as caught:
        produce_transaction(task, [pa.record_batch({"value": ["a"]})], batch_id=0, partition=0)
    text = str(caught.value)
    assert text.startswith(f"Cannot start a transaction on {WHERE}: "), text
    assert SECRET not in text


def test_a_transaction_on_a_cluster_that_does_not_answer_fails_to_start(engine: str) -> None:
    task = _task(engine, exactly_once=True, sink_id="s")
    with pytest.raises(WriteError) as caught:
        produce_transaction(task, [pa.record_batch({"value": ["a"]})], batch_id=0, partition=0)
    text = str(caught.value)
    assert text.startswith(f"Cannot start a transaction on {WHERE}: "), text
    assert SECRET not in text
