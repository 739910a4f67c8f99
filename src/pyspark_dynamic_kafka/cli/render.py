"""Human-readable output of the command line, with ``rich``."""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pyspark_dynamic_kafka.cli.describe import Report
from pyspark_dynamic_kafka.metadata.model import KafkaStream

__all__ = ["render_report", "render_streams"]


def _number(value: int | None) -> str:
    return "-" if value is None else str(value)


def render_report(report: Report, console: Console) -> None:
    """Print ``report`` as a table: one row per partition (or missing topic, or cluster error)."""
    table = Table(title=f"Streams of {escape(report.source)}", title_justify="left")
    for name in ("stream", "cluster", "topic", "partition"):
        table.add_column(name)
    for name in ("earliest", "latest"):
        table.add_column(name, justify="right")
    if report.group is not None:
        table.add_column("committed", justify="right")
        table.add_column("lag", justify="right")
        table.add_column("owner")
    width = len(table.columns)
    for stream in report.streams:
        if not stream.clusters:
            table.add_row(escape(stream.stream), "(no cluster)", *[""] * (width - 2))
        for cluster in stream.clusters:
            sid = escape(stream.stream)
            label = escape(f"{cluster.cluster} ({cluster.bootstrap_servers})")
            if cluster.error is not None:
                table.add_row(sid, label, f"[red]error: {escape(cluster.error)}[/red]")
                continue
            for topic in cluster.topics:
                if not topic.exists:
                    table.add_row(sid, label, topic.topic, "[yellow]missing[/yellow]")
                    continue
                for p in topic.partitions:
                    row = [sid, label, topic.topic, str(p.partition)]
                    row += [str(p.earliest), str(p.latest)]
                    if report.group is not None:
                        row += [_number(p.committed), _number(p.lag), escape(p.owner or "-")]
                    table.add_row(*row)
        table.add_section()
    console.print(table)
    if report.group is not None:
        for stream in report.streams:
            console.print(
                f"Lag of group [bold]{escape(report.group)}[/bold] on stream "
                f"[bold]{escape(stream.stream)}[/bold]: {_number(stream.lag)}"
            )


def render_streams(streams: Mapping[str, KafkaStream], console: Console) -> None:
    """Print each stream's clusters and topics on one line, ``(write)`` after the cluster
    marked ``write: true``."""
    for stream_id, stream in streams.items():
        parts = [
            f"{cid} [{', '.join(sorted(c.topics)) or 'no topics'}]{' (write)' if c.write else ''}"
            for cid, c in stream.clusters.items()
        ]
        line = f"{stream_id}: {'; '.join(parts) or 'no cluster'}"
        console.print(line, markup=False, highlight=False)
