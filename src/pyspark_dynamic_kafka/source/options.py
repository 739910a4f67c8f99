"""Every source option, declared once: key, type, default and meaning; parsing and validation.

Spark hands option keys lowercased; keys are matched case-insensitively and reported in their
canonical spelling. Unknown keys are rejected with the closest valid key. Names and meanings
follow Spark's ``kafka`` source wherever it has the same option.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.kafka.config import FrozenProperties, is_secret_key
from pyspark_dynamic_kafka.position import NoMatch, PositionKind
from pyspark_dynamic_kafka.source import parsers as p
from pyspark_dynamic_kafka.source.positions import position_spec
from pyspark_dynamic_kafka.source.rules import ENDING_KEYS, check_batch, check_client_keys
from pyspark_dynamic_kafka.source.settings import SourceOptions

__all__ = [
    "KAFKA_PREFIX",
    "METADATA_PREFIX",
    "OPTIONS",
    "Mode",
    "OptionSpec",
    "SourceOptions",
    "parse_options",
]

T = TypeVar("T")

KAFKA_PREFIX = "kafka."
METADATA_PREFIX = "metadataService."

#: ``stream`` (readStream), ``batch`` (read) or ``any`` (only what both accept is checked).
Mode = Literal["any", "stream", "batch"]


@dataclass(frozen=True)
class OptionSpec(Generic[T]):
    """One declared option.

    Parameters
    ----------
    key:
        The canonical (camelCase) key.
    parse:
        Turns the string value into the typed value; raises ``ValueError`` with a reason.
    default:
        The value when the option is absent (``None``: no default).
    doc:
        One-line meaning, used in errors and the README table.
    """

    key: str
    parse: Callable[[str], T]
    default: str | None
    doc: str


def _spec(key: str, parse: Callable[[str], Any], default: str | None, doc: str) -> OptionSpec[Any]:
    return OptionSpec(key, parse, default, doc)


_DECLARED: tuple[OptionSpec[Any], ...] = (
    _spec(
        "metadataService",
        p.text,
        None,
        "Where stream ids are resolved: `file`, `http`, `singleCluster`, or "
        "`package.module:ClassName`.",
    ),
    _spec(
        "streamIds",
        p.stream_ids,
        None,
        "Comma-separated stream ids to read. Exactly one of streamIds and streamPattern.",
    ),
    _spec(
        "streamPattern",
        p.pattern,
        None,
        "Python regular expression (re.search) selecting stream ids, re-evaluated at discovery.",
    ),
    _spec(
        "startingOffsets",
        p.text,
        "latest",
        'Where reading starts: `earliest`, `latest` (streams only), or JSON {"cluster": {"topic": '
        '{"0": 23}}} (-2 earliest, -1 latest). Default `latest` for streams, `earliest` for '
        "batch. Ignored when a stream resumes from a checkpoint.",
    ),
    _spec(
        "startingTimestamp",
        p.text,
        None,
        "Start every partition at its first record with a timestamp at or after this epoch-ms "
        "value. Wins over startingOffsetsByTimestamp and startingOffsets.",
    ),
    _spec(
        "startingOffsetsByTimestamp",
        p.text,
        None,
        'Per-partition start timestamps: JSON {"cluster": {"topic": {"0": 1700000000000}}} '
        "(epoch ms). Wins over startingOffsets.",
    ),
    _spec(
        "startingOffsetsByTimestampStrategy",
        p.choice("error", "latest"),
        "error",
        "When no record is at or after a start timestamp: `error` fails the query, `latest` "
        "starts that partition at its latest offset.",
    ),
    _spec(
        "endingOffsets",
        p.text,
        "latest",
        'Batch only: where reading ends (exclusive): `latest` or JSON {"cluster": {"topic": '
        '{"0": 50}}} (-1 latest).',
    ),
    _spec(
        "endingTimestamp",
        p.text,
        None,
        "Batch only: end every partition before its first record at or after this epoch-ms value "
        "(latest when there is none). Wins over endingOffsetsByTimestamp and endingOffsets.",
    ),
    _spec(
        "endingOffsetsByTimestamp",
        p.text,
        None,
        "Batch only: per-partition end timestamps, JSON like startingOffsetsByTimestamp. Wins "
        "over endingOffsets.",
    ),
    _spec(
        "discoveryStartingOffsets",
        p.choice("earliest", "latest"),
        "earliest",
        "Where a cluster, topic or partition discovered after the query started begins.",
    ),
    _spec(
        "metadataDiscoveryIntervalMs",
        p.integer(),
        "10000",
        "How often metadata is re-read: milliseconds; 0 every micro-batch; negative only at start.",
    ),
    _spec(
        "metadataDiscoveryFailureThreshold",
        p.integer(0),
        "1",
        "Consecutive discovery failures tolerated while a previous metadata snapshot exists.",
    ),
    _spec(
        "failOnDataLoss",
        p.boolean,
        "true",
        "Fail the query when records it should read are gone (topic deleted or partition "
        "vanished while in the metadata, offsets out of range, offset went backwards); `false` "
        "logs a warning and continues from the earliest available offset.",
    ),
    _spec(
        "maxOffsetsPerTrigger",
        p.integer(1),
        None,
        "Streams: at most this many offsets per micro-batch, split over all partitions of all "
        "clusters in proportion to their backlog.",
    ),
    _spec(
        "minOffsetsPerTrigger",
        p.integer(1),
        None,
        "Streams: wait for at least this many new offsets before a micro-batch, or until "
        "maxTriggerDelay has passed since the last one.",
    ),
    _spec(
        "maxTriggerDelay",
        p.duration_ms,
        "15m",
        "Streams with minOffsetsPerTrigger: the longest wait before a micro-batch runs anyway.",
    ),
    _spec(
        "minPartitions",
        p.integer(1),
        None,
        "At least this many Spark tasks per batch (large offset ranges are split).",
    ),
    _spec(
        "maxRecordsPerPartition",
        p.integer(1),
        None,
        "At most this many records per Spark task (large offset ranges are split).",
    ),
    _spec(
        "includeHeaders",
        p.boolean,
        "false",
        "Add the column headers array<struct<key:string,value:binary>> (null when a record has "
        "no headers).",
    ),
    _spec(
        "groupIdPrefix",
        p.text,
        "spark-dynamic-kafka",
        "Prefix of the generated consumer group.id (unless kafka.group.id is set); offsets are "
        "never committed to it.",
    ),
    _spec(
        "kafkaConsumer.pollTimeoutMs",
        p.integer(1),
        "120000",
        "How long an executor waits for records of its offset range before failing the task.",
    ),
    _spec(
        "kafkaConsumer.cacheTimeoutMs",
        p.integer(0),
        "60000",
        "How long an idle pooled consumer stays open in a Python worker before it is closed.",
    ),
    _spec(
        "kafkaAdmin.requestTimeoutMs",
        p.integer(1),
        "30000",
        "Driver-side timeout for listing topics, partitions and offsets of one cluster.",
    ),
    _spec(
        "fetchOffset.numRetries",
        p.integer(0),
        "3",
        "Driver-side retries of a failed offset or topic listing of one cluster.",
    ),
    _spec(
        "fetchOffset.retryIntervalMs",
        p.integer(0),
        "10",
        "Milliseconds to wait before retrying a failed listing.",
    ),
)

OPTIONS: Mapping[str, OptionSpec[Any]] = {spec.key: spec for spec in _DECLARED}
_BY_LOWER: Mapping[str, OptionSpec[Any]] = {spec.key.lower(): spec for spec in _DECLARED}


def _shown(key: str, value: str) -> str:
    return "******" if is_secret_key(key) else repr(value)


def _unknown_key_error(key: str) -> OptionsError:
    candidates = {spec.key.lower(): spec.key for spec in _DECLARED}
    close = difflib.get_close_matches(key.lower(), list(candidates), n=1, cutoff=0.6)
    hint = f" Did you mean '{candidates[close[0]]}'?" if close else ""
    valid = ", ".join(spec.key for spec in _DECLARED)
    return OptionsError(
        f"Unknown option '{key}' for format dynamic_kafka.{hint} Valid options: {valid}, "
        f"and the prefixes '{KAFKA_PREFIX}*' (client properties) and '{METADATA_PREFIX}*'."
    )


def _split(options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    declared: dict[str, str] = {}
    kafka: dict[str, str] = {}
    metadata: dict[str, str] = {}
    for raw_key, value in options.items():
        key = str(raw_key)
        lowered = key.lower()
        if lowered.startswith(KAFKA_PREFIX):
            kafka[key[len(KAFKA_PREFIX) :]] = str(value)
        elif lowered.startswith(METADATA_PREFIX.lower()):
            metadata[lowered[len(METADATA_PREFIX) :]] = str(value)
        elif lowered in _BY_LOWER:
            declared[lowered] = str(value)
        else:
            raise _unknown_key_error(key)
    return declared, kafka, metadata


def _value(declared: Mapping[str, str], key: str) -> Any:
    spec = OPTIONS[key]
    raw = declared.get(key.lower(), spec.default)
    if raw is None:
        return None
    try:
        return spec.parse(raw)
    except ValueError as exc:
        raise OptionsError(
            f"Invalid value {_shown(key, raw)} for option '{key}': {exc}. {spec.doc}"
        ) from None


def parse_options(options: Mapping[str, str], mode: Mode = "stream") -> SourceOptions:
    """Parse and validate the options a query passed to ``format("dynamic_kafka")``.

    Parameters
    ----------
    options:
        Spark's option map (keys possibly lowercased, values strings).
    mode:
        ``stream`` for ``spark.readStream``, ``batch`` for ``spark.read``, ``any`` when not known
        yet (the schema is asked before Spark says which reader it wants).

    Raises
    ------
    OptionsError
        For an unknown key, a malformed value or conflicting options; the message names the key
        and the value.
    """
    declared, kafka, metadata = _split(options)
    service = _value(declared, "metadataService")
    if not service:
        raise OptionsError(
            "Option 'metadataService' is required: set it to 'file' (with metadataService.path), "
            "'http' (with metadataService.url), "
            "'singleCluster' (with metadataService.bootstrap.servers) or "
            "'package.module:ClassName' for your own service."
        )
    stream_ids = _value(declared, "streamIds")
    pattern = _value(declared, "streamPattern")
    if (stream_ids is None) == (pattern is None):
        given = [k for k in ("streamIds", "streamPattern") if k.lower() in declared]
        shown = ", ".join(f"{k}={declared[k.lower()]!r}" for k in given) or "neither"
        raise OptionsError(f"Set exactly one of 'streamIds' and 'streamPattern' (got {shown}).")
    check_client_keys(kafka)
    batch = mode == "batch"
    starting = position_spec(
        declared,
        "startingTimestamp",
        "startingOffsetsByTimestamp",
        "startingOffsets",
        "earliest" if batch else "latest",
    )
    ending = position_spec(
        declared, "endingTimestamp", "endingOffsetsByTimestamp", "endingOffsets", "latest"
    )
    ending_given = [k for k in ENDING_KEYS if k.lower() in declared]
    if mode == "stream" and ending_given:
        raise OptionsError(
            f"Option '{ending_given[0]}' is not valid for streaming queries: a stream has no end. "
            "Use it with spark.read (batch), or remove it (Trigger.AvailableNow reads what is "
            "available and stops)."
        )
    if batch:
        check_batch(starting, ending)
    low, high = _value(declared, "minOffsetsPerTrigger"), _value(declared, "maxOffsetsPerTrigger")
    if low is not None and high is not None and low > high:
        raise OptionsError(
            f"Option 'minOffsetsPerTrigger' ({low}) is larger than 'maxOffsetsPerTrigger' "
            f"({high}): lower the minimum or raise the maximum."
        )
    prefix = _value(declared, "groupIdPrefix")
    if not prefix:
        raise OptionsError("Option 'groupIdPrefix' must not be empty: remove it or set a prefix.")
    return SourceOptions(
        metadata_service=service,
        metadata_options=FrozenProperties(metadata),
        stream_ids=stream_ids,
        stream_pattern=pattern,
        starting=starting,
        ending=ending if batch else None,
        timestamp_strategy=NoMatch(_value(declared, "startingOffsetsByTimestampStrategy")),
        discovery_starting_offsets=PositionKind(_value(declared, "discoveryStartingOffsets")),
        discovery_interval_ms=_value(declared, "metadataDiscoveryIntervalMs"),
        discovery_failure_threshold=_value(declared, "metadataDiscoveryFailureThreshold"),
        kafka_properties=FrozenProperties(kafka),
        fail_on_data_loss=_value(declared, "failOnDataLoss"),
        max_offsets_per_trigger=high,
        min_offsets_per_trigger=low,
        max_trigger_delay_ms=_value(declared, "maxTriggerDelay"),
        min_partitions=_value(declared, "minPartitions"),
        max_records_per_partition=_value(declared, "maxRecordsPerPartition"),
        include_headers=_value(declared, "includeHeaders"),
        group_id_prefix=prefix,
        poll_timeout_ms=_value(declared, "kafkaConsumer.pollTimeoutMs"),
        consumer_cache_timeout_ms=_value(declared, "kafkaConsumer.cacheTimeoutMs"),
        admin_timeout_ms=_value(declared, "kafkaAdmin.requestTimeoutMs"),
        fetch_retries=_value(declared, "fetchOffset.numRetries"),
        fetch_retry_interval_ms=_value(declared, "fetchOffset.retryIntervalMs"),
    )
