"""Every source option, declared once: key, type, default and meaning; parsing and validation.

Spark hands option keys lowercased; keys are matched case-insensitively and reported in their
canonical spelling. Unknown keys are rejected with the closest valid key.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.kafka.config import FrozenProperties, is_secret_key
from pyspark_dynamic_kafka.source.offsets import StartingOffsets, parse_starting_offsets

__all__ = [
    "KAFKA_PREFIX",
    "METADATA_PREFIX",
    "OPTIONS",
    "OptionSpec",
    "SourceOptions",
    "parse_options",
]

T = TypeVar("T")

KAFKA_PREFIX = "kafka."
METADATA_PREFIX = "metadataService."


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


def _int(minimum: int | None = None) -> Callable[[str], int]:
    def parse(value: str) -> int:
        try:
            number = int(value.strip())
        except ValueError:
            raise ValueError("expected an integer") from None
        if minimum is not None and number < minimum:
            raise ValueError(f"expected an integer >= {minimum}")
        return number

    return parse


def _choice(*choices: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        lowered = value.strip().lower()
        if lowered not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return lowered

    return parse


def _text(value: str) -> str:
    return value.strip()


def _stream_ids(value: str) -> tuple[str, ...]:
    ids = tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    if not ids:
        raise ValueError("expected a comma-separated list of stream ids")
    return ids


def _pattern(value: str) -> re.Pattern[str]:
    try:
        return re.compile(value)
    except re.error as exc:
        raise ValueError(f"not a valid Python regular expression ({exc})") from None


_DECLARED: tuple[OptionSpec[Any], ...] = (
    OptionSpec(
        "metadataService",
        _text,
        None,
        "Where stream ids are resolved: `file`, `singleCluster`, or `package.module:ClassName`.",
    ),
    OptionSpec(
        "streamIds",
        _stream_ids,
        None,
        "Comma-separated stream ids to read. Exactly one of streamIds and streamPattern.",
    ),
    OptionSpec(
        "streamPattern",
        _pattern,
        None,
        "Python regular expression (re.search) selecting stream ids, re-evaluated at discovery.",
    ),
    OptionSpec(
        "startingOffsets",
        _text,
        "latest",
        'Where a new query starts: `latest`, `earliest`, or JSON {"cluster": {"topic": '
        '{"0": 23}}} (-2 earliest, -1 latest). Ignored when resuming from a checkpoint.',
    ),
    OptionSpec(
        "discoveryStartingOffsets",
        _choice("earliest", "latest"),
        "earliest",
        "Where a cluster, topic or partition discovered after the query started begins.",
    ),
    OptionSpec(
        "metadataDiscoveryIntervalMs",
        _int(),
        "10000",
        "How often metadata is re-read: milliseconds; 0 every micro-batch; negative only at start.",
    ),
    OptionSpec(
        "metadataDiscoveryFailureThreshold",
        _int(0),
        "1",
        "Consecutive discovery failures tolerated while a previous metadata snapshot exists.",
    ),
    OptionSpec(
        "kafkaConsumer.pollTimeoutMs",
        _int(1),
        "120000",
        "How long an executor waits for records of its offset range before failing the task.",
    ),
    OptionSpec(
        "kafkaConsumer.cacheTimeoutMs",
        _int(0),
        "60000",
        "How long an idle pooled consumer stays open in a Python worker before it is closed.",
    ),
    OptionSpec(
        "kafkaAdmin.requestTimeoutMs",
        _int(1),
        "30000",
        "Driver-side timeout for listing topics, partitions and offsets of one cluster.",
    ),
)

OPTIONS: Mapping[str, OptionSpec[Any]] = {spec.key: spec for spec in _DECLARED}
_BY_LOWER: Mapping[str, OptionSpec[Any]] = {spec.key.lower(): spec for spec in _DECLARED}
_PREFIXES = (KAFKA_PREFIX, METADATA_PREFIX)


@dataclass(frozen=True)
class SourceOptions:
    """Parsed, validated source options (built once, on the driver).

    Attributes
    ----------
    metadata_service:
        Value of ``metadataService``.
    metadata_options:
        ``metadataService.*`` options, prefix removed, keys lowercased.
    stream_ids:
        Subscribed ids, or ``None`` when a pattern is used.
    stream_pattern:
        Compiled ``streamPattern``, or ``None``.
    starting_offsets:
        Parsed ``startingOffsets``.
    discovery_starting_offsets:
        ``earliest`` or ``latest``.
    discovery_interval_ms, discovery_failure_threshold:
        Metadata re-read settings.
    kafka_properties:
        ``kafka.*`` client properties, prefix removed; applied to every cluster.
    poll_timeout_ms, consumer_cache_timeout_ms, admin_timeout_ms:
        Client timeouts.
    """

    metadata_service: str
    metadata_options: Mapping[str, str]
    stream_ids: tuple[str, ...] | None
    stream_pattern: re.Pattern[str] | None
    starting_offsets: StartingOffsets
    discovery_starting_offsets: str
    discovery_interval_ms: int
    discovery_failure_threshold: int
    kafka_properties: FrozenProperties = field(default_factory=FrozenProperties)
    poll_timeout_ms: int = 120000
    consumer_cache_timeout_ms: int = 60000
    admin_timeout_ms: int = 30000

    def subscription_description(self) -> str:
        """Describe the subscription for messages: ``streamIds=a,b`` or ``streamPattern=...``."""
        if self.stream_ids is not None:
            return f"streamIds={','.join(self.stream_ids)}"
        pattern = self.stream_pattern.pattern if self.stream_pattern else ""
        return f"streamPattern={pattern}"


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


def parse_options(options: Mapping[str, str]) -> SourceOptions:
    """Parse and validate the options a query passed to ``format("dynamic_kafka")``.

    Parameters
    ----------
    options:
        Spark's option map (keys possibly lowercased, values strings).

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
            "'singleCluster' (with metadataService.bootstrap.servers) or "
            "'package.module:ClassName' for your own service."
        )
    stream_ids = _value(declared, "streamIds")
    pattern = _value(declared, "streamPattern")
    if (stream_ids is None) == (pattern is None):
        given = [k for k in ("streamIds", "streamPattern") if k.lower() in declared]
        shown = ", ".join(f"{k}={declared[k.lower()]!r}" for k in given) or "neither"
        raise OptionsError(f"Set exactly one of 'streamIds' and 'streamPattern' (got {shown}).")
    for forbidden in ("auto.offset.reset", "enable.auto.commit"):
        if forbidden in {k.lower() for k in kafka}:
            raise OptionsError(
                f"Option 'kafka.{forbidden}' is not supported: the source assigns partitions and "
                "tracks offsets itself in the Spark checkpoint. Remove the option."
            )
    starting_raw = declared.get("startingoffsets", OPTIONS["startingOffsets"].default) or "latest"
    starting = parse_starting_offsets(starting_raw, option="startingOffsets")
    return SourceOptions(
        metadata_service=service,
        metadata_options=metadata,
        stream_ids=stream_ids,
        stream_pattern=pattern,
        starting_offsets=starting,
        discovery_starting_offsets=_value(declared, "discoveryStartingOffsets"),
        discovery_interval_ms=_value(declared, "metadataDiscoveryIntervalMs"),
        discovery_failure_threshold=_value(declared, "metadataDiscoveryFailureThreshold"),
        kafka_properties=FrozenProperties(kafka),
        poll_timeout_ms=_value(declared, "kafkaConsumer.pollTimeoutMs"),
        consumer_cache_timeout_ms=_value(declared, "kafkaConsumer.cacheTimeoutMs"),
        admin_timeout_ms=_value(declared, "kafkaAdmin.requestTimeoutMs"),
    )
