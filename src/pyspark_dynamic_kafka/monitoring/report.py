"""``dynamic-kafka report``: a picture of what a query read, drawn from the listener's JSON lines.

Two panels share one time axis (seconds since the first micro-batch): records read per second
per cluster, and records waiting to be read per cluster; each reconciliation that changed the
clusters or topics read is a labelled vertical line on both. A query that reads no
``dynamic_kafka`` source but writes to one is drawn from its sink's metrics instead: records
written per second per cluster, records written so far per cluster, and a line where the write
route moved. Written as a PNG (matplotlib) and
a self-contained HTML page (the PNG inlined, the reconciliations and a per-cluster summary as
tables).
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark_dynamic_kafka.errors import DynamicKafkaError

__all__ = ["Timeline", "load_timeline", "render_report"]

_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")


@dataclass
class Timeline:
    """The JSON lines of one query, as series per cluster.

    Attributes
    ----------
    times:
        Seconds since the first line, one per line.
    records, pending:
        Per cluster, one value per line (0 while the cluster is not read).
    events:
        (seconds, label) of each reconciliation.
    clusters_count:
        ``kafkaClustersCount`` per line.
    action:
        ``"read"``, or ``"written"`` for a query that only writes: ``records`` then counts the
        records written per line and ``pending`` the records written so far.
    """

    query: str = ""
    start: float = 0.0
    times: list[float] = field(default_factory=list)
    records: dict[str, list[int]] = field(default_factory=dict)
    pending: dict[str, list[int]] = field(default_factory=dict)
    events: list[tuple[float, str]] = field(default_factory=list)
    clusters_count: list[int] = field(default_factory=list)
    action: str = "read"

    def rates(self, cluster: str) -> tuple[list[float], list[float]]:
        """Records per second of ``cluster`` between consecutive micro-batches, at their ends
        (from the second micro-batch on)."""
        xs, ys = [], []
        for i in range(1, len(self.times)):  # the first micro-batch has no interval before it
            span = self.times[i] - self.times[i - 1]
            xs.append(self.times[i])
            ys.append(self.records[cluster][i] / span if span > 0 else 0.0)
        return xs, ys


def _describe(change: dict[str, Any]) -> str:
    parts = [f"{c} added" for c in change.get("clustersAdded", ())]
    parts += [f"{c} removed" for c in change.get("clustersRemoved", ())]
    clusters = {*change.get("clustersAdded", ()), *change.get("clustersRemoved", ())}
    parts += [
        f"{t} added" for t in change.get("topicsAdded", ()) if t.split("/")[0] not in clusters
    ]
    parts += [
        f"{t} removed" for t in change.get("topicsRemoved", ()) if t.split("/")[0] not in clusters
    ]
    if not parts and change.get("partitionsEntered"):
        parts.append(f"{change['partitionsEntered']} partitions added")
    if not parts and change.get("partitionsLeft"):
        parts.append(f"{change['partitionsLeft']} partitions left")
    return ", ".join(parts)


def load_timeline(lines: Iterable[str], query: str | None = None) -> Timeline:
    """Read JSON lines written by the listener (``attach(spark, path=...)``).

    Parameters
    ----------
    lines:
        The file's lines.
    query:
        The query to draw (its name or id); by default the one of the last line.

    Raises
    ------
    DynamicKafkaError
        When there is no line of that query.
    """
    records = [json.loads(line) for line in lines if line.strip()]
    if query is None and records:
        query = records[-1]["query"]
    records = [r for r in records if r.get("query") == query]
    if not records:
        raise DynamicKafkaError(f"No metrics of query {query!r} in the file: nothing to draw.")
    timeline = Timeline(query=str(query), start=float(records[0]["time"]))
    clusters = sorted({c for r in records for c in r.get("clusters", {})})
    if not clusters and any("writes" in r for r in records):
        return _writes(timeline, records)
    timeline.records = {c: [] for c in clusters}
    timeline.pending = {c: [] for c in clusters}
    for record in records:
        timeline.times.append(float(record["time"]) - timeline.start)
        timeline.clusters_count.append(int(record.get("kafkaClustersCount", 0)))
        for cluster in clusters:
            entry = record.get("clusters", {}).get(cluster, {})
            timeline.records[cluster].append(int(entry.get("records", 0)))
            timeline.pending[cluster].append(int(entry.get("pending", 0)))
        for change in record.get("reconciliations", ()):
            at = float(change.get("atMs", record["time"] * 1000)) / 1000.0 - timeline.start
            label = _describe(change)
            if label and at > 0:  # the first reading at start is not a change
                timeline.events.append((at, label))
    return timeline


def _writes(timeline: Timeline, records: list[dict[str, Any]]) -> Timeline:
    """The timeline of a query that only writes, from the ``writes`` object of its lines."""
    timeline.action = "written"
    totals = [r.get("writes", {}).get("clusters", {}) for r in records]
    clusters = sorted({c for line in totals for c in line})
    route = None
    for record, line in zip(records, totals, strict=True):
        at = float(record["time"]) - timeline.start
        timeline.times.append(at)
        timeline.clusters_count.append(int(record.get("kafkaClustersCount", 0)))
        for cluster in clusters:
            total = int(line.get(cluster, {}).get("rowsTotal", 0))
            so_far = timeline.pending.setdefault(cluster, [])
            timeline.records.setdefault(cluster, []).append(total - (so_far[-1] if so_far else 0))
            so_far.append(total)
        cluster = record.get("writes", {}).get("cluster")
        if cluster and route and cluster != route:
            timeline.events.append((at, f"writes moved to {cluster}"))
        route = cluster or route
    return timeline


#: Per action: the panels' labels and titles, the note under the figure, the HTML's lead.
_WORDS = {
    "read": (
        "records read per second",
        "Records the query read from each cluster",
        "records waiting",
        "Records on each cluster not read yet (pendingRecords; 0 = caught up)",
        "Dashed lines: the metadata service changed which clusters the stream lives on; the "
        "query followed at once, without a restart.",
        "Top: records the query read per second from each cluster. Bottom: records waiting on "
        "each cluster, not read yet. Dashed lines: the moments the metadata changed which "
        "clusters and topics the query reads (it follows them without a restart).",
    ),
    "written": (
        "records written per second",
        "Records the query wrote to each cluster",
        "records written",
        "Records written to each cluster so far",
        "Dashed lines: the stream's write route moved to another cluster between two "
        "micro-batches; the query followed without a restart.",
        "Top: records the query wrote per second to each cluster. Bottom: records written to "
        "each cluster so far. Dashed lines: the micro-batches where the write route moved "
        "(the query follows it without a restart).",
    ),
}


def _plot(timeline: Timeline, png: Path, title: str) -> None:
    try:
        import matplotlib
    except ImportError:
        raise DynamicKafkaError(
            "dynamic-kafka report needs matplotlib: pip install 'pyspark-dynamic-kafka[monitoring]'"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    top_label, top_title, bottom_label, bottom_title, note, _ = _WORDS[timeline.action]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 7), sharex=True)
    for i, cluster in enumerate(timeline.records):
        color = _COLORS[i % len(_COLORS)]
        xs, ys = timeline.rates(cluster)
        top.plot(xs, ys, color=color, label=f"cluster {cluster}", linewidth=1.6)
        bottom.step(
            timeline.times,
            timeline.pending[cluster],
            where="post",
            color=color,
            label=f"cluster {cluster}",
            linewidth=1.6,
        )
    top.set_ylabel(top_label)
    top.set_title(top_title, loc="left", fontsize=10)
    bottom.set_ylabel(bottom_label)
    bottom.set_title(bottom_title, loc="left", fontsize=10)
    bottom.set_xlabel("seconds since the first micro-batch")
    for axis in (top, bottom):
        axis.grid(True, alpha=0.3)
        axis.set_ylim(bottom=0, top=max(axis.get_ylim()[1], 1.0))
        for at, _ in timeline.events:
            axis.axvline(at, color="black", linestyle="--", linewidth=1, alpha=0.7)
    top_y = top.get_ylim()[1]
    for n, (at, label) in enumerate(timeline.events, 1):
        top.annotate(
            f"{n}. {label}" if timeline.action == "written" else f"{n}. metadata: {label}",
            (at, top_y * (0.95 - 0.12 * ((n - 1) % 3))),
            xytext=(4, 0),
            textcoords="offset points",
            fontsize=9,
            va="top",
            bbox={"boxstyle": "round", "fc": "white", "ec": "0.6", "alpha": 0.9},
        )
    top.legend(loc="center left", fontsize=9)
    bottom.legend(loc="upper right", fontsize=9)
    fig.suptitle(title, fontsize=12)
    fig.text(0.5, 0.01, note, ha="center", fontsize=9, color="0.3")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(png, dpi=110)
    plt.close(fig)


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def render_report(
    metrics: Path, out_dir: Path, query: str | None = None, title: str | None = None
) -> tuple[Path, Path]:
    """Draw the metrics file as ``<out_dir>/dynamic-kafka-report.png`` and ``.html``.

    Returns
    -------
    tuple
        The PNG and HTML paths.
    """
    timeline = load_timeline(metrics.read_text(encoding="utf-8").splitlines(), query)
    out_dir.mkdir(parents=True, exist_ok=True)
    png, page = out_dir / "dynamic-kafka-report.png", out_dir / "dynamic-kafka-report.html"
    title = title or f"dynamic_kafka query {timeline.query}"
    _plot(timeline, png, title)
    image = base64.b64encode(png.read_bytes()).decode("ascii")
    if timeline.action == "written":
        summary = _table(
            ["cluster", "records written"], [(c, sum(n)) for c, n in timeline.records.items()]
        )
    else:
        summary = _table(
            ["cluster", "records read", "records waiting at the end"],
            [(c, sum(n), timeline.pending[c][-1] if n else 0) for c, n in timeline.records.items()],
        )
    events = _table(
        ["#", "seconds", "what changed"],
        [(n, f"{at:.1f}", label) for n, (at, label) in enumerate(timeline.events, 1)],
    )
    page.write_text(
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>body{{font-family:sans-serif;margin:2em}}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #999;"
        "padding:4px 10px;text-align:left}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        f"<p>{_WORDS[timeline.action][-1]}</p>"
        f"<img alt='records {timeline.action} per second and per cluster' "
        f"src='data:image/png;base64,{image}'>"
        f"<h2>Per cluster</h2>{summary}<h2>Changes</h2>{events}"
        f"<p>{len(timeline.times)} micro-batches over {timeline.times[-1]:.0f} s, from "
        f"{html.escape(metrics.name)}.</p></body></html>",
        encoding="utf-8",
    )
    return png, page
