"""The parsed source options: one immutable value built once on the driver."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.position import NoMatch, PositionKind, PositionSpec

__all__ = ["SourceOptions"]


@dataclass(frozen=True)
class SourceOptions:
    """Parsed, validated source options (built once, on the driver).

    Attributes
    ----------
    metadata_service:
        Value of ``metadataService``.
    metadata_options:
        ``metadataService.*`` options, prefix removed, keys lowercased (secrets masked in repr).
    stream_ids:
        Subscribed ids, or ``None`` when a pattern is used.
    stream_pattern:
        Compiled ``streamPattern``, or ``None``.
    starting:
        Where partitions start: the winner of startingTimestamp, startingOffsetsByTimestamp and
        startingOffsets.
    ending:
        Batch only: where partitions end (the winner of the ``ending*`` options).
    timestamp_strategy:
        What a start timestamp without a record resolves to (startingOffsetsByTimestampStrategy).
    discovery_starting_offsets:
        ``EARLIEST`` or ``LATEST``.
    discovery_interval_ms, discovery_failure_threshold:
        Metadata re-read settings.
    kafka_properties:
        ``kafka.*`` client properties, prefix removed; applied to every cluster.
    fail_on_data_loss:
        failOnDataLoss.
    max_offsets_per_trigger, min_offsets_per_trigger, max_trigger_delay_ms:
        Admission control of streams.
    min_partitions, max_records_per_partition:
        Task splitting.
    include_headers:
        includeHeaders.
    group_id_prefix:
        groupIdPrefix.
    poll_timeout_ms, consumer_cache_timeout_ms, admin_timeout_ms:
        Client timeouts.
    fetch_retries, fetch_retry_interval_ms:
        Driver-side listing retries.
    """

    metadata_service: str
    metadata_options: Mapping[str, str]
    stream_ids: tuple[str, ...] | None
    stream_pattern: re.Pattern[str] | None
    starting: PositionSpec
    discovery_starting_offsets: PositionKind
    discovery_interval_ms: int
    discovery_failure_threshold: int
    ending: PositionSpec | None = None
    timestamp_strategy: NoMatch = NoMatch.ERROR
    kafka_properties: FrozenProperties = field(default_factory=FrozenProperties)
    fail_on_data_loss: bool = True
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    include_headers: bool = False
    group_id_prefix: str = "spark-dynamic-kafka"
    poll_timeout_ms: int = 120000
    consumer_cache_timeout_ms: int = 60000
    admin_timeout_ms: int = 30000
    fetch_retries: int = 3
    fetch_retry_interval_ms: int = 10

    def subscription_description(self) -> str:
        """Describe the subscription for messages: ``streamIds=a,b`` or ``streamPattern=...``."""
        if self.stream_ids is not None:
            return f"streamIds={','.join(self.stream_ids)}"
        pattern = self.stream_pattern.pattern if self.stream_pattern else ""
        return f"streamPattern={pattern}"
