"""How confluent-kafka's failures while producing reach the user: a WriteError naming the cluster.

The producer here is scripted (a mock): no real broker makes confluent-kafka lose the fenced
producer's exception on demand (``flush`` "returned NULL without setting an exception", seen
under load with a transactional producer fenced by a newer attempt).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import KafkaError, KafkaException

from pyspark_dynamic_kafka.engines import write_python
from pyspark_dynamic_kafka.engines.implementations import batch_producer
from pyspark_dynamic_kafka.errors import WriteError
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.sink.executor.produce import send_all
from pyspark_dynamic_kafka.sink.executor.task import WriteTask
from pyspark_dynamic_kafka.sink.route import WriteRoute

SECRET = "sink-producing-SENTINEL"


class _Producer:
    """Takes every record, then fails its flush with ``raised``."""

    def __init__(self, raised: BaseException) -> None:
        self.raised = raised
        self.sent = 0

    def produce(self, topic: str, on_delivery: Any = None, **kwargs: Any) -> None:
        self.sent += 1

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        raise self.raised


def _python(producer: _Producer, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The Python engine's producer, over the scripted confluent-kafka ``producer``."""
    monkeypatch.setattr(write_python, "Producer", lambda config: producer)
    return batch_producer("python", {}, None)


def _task() -> WriteTask:
    properties = FrozenProperties({"bootstrap.servers": "h:1", "sasl.password": SECRET})
    return WriteTask(WriteRoute("orders", "east", frozenset({"orders"}), properties))


def _fenced() -> SystemError:
    try:
        try:
            raise KafkaException(KafkaError(KafkaError._FENCED, "producer fenced"))
        except KafkaException:
            raise SystemError("<method 'flush'> returned a result with an exception set")  # noqa: B904
    except SystemError as exc:
        return exc


@pytest.mark.parametrize(
    ("raised", "said"),
    [
        (KafkaException(KafkaError(KafkaError._FENCED, "producer fenced")), "producer fenced"),
        (_fenced(), "producer fenced"),
        (
            SystemError("<method 'flush'> returned NULL without setting an exception"),
            "returned NULL without setting an exception",
        ),
    ],
)
def test_a_failed_flush_is_a_write_error_naming_the_cluster(
    raised: BaseException, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    producer = _Producer(raised)
    batch = pa.record_batch([pa.array(["a", "b"])], names=["value"])
    with pytest.raises(WriteError) as info:
        send_all(_task(), _python(producer, monkeypatch), [batch])
    assert producer.sent == 2
    message = str(info.value)
    assert message.startswith("Cannot produce to cluster 'east' (stream 'orders'): ")
    assert said in message and SECRET not in message


def test_a_system_error_our_own_callback_caused_is_not_taken_for_a_kafka_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    try:
        try:
            raise TypeError("a bug of ours")
        except TypeError:
            raise SystemError("returned a result with an exception set")  # noqa: B904
    except SystemError as exc:
        raised = exc
    batch = pa.record_batch([pa.array(["a"])], names=["value"])
    with pytest.raises(SystemError):
        send_all(_task(), _python(_Producer(raised), monkeypatch), [batch])


def test_a_producer_that_failed_is_closed_not_left_reconnecting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A real producer, to a port nothing listens on: its records time out. Left to the error's
    # traceback, it would go on reconnecting to that port (seen taking a stopped broker's port
    # that Spark's result server had been given since).
    from confluent_kafka import Producer

    from pyspark_dynamic_kafka.sink.executor import produce

    made: list[Any] = []

    class Recorded(Producer):  # type: ignore[misc]
        closed = False

        def close(self, *args: Any) -> Any:
            self.closed = True
            return super().close(*args)

    def recorded(config: dict[str, str]) -> Recorded:
        producer = Recorded(config)
        made.append(producer)
        return producer

    monkeypatch.setattr(write_python, "Producer", recorded)
    properties = FrozenProperties({"bootstrap.servers": "127.0.0.1:9"})
    task = WriteTask(WriteRoute("orders", "east", frozenset({"orders"}), properties))
    task = WriteTask(task.route, flush_timeout_ms=500)
    batch = pa.RecordBatch.from_pydict({"value": [b"x"]})
    with pytest.raises(WriteError, match="east"):
        produce.produce_batches(task, [batch])
    assert [p.closed for p in made] == [True]
