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
    raised: BaseException, said: str
) -> None:
    producer = _Producer(raised)
    batch = pa.record_batch([pa.array(["a", "b"])], names=["value"])
    with pytest.raises(WriteError) as info:
        send_all(_task(), producer, [batch])  # type: ignore[arg-type]
    assert producer.sent == 2
    message = str(info.value)
    assert message.startswith("Cannot produce to cluster 'east' (stream 'orders'): ")
    assert said in message and SECRET not in message


def test_a_system_error_our_own_callback_caused_is_not_taken_for_a_kafka_failure() -> None:
    try:
        try:
            raise TypeError("a bug of ours")
        except TypeError:
            raise SystemError("returned a result with an exception set")  # noqa: B904
    except SystemError as exc:
        raised = exc
    batch = pa.record_batch([pa.array(["a"])], names=["value"])
    with pytest.raises(SystemError):
        send_all(_task(), _Producer(raised), [batch])  # type: ignore[arg-type]
