"""The parsed source options: one immutable value built once on the driver."""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.offset_spec import NoMatch, PositionKind, PositionSpec
from pyspark_dynamic_kafka.source.config.formats import ColumnFormat

__all__ = ["AssignmentMode", "SourceOptions"]


class AssignmentMode(str, enum.Enum):
    """Option ``assignment``: which partitions a stream reads (equal to its spelling)."""

    ALL = "all"
    GROUP = "group"


@dataclass(frozen=True)
class SourceOptions:
    """Parsed, validated source options (built once, on the driver, by
    :func:`~pyspark_dynamic_kafka.source.config.options.parse_options`).

    Each attribute not described below holds the parsed value of the option that declares it as
    its ``attr`` in :mod:`~pyspark_dynamic_kafka.source.config.options`, where its key, parser,
    default, doc and scope are.

    Attributes
    ----------
    metadata_options:
        ``metadataService.*`` options, prefix removed, keys lowercased (secrets masked in repr).
    kafka_properties:
        ``kafka.*`` client properties, prefix removed; applied to every cluster.
    starting:
        Where partitions start: the winner of startingTimestamp, startingOffsetsByTimestamp and
        startingOffsets (:mod:`~pyspark_dynamic_kafka.source.config.validation`).
    ending:
        Batch only: where partitions end (the winner of the ``ending*`` options); ``None`` for
        streams.
    key_format, value_format:
        How keys and values are decoded as Avro (``keyFormat``/``valueFormat=avro`` and the
        options that go with it, :mod:`~pyspark_dynamic_kafka.source.config.formats`); ``None``:
        bytes.
    """

    metadata_service: str
    metadata_options: Mapping[str, str]
    stream_ids: tuple[str, ...] | None
    stream_pattern: re.Pattern[str] | None
    starting: PositionSpec
    ending: PositionSpec | None
    timestamp_strategy: NoMatch
    discovery_starting_offsets: PositionKind
    discovery_interval_ms: int
    discovery_failure_threshold: int
    removed_cluster_retention_ms: int
    kafka_properties: FrozenProperties
    fail_on_data_loss: bool
    max_offsets_per_trigger: int | None
    min_offsets_per_trigger: int | None
    max_trigger_delay_ms: int
    min_partitions: int | None
    max_records_per_partition: int | None
    include_headers: bool
    group_id_prefix: str
    commit_offsets_to_kafka: bool
    poll_timeout_ms: int
    consumer_cache_timeout_ms: int
    admin_timeout_ms: int
    fetch_retries: int
    fetch_retry_interval_ms: int
    unreachable_cluster_timeout_ms: int
    archive_path: str | None = None
    archive_max_files: int | None = None
    archive_switch_timestamp: int | None = None
    assignment: AssignmentMode = AssignmentMode.ALL
    reader: str = "auto"
    key_format: ColumnFormat | None = None
    value_format: ColumnFormat | None = None
    schema_tracking_location: str | None = None

    def subscription_description(self) -> str:
        """Describe the subscription for messages: ``streamIds=a,b`` or ``streamPattern=...``."""
        if self.stream_ids is not None:
            return f"streamIds={','.join(self.stream_ids)}"
        pattern = self.stream_pattern.pattern if self.stream_pattern else ""
        return f"streamPattern={pattern}"
