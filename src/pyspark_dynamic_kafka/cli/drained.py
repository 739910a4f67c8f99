"""``dynamic-kafka move --check-drained GROUP``: refuse a move while a consumer group still lags
on the cluster the stream leaves.

A group has drained a cluster when, on every partition of the stream's topics there that holds
records, its committed offset is the latest offset. A partition without a committed offset is
not drained (unless it never held a record); a cluster that does not answer cannot be checked,
so the move is refused too. A ``dynamic_kafka`` query commits its offsets to Kafka with
``commitOffsetsToKafka=true`` and ``kafka.group.id``.
"""

from __future__ import annotations

from pyspark_dynamic_kafka.cli.describe import build_report
from pyspark_dynamic_kafka.errors import DynamicKafkaError
from pyspark_dynamic_kafka.metadata.model import KafkaStream

__all__ = ["NotDrainedError", "check_drained", "undrained"]

#: Partitions listed at most in the refusal.
_SHOWN = 10


class NotDrainedError(DynamicKafkaError):
    """The group still lags on the cluster a stream leaves (or that cannot be checked)."""


def undrained(
    stream: KafkaStream, cluster: str, group: str, timeout_ms: int, source: str = ""
) -> list[str]:
    """``topic/partition: why`` for each partition of ``stream`` on ``cluster`` that ``group``
    has not read to its end (``[cluster unreachable: ...]`` when the cluster cannot tell)."""
    report = build_report(
        {stream.stream_id: stream}, source=source, group=group, timeout_ms=timeout_ms
    )
    problems: list[str] = []
    for stream_report in report.streams:
        for cluster_report in stream_report.clusters:
            if cluster_report.cluster != cluster:
                continue
            if cluster_report.error:
                problems.append(f"cluster {cluster} cannot be checked: {cluster_report.error}")
            for topic in cluster_report.topics:
                for p in topic.partitions:
                    where = f"{topic.topic}/{p.partition}"
                    if p.committed is None and p.latest > p.earliest:
                        problems.append(f"{where}: no committed offset (latest {p.latest})")
                    elif p.lag:
                        problems.append(
                            f"{where}: lag {p.lag} (committed {p.committed}, latest {p.latest})"
                        )
    return problems


def check_drained(
    stream: KafkaStream, cluster: str, group: str, timeout_ms: int, source: str = ""
) -> None:
    """Raise :class:`NotDrainedError` unless ``group`` drained ``stream`` on ``cluster``."""
    problems = undrained(stream, cluster, group, timeout_ms, source)
    if problems:
        more = f" (and {len(problems) - _SHOWN} more)" if len(problems) > _SHOWN else ""
        raise NotDrainedError(
            f"Not moving stream {stream.stream_id!r}: group {group!r} has not drained cluster "
            f"{cluster!r}: {'; '.join(problems[:_SHOWN])}{more}. Wait until the query has "
            "read everything there (dynamic-kafka describe --group shows the lag), or move "
            "without --check-drained."
        )
