"""Issue 23, acceptance 1: a stream written exactlyOnce for about 60 s while ``dynamic-kafka move
--write`` moves ``orders`` east -> west -> east, on Apache Kafka and real Spark; read back with
``isolation.level=read_committed``: every id exactly once, each micro-batch wholly on one
cluster, per-key order kept within each cluster and across each flip."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from tests.integration.helpers import EstateFactory, requires_kafka, wait_until
from tests.integration.sink_records import Record, read_topic, sink_options, write_routes

from pyspark_dynamic_kafka.cli import main
from pyspark_dynamic_kafka.monitoring import attach

pytestmark = requires_kafka("Kafka transactions (Tansu's are not what this test checks)")

KEYS = 6  # even: with 2 rate partitions (ids of one parity each), a key is in one Spark partition
ROWS_PER_BATCH = 120
PHASE_S = 20.0  # three phases: about 60 s of writing
PHASE_BATCHES = 3  # and at least this many micro-batches in each phase, however slow Spark is


def _last_batch(query: Any) -> int:
    progress = query.lastProgress
    return -1 if progress is None else int(progress["batchId"])


def _phase(query: Any, started: float, first_batch: int) -> None:
    """Wait for PHASE_S seconds and PHASE_BATCHES micro-batches that started after the flip."""
    wait_until(
        lambda: (
            time.monotonic() - started >= PHASE_S
            and _last_batch(query) >= first_batch + PHASE_BATCHES
        ),
        what=f"{PHASE_BATCHES} micro-batches after batch {first_batch}",
    )


def _flip(meta: Path, source: str, target: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["move", "orders", "--write", "--from", source, "--to", target, "--metadata", str(meta)]
    assert main(argv) == 0
    mark = {"east": "", "west": ""} | {target: " (write)"}
    out = capsys.readouterr().out
    assert f"orders: east [orders]{mark['east']}; west [orders]{mark['west']}\n" in out


def _offset_ends(checkpoint: Path) -> dict[int, int]:
    """Micro-batch id -> the rate source's end offset (ids below it were generated), from
    Spark's offset log."""
    ends: dict[int, int] = {}
    for path in (checkpoint / "offsets").iterdir():
        if path.name.isdigit():
            ends[int(path.name)] = int(json.loads(path.read_text().splitlines()[-1])["offset"])
    return ends


def _committed(checkpoint: Path) -> int:
    return max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())


