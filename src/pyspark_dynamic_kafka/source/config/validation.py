"""Every rule across source options, as Spark's kafka source has them, applied by
:func:`apply_rules`: one subscription, which client properties are refused
(:mod:`~pyspark_dynamic_kafka.source.config.spark_kafka`), which option wins
among the starting (or ending) ones, what only batch accepts, and trigger limits that agree.

Rules about one option alone (its type, range, whether it is required) are its declaration in
:mod:`~pyspark_dynamic_kafka.source.config.options`.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.offset_spec import PositionSpec
from pyspark_dynamic_kafka.optionspec import Mode, ParsedOptions
from pyspark_dynamic_kafka.source.config import position_options
from pyspark_dynamic_kafka.source.config.spark_kafka import check_client_keys

__all__ = [
    "ENDING_KEYS",
    "STARTING_KEYS",
    "apply_rules",
    "check_archive",
    "check_assignment",
    "check_batch",
    "check_commits",
    "position_spec",
]

#: The starting options, in precedence order (the first given wins).
STARTING_KEYS = ("startingTimestamp", "startingOffsetsByTimestamp", "startingOffsets")
#: The ending options, in precedence order.
ENDING_KEYS = ("endingTimestamp", "endingOffsetsByTimestamp", "endingOffsets")


def apply_rules(
    parsed: ParsedOptions, kafka: Mapping[str, str], mode: Mode
) -> tuple[PositionSpec, PositionSpec | None]:
    """Check every rule across options; return where partitions start and (batch) end.

    Parameters
    ----------
    parsed:
        The declared source options, each parsed on its own.
    kafka:
        The ``kafka.*`` options, prefix removed.
    mode:
        ``stream``, ``batch`` or ``any`` (see :func:`~pyspark_dynamic_kafka.source.config.options.
        parse_options`).

    Raises
    ------
    OptionsError
        Naming the options in conflict and the fix.
    """
    check_client_keys(kafka)  # first: kafka.bootstrap.servers says where streams come from
    check_subscription(parsed)
    starting = position_spec(parsed, STARTING_KEYS)
    ending = position_spec(parsed, ENDING_KEYS)
    batch_only = parsed.given_in_scope("batch")
    if mode == "stream" and batch_only:
        raise OptionsError(
            f"Option '{batch_only[0]}' is not valid for streaming queries: a stream has no end. "
            "Use it with spark.read (batch), or remove it (Trigger.AvailableNow reads what is "
            "available and stops)."
        )
    if mode == "batch":
        check_batch(starting, ending)
    check_trigger_limits(parsed)
    check_archive(parsed)
    check_commits(parsed, kafka)
    check_assignment(parsed, kafka, mode)
    return starting, ending if mode == "batch" else None


def check_subscription(parsed: ParsedOptions) -> None:
    """Refuse anything but exactly one of ``streamIds`` and ``streamPattern``."""
    if (parsed["streamIds"] is None) == (parsed["streamPattern"] is None):
        given = [k for k in ("streamIds", "streamPattern") if k in parsed.given]
        shown = ", ".join(f"{k}={parsed.given[k]!r}" for k in given) or "neither"
        raise OptionsError(f"Set exactly one of 'streamIds' and 'streamPattern' (got {shown}).")


def position_spec(parsed: ParsedOptions, keys: tuple[str, str, str]) -> PositionSpec:
    """The winning spec among a global timestamp, per-partition timestamps and offsets options.

    Parameters
    ----------
    parsed:
        The parsed options; the offsets option always has a value (its default).
    keys:
        The timestamp, per-partition timestamps and offsets keys, in precedence order.
    """
    timestamp, by_timestamp, offsets = keys
    return position_options.position_spec(parsed[timestamp], parsed[by_timestamp], parsed[offsets])


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


def check_trigger_limits(parsed: ParsedOptions) -> None:
    """Refuse ``minOffsetsPerTrigger`` above ``maxOffsetsPerTrigger``."""
    low, high = parsed["minOffsetsPerTrigger"], parsed["maxOffsetsPerTrigger"]
    if low is not None and high is not None and low > high:
        raise OptionsError(
            f"Option 'minOffsetsPerTrigger' ({low}) is larger than 'maxOffsetsPerTrigger' "
            f"({high}): lower the minimum or raise the maximum."
        )


def check_archive(parsed: ParsedOptions) -> None:
    """Refuse the ``archive.*`` options without ``archive.path``, and Avro columns with it."""
    if parsed["archive.path"] is not None:
        avro = [k for k in ("keyFormat", "valueFormat") if parsed[k] == "avro"]
        if avro:
            raise OptionsError(
                f"Option '{avro[0]}' (avro) does not work with 'archive.path' yet: a hybrid "
                "read's archive holds the source's byte columns. Read the archive with "
                f"{avro[0]}=bytes and decode after load(), or remove archive.path."
            )
        return
    given = [key for key in parsed.given if key.startswith("archive.")]
    if given:
        raise OptionsError(
            f"Option '{given[0]}' applies to hybrid reads only: set 'archive.path' to the "
            "archive read before Kafka, or remove the option."
        )


def check_commits(parsed: ParsedOptions, kafka: Mapping[str, str]) -> None:
    """Refuse ``commitOffsetsToKafka`` without ``kafka.group.id``: a generated group id is new
    for every run, so nothing could follow its commits."""
    if parsed["commitOffsetsToKafka"] and "group.id" not in kafka:
        raise OptionsError(
            "Option 'commitOffsetsToKafka' (true) needs 'kafka.group.id': the consumer group "
            "whose offsets are committed on every cluster. Set kafka.group.id, or remove "
            "commitOffsetsToKafka."
        )


def check_assignment(parsed: ParsedOptions, kafka: Mapping[str, str], mode: Mode) -> None:
    """Refuse ``assignment=group`` without ``kafka.group.id``, in a batch read, or with an
    archive: a group shares the partitions of live streams among the queries in it."""
    if parsed["assignment"] != "group":
        return
    if "group.id" not in kafka:
        raise OptionsError(
            "Option 'assignment' (group) needs 'kafka.group.id': the consumer group whose "
            "members share the partitions (the same id in every query that shares them). Set "
            "kafka.group.id, or use assignment=all."
        )
    if mode == "batch":
        raise OptionsError(
            "Option 'assignment' (group) does not work with a batch read (spark.read): a group "
            "shares the partitions of a running stream among its members. Use "
            "spark.readStream, or remove the option."
        )
    if parsed["archive.path"] is not None:
        raise OptionsError(
            "Option 'assignment' (group) does not work with 'archive.path': a hybrid read reads "
            "the whole archive in one query. Remove one of the two options."
        )
