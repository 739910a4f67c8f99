"""Every source option, declared once: key, parser, default, doc, scope and the
:class:`~pyspark_dynamic_kafka.source.config.parsed.SourceOptions` attribute it fills.

Spark hands option keys lowercased; keys are matched case-insensitively and reported in their
canonical spelling. Unknown keys are rejected with the closest valid key (the machinery is
:mod:`pyspark_dynamic_kafka.optionspec`). Rules across options (which starting option wins, what
only batch accepts, ...) live in :mod:`~pyspark_dynamic_kafka.source.config.validation`. Names and
meanings follow Spark's ``kafka`` source wherever it has the same option.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pyspark_dynamic_kafka.engines.choice import CHOICES
from pyspark_dynamic_kafka.kafka.config import DEFAULT_GROUP_ID_PREFIX, FrozenProperties
from pyspark_dynamic_kafka.offset_spec import NoMatch, PositionKind
from pyspark_dynamic_kafka.optionspec import (
    METADATA_SERVICE,
    Mode,
    OptionSet,
    OptionSpec,
    Scope,
    boolean,
    choice,
    duration_ms,
    integer,
    member,
    nonempty,
    pattern,
    split_prefixed,
    text,
)
from pyspark_dynamic_kafka.source.config.archive_options import ARCHIVE_OPTIONS
from pyspark_dynamic_kafka.source.config.formats import FORMAT_OPTIONS, column_formats
from pyspark_dynamic_kafka.source.config.parsed import AssignmentMode, SourceOptions
from pyspark_dynamic_kafka.source.config.position_options import (
    parse_offsets_spec,
    parse_timestamp,
    parse_timestamps_spec,
)
from pyspark_dynamic_kafka.source.config.spark_kafka import check_spark_names
from pyspark_dynamic_kafka.source.config.validation import apply_rules

__all__ = [
    "KAFKA_PREFIX",
    "METADATA_PREFIX",
    "OPTIONS",
    "SOURCE_OPTIONS",
    "SourceOptions",
    "parse_options",
]

KAFKA_PREFIX = "kafka."
METADATA_PREFIX = f"{METADATA_SERVICE}."


def stream_ids(value: str) -> tuple[str, ...]:
    """A comma-separated list of stream ids, deduplicated in order."""
    ids = tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    if not ids:
        raise ValueError("expected a comma-separated list of stream ids")
    return ids


def _position(
    key: str,
    parse: Callable[[str, str], Any],
    default: str | None,
    doc: str,
    scope: Scope = "both",
    batch_default: str | None = None,
) -> OptionSpec[Any]:
    """A position option: its parser also takes the key, which it names in its messages."""
    return OptionSpec(
        key, lambda value: parse(value, key), default, doc, scope, batch_default=batch_default
    )


_DECLARED: tuple[OptionSpec[Any], ...] = (
    OptionSpec(
        METADATA_SERVICE,
        text,
        None,
        "Where stream ids are resolved: `file` (with metadataService.path), `http` (with "
        "metadataService.url), `singleCluster` (with metadataService.bootstrap.servers), or "
        "`package.module:ClassName` for your own service.",
        required=True,
        attr="metadata_service",
    ),
    OptionSpec(
        "streamIds",
        stream_ids,
        None,
        "Comma-separated stream ids to read. Exactly one of streamIds and streamPattern.",
        attr="stream_ids",
    ),
    OptionSpec(
        "streamPattern",
        pattern,
        None,
        "Python regular expression (re.search) selecting stream ids, re-evaluated at discovery.",
        attr="stream_pattern",
    ),
    _position(
        "startingOffsets",
        parse_offsets_spec,
        "latest",
        'Where reading starts: `earliest`, `latest` (streams only), or JSON {"cluster": {"topic": '
        '{"0": 23}}} (-2 earliest, -1 latest). Default `latest` for streams, `earliest` for '
        "batch. Ignored when a stream resumes from a checkpoint.",
        batch_default="earliest",
    ),
    _position(
        "startingTimestamp",
        parse_timestamp,
        None,
        "Start every partition at its first record with a timestamp at or after this epoch-ms "
        "value. Wins over startingOffsetsByTimestamp and startingOffsets.",
    ),
    _position(
        "startingOffsetsByTimestamp",
        parse_timestamps_spec,
        None,
        'Per-partition start timestamps: JSON {"cluster": {"topic": {"0": 1700000000000}}} '
        "(epoch ms). Wins over startingOffsets.",
    ),
    OptionSpec(
        "startingOffsetsByTimestampStrategy",
        member(NoMatch, NoMatch.ERROR, NoMatch.LATEST),
        "error",
        "When no record is at or after a start timestamp: `error` fails the query, `latest` "
        "starts that partition at its latest offset.",
        attr="timestamp_strategy",
    ),
    _position(
        "endingOffsets",
        parse_offsets_spec,
        "latest",
        'Batch only: where reading ends (exclusive): `latest` or JSON {"cluster": {"topic": '
        '{"0": 50}}} (-1 latest).',
        scope="batch",
    ),
    _position(
        "endingTimestamp",
        parse_timestamp,
        None,
        "Batch only: end every partition before its first record at or after this epoch-ms value "
        "(latest when there is none). Wins over endingOffsetsByTimestamp and endingOffsets.",
        scope="batch",
    ),
    _position(
        "endingOffsetsByTimestamp",
        parse_timestamps_spec,
        None,
        "Batch only: per-partition end timestamps, JSON like startingOffsetsByTimestamp. Wins "
        "over endingOffsets.",
        scope="batch",
    ),
    OptionSpec(
        "discoveryStartingOffsets",
        member(PositionKind, PositionKind.EARLIEST, PositionKind.LATEST),
        "earliest",
        "Where a cluster, topic or partition discovered after the query started begins.",
        attr="discovery_starting_offsets",
    ),
    OptionSpec(
        "metadataDiscoveryIntervalMs",
        integer(),
        "10000",
        "How often metadata is re-read: milliseconds; 0 every micro-batch; negative only at start.",
        attr="discovery_interval_ms",
    ),
    OptionSpec(
        "metadataDiscoveryFailureThreshold",
        integer(0),
        "1",
        "Consecutive discovery failures tolerated while a previous metadata snapshot exists.",
        attr="discovery_failure_threshold",
    ),
    OptionSpec(
        "removedClusterRetentionMs",
        integer(0),
        "0",
        "Streams: how long the offsets of a cluster or topic removed from the metadata stay in "
        "the checkpointed offset (under `retained`, not read); re-added within that many "
        "milliseconds it resumes exactly where it stopped, later it starts at "
        "discoveryStartingOffsets. 0 drops them at once.",
        scope="stream",
        attr="removed_cluster_retention_ms",
    ),
    OptionSpec(
        "failOnDataLoss",
        boolean,
        "true",
        "Fail the query when records it should read are gone (topic deleted or partition "
        "vanished while in the metadata, offsets out of range, offset went backwards); `false` "
        "logs a warning and continues from the earliest available offset.",
        attr="fail_on_data_loss",
    ),
    OptionSpec(
        "maxOffsetsPerTrigger",
        integer(1),
        None,
        "Streams: at most this many offsets per micro-batch, split over all partitions of all "
        "clusters in proportion to their backlog.",
        scope="stream",
        attr="max_offsets_per_trigger",
    ),
    OptionSpec(
        "minOffsetsPerTrigger",
        integer(1),
        None,
        "Streams: wait for at least this many new offsets before a micro-batch, or until "
        "maxTriggerDelay has passed since the last one.",
        scope="stream",
        attr="min_offsets_per_trigger",
    ),
    OptionSpec(
        "maxTriggerDelay",
        duration_ms,
        "15m",
        "Streams with minOffsetsPerTrigger: the longest wait before a micro-batch runs anyway.",
        scope="stream",
        attr="max_trigger_delay_ms",
    ),
    OptionSpec(
        "minPartitions",
        integer(1),
        None,
        "At least this many Spark tasks per batch (large offset ranges are split).",
        attr="min_partitions",
    ),
    OptionSpec(
        "maxRecordsPerPartition",
        integer(1),
        None,
        "At most this many records per Spark task (large offset ranges are split).",
        attr="max_records_per_partition",
    ),
    OptionSpec(
        "includeHeaders",
        boolean,
        "false",
        "Add the column headers array<struct<key:string,value:binary>> (null when a record has "
        "no headers).",
        attr="include_headers",
    ),
    OptionSpec(
        "groupIdPrefix",
        nonempty,
        DEFAULT_GROUP_ID_PREFIX,
        "Prefix of the generated consumer group.id (unless kafka.group.id is set); offsets are "
        "never committed to it.",
        attr="group_id_prefix",
    ),
    OptionSpec(
        "commitOffsetsToKafka",
        boolean,
        "false",
        "Streams: after each micro-batch, commit its end offsets to the consumer group "
        "kafka.group.id (required then) on every cluster it read, in the background; the "
        "checkpoint stays the source of truth.",
        scope="stream",
        attr="commit_offsets_to_kafka",
    ),
    OptionSpec(
        "assignment",
        member(AssignmentMode, AssignmentMode.ALL, AssignmentMode.GROUP),
        "all",
        "Streams: `all` reads every partition; `group` reads the partitions the consumer group "
        "kafka.group.id (required then) assigns to this query, so queries sharing the group "
        "share the partitions and take over each other's when one stops.",
        scope="stream",
        attr="assignment",
    ),
    OptionSpec(
        "kafkaConsumer.pollTimeoutMs",
        integer(1),
        "120000",
        "How long an executor waits for records of its offset range before failing the task.",
        attr="poll_timeout_ms",
    ),
    OptionSpec(
        "reader",
        choice(*CHOICES),
        "auto",
        "Which reader reads records on the executors: `native` (the compiled core, "
        "pyspark-dynamic-kafka-core: librdkafka straight into Arrow columns; the query fails at "
        "start, naming the reason, where it cannot be used), `python` (confluent-kafka), or "
        "`auto`: native for each cluster where the core is installed and the cluster's client "
        "properties allow it (not SASL GSSAPI, not OAUTHBEARER OIDC), else python with one log "
        "line naming the cluster and the reason.",
        attr="reader",
    ),
    OptionSpec(
        "kafkaConsumer.cacheTimeoutMs",
        integer(0),
        "60000",
        "How long an idle pooled consumer stays open in a Python worker before it is closed.",
        attr="consumer_cache_timeout_ms",
    ),
    OptionSpec(
        "kafkaAdmin.requestTimeoutMs",
        integer(1),
        "30000",
        "Driver-side timeout for listing topics, partitions and offsets of one cluster.",
        attr="admin_timeout_ms",
    ),
    OptionSpec(
        "fetchOffset.numRetries",
        integer(0),
        "3",
        "Driver-side retries of a failed offset or topic listing of one cluster.",
        attr="fetch_retries",
    ),
    OptionSpec(
        "fetchOffset.retryIntervalMs",
        integer(0),
        "10",
        "Milliseconds to wait before retrying a failed listing.",
        attr="fetch_retry_interval_ms",
    ),
    OptionSpec(
        "unreachableClusterTimeoutMs",
        integer(-1),
        "120000",
        "Streams: how long a cluster in the metadata may stay impossible to list (down, "
        "unreachable, refusing the credentials) before the query fails naming it; its offsets are "
        "kept and the other clusters read meanwhile. -1 waits forever.",
        scope="stream",
        attr="unreachable_cluster_timeout_ms",
    ),
    *ARCHIVE_OPTIONS,
    *FORMAT_OPTIONS,
)

#: The declared source options, parsed together.
SOURCE_OPTIONS = OptionSet(
    _DECLARED,
    context="for format dynamic_kafka",
    others=f", and the prefixes '{KAFKA_PREFIX}*' (client properties) and '{METADATA_PREFIX}*'",
)
#: Canonical key -> declaration.
OPTIONS: Mapping[str, OptionSpec[Any]] = SOURCE_OPTIONS.specs


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
    declared, kafka, metadata = split_prefixed(options, KAFKA_PREFIX, METADATA_PREFIX)
    check_spark_names(declared)  # subscribe, assign, ...: what to write instead
    parsed = SOURCE_OPTIONS.parse(declared, mode)
    starting, ending = apply_rules(parsed, kafka, mode)
    key_format, value_format = column_formats(parsed)
    return SourceOptions(
        **parsed.fields,
        starting=starting,
        ending=ending,
        key_format=key_format,
        value_format=value_format,
        metadata_options=FrozenProperties(metadata),
        kafka_properties=FrozenProperties(kafka),
    )
