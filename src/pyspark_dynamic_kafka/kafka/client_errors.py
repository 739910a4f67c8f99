"""librdkafka's error as confluent-kafka raises it: the ``KafkaError`` a ``KafkaException``
carries as its first argument (:func:`kafka_error`), and its code (:func:`error_code`)."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

__all__ = ["error_code", "kafka_error"]


def kafka_error(exc: BaseException) -> KafkaError | None:
    """The ``KafkaError`` that ``exc`` carries, if it is a ``KafkaException`` carrying one."""
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    return error if isinstance(error, KafkaError) else None


def error_code(exc: BaseException) -> int | None:
    """The code of the ``KafkaError`` that ``exc`` carries, if it carries one (librdkafka's own
    errors are negative, a broker's positive)."""
    error = kafka_error(exc)
    return None if error is None else int(error.code())