def test_a_stream_written_exactly_once_follows_east_west_east_moves(
    spark: Any, estate: EstateFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pyspark import TaskContext
    from pyspark.sql.functions import udf

    setup = estate("east", "west", partitions=2)
    write_routes(
        setup.meta, setup.clusters, [("east", ["orders"], True), ("west", ["orders"], False)]
    )

    @udf("binary")  # type: ignore[misc]
    def batch_of(_: int) -> bytes:
        """The micro-batch the writing task belongs to (Spark's own id, not derived from ids)."""
        context = TaskContext.get()
        assert context is not None
        return str(context.getLocalProperty("streaming.sql.batchId")).encode()

    checkpoint = tmp_path / "chk"
    monitor = attach(spark, path=tmp_path / "metrics.jsonl")
    query = (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", ROWS_PER_BATCH)
        .option("numPartitions", 2)
        .load()
        .selectExpr(
            f"CAST(value % {KEYS} AS STRING) AS key",
            "CAST(value AS STRING) AS value",
            "value AS id",
        )
        .withColumn("batch", batch_of("id"))
        .selectExpr(
            "key",
            "value",
            "array(named_struct('key', 'batch', 'value', batch), named_struct('key', 'seq', "
            f"'value', CAST(CAST(id DIV {KEYS} AS STRING) AS BINARY))) AS headers",
        )
        .writeStream.format("dynamic_kafka")
        .options(**sink_options(setup.meta, deliveryGuarantee="exactlyOnce", sinkId="migration"))
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="1 second")
        .start()
    )
    # Per flip: the last micro-batch completed before it (planned on the old route) and the
    # last completed after it (the one after next is planned on the new route).
    flips: list[tuple[int, int]] = []
    try:
        _phase(query, time.monotonic(), -1)
        for source, target in (("east", "west"), ("west", "east")):
            before = _last_batch(query)
            _flip(setup.meta, source, target, capsys)
            flips.append((before, _last_batch(query)))
            _phase(query, time.monotonic(), flips[-1][1])
    finally:
        query.stop()
        # The listener bus is in order: once the query's end is taken in, so is every report.
        wait_until(lambda: not monitor.listener.states(), what="the listener to see the end")
        monitor.detach()
    assert query.exception() is None

    records = {name: read_topic(setup[name], "orders") for name in ("east", "west")}
    last, ends = _committed(checkpoint), _offset_ends(checkpoint)
    by_batch: dict[int, list[tuple[str, Record]]] = defaultdict(list)
    for name, found in records.items():
        for record in found:
            headers = dict(record.headers)
            assert int(headers["seq"]) == int(record.value) // KEYS
            assert record.key == str(int(record.value) % KEYS)
            by_batch[int(headers["batch"])].append((name, record))

    # Every id of every committed micro-batch exactly once, in the micro-batch Spark gave it; a
    # micro-batch the stop interrupted (last + 1) may have some of its Spark partitions written.
    assert set(by_batch) - {last + 1} == set(range(last + 1))
    for batch, written in sorted(by_batch.items()):
        ids = sorted(int(r.value) for _, r in written)
        expected = list(range(ends[batch - 1] if batch else 0, ends[batch]))
        if batch <= last:
            assert ids == expected, f"micro-batch {batch}"
        else:
            assert len(set(ids)) == len(ids) and set(ids) <= set(expected)

    # Each micro-batch wholly on one cluster; the clusters in runs east, west, east, each run
    # beginning right after a flip (the micro-batch running during the flip may go either way).
    cluster_of: dict[int, str] = {}
    for batch, written in by_batch.items():
        clusters = {name for name, _ in written}
        assert len(clusters) == 1, f"micro-batch {batch} on {sorted(clusters)}"
        cluster_of[batch] = clusters.pop()
    order = [cluster_of[b] for b in sorted(cluster_of)]
    runs = [c for i, c in enumerate(order) if i == 0 or order[i - 1] != c]
    assert runs == ["east", "west", "east"], order
    for (done, planned), (old, new) in zip(
        flips, (("east", "west"), ("west", "east")), strict=True
    ):
        assert cluster_of[done] == old and cluster_of[planned + 2] == new, (flips, order)
    assert all(order.count(c) >= PHASE_BATCHES for c in ("east", "west"))

    # Per key: in offset order on each cluster, and every id of a run below those of the next
    # (a reader that drains the first cluster of a flip before the next sees them in order).
    for found in records.values():
        for key in map(str, range(KEYS)):
            ids = [int(r.value) for r in found if r.key == key]
            assert ids == sorted(ids), key
    run_of: dict[int, int] = {}
    for index, batch in enumerate(sorted(cluster_of)):
        run_of[batch] = run_of.get(sorted(cluster_of)[index - 1], 0) if index else 0
        if index and order[index - 1] != order[index]:
            run_of[batch] += 1
    for key in map(str, range(KEYS)):
        per_run: dict[int, list[int]] = defaultdict(list)
        for batch, written in by_batch.items():
            per_run[run_of[batch]] += [int(r.value) for _, r in written if r.key == key]
        assert max(per_run[0]) < min(per_run[1]) and max(per_run[1]) < min(per_run[2]), key

    # The write metrics the listener took in: each micro-batch's exact rows, bytes and cluster.
    assert monitor.path is not None
    lines = [json.loads(line) for line in monitor.path.read_text().splitlines()]
    reported = {line["writes"]["last"]["batchId"]: line["writes"] for line in lines}
    assert set(range(last)) <= set(reported) <= set(range(last + 1))
    for batch, writes in reported.items():
        written = [r for _, r in by_batch[batch]]
        size = sum(len(r.value) + len(r.key or "") for r in written)
        assert writes["last"] == {
            "batchId": batch,
            "cluster": cluster_of[batch],
            "rows": {"orders": ROWS_PER_BATCH},
            "bytes": {"orders": size},
            "tasks": 2,
            "skipped": 0,
            "transactionMs": writes["last"]["transactionMs"],
        }
        assert writes["last"]["transactionMs"] > 0
    final = reported[max(reported)]
    for name in ("east", "west"):
        batches = [b for b in reported if cluster_of[b] == name]
        assert final["clusters"][name]["rowsTotal"] == ROWS_PER_BATCH * len(batches)
    assert (final["routeSwitches"], final["skippedReplays"]) == (2, 0)
