"""Rules across options, as Spark's kafka source has them: which client properties are refused,
what only batch or only streams accept (which starting or ending option wins:
:func:`pyspark_dynamic_kafka.source.positions.position_spec`)."""

from __future__ import annotations

from collections.abc import Mapping

from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.position import PositionSpec

__all__ = ["ENDING_KEYS", "check_batch", "check_client_keys"]

ENDING_KEYS = ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp")

#: ``kafka.*`` keys Spark's kafka source rejects too, with the reason.
_FORBIDDEN_CLIENT_KEYS: Mapping[str, str] = {
    "auto.offset.reset": "set 'startingOffsets' (or a starting timestamp) to choose where a new "
    "query starts; later offsets live in the Spark checkpoint and 'failOnDataLoss' decides what "
    "happens when they are no longer available",
    "enable.auto.commit": "offsets are never committed to Kafka: the source tracks them in the "
    "Spark checkpoint",
    "key.deserializer": "keys are always read as bytes (the binary column 'key'); deserialize "
    "them with DataFrame operations, e.g. cast(key as string)",
    "value.deserializer": "values are always read as bytes (the binary column 'value'); "
    "deserialize them with DataFrame operations, e.g. cast(value as string) or from_json",
    "interceptor.classes": "consumer interceptors are not supported: the source reads exact "
    "offset ranges and an interceptor could change the records it sees",
}


def check_client_keys(kafka: Mapping[str, str]) -> None:
    """Refuse the ``kafka.*`` keys Spark's kafka source refuses, saying why.

    Raises
    ------
    OptionsError
        Naming the key and the reason.
    """
    for key in kafka:
        reason = _FORBIDDEN_CLIENT_KEYS.get(key.lower())
        if reason is not None:
            raise OptionsError(
                f"Option 'kafka.{key}' is not supported: {reason}. Remove the option."
            )


def check_batch(starting: PositionSpec, ending: PositionSpec) -> None:
    """Refuse a batch read starting at ``latest`` or ending at ``earliest``, as Spark does.

    Raises
    ------
    OptionsError
        Naming the option and the partition.
    """
    for spec, bad, what in ((starting, "latest", "start"), (ending, "earliest", "end")):
        positions = [spec.default] if spec.default is not None else []
        named = [(k, v) for k, v in spec.specific.items() if v.kind == bad]
        if any(pos.kind == bad for pos in positions) or named:
            where = f" (for {named[0][0][0]}/{named[0][0][1]}/{named[0][0][2]})" if named else ""
            code = -1 if bad == "latest" else -2
            raise OptionsError(
                f"Option '{spec.option}' cannot {what} a batch read at '{bad}'{where}: a batch "
                f"read covers the offsets between startingOffsets and endingOffsets. Use "
                f"{'earliest or a JSON offset' if bad == 'latest' else 'latest or a JSON offset'}"
                f" instead (not {code} in JSON)."
            )
