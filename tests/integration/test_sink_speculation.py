"""The sink under real Spark speculation, on Apache Kafka, with exact record sets.

Spark launches a speculative copy of a task only off a local master and only on a host where
the task has no attempt yet, so the query runs on a standalone cluster whose two workers are
two hosts (127.0.0.1 and 127.0.0.2), one 1-core executor each, speculation on and aggressive
(speculation_app.py). A test hook (a subclass of the sink's writer in the app, nothing in the
product) holds the first attempt of Spark partition 0 once its first records are on the
cluster, until a later attempt of the same task wrote the partition; Spark, seeing one task
much slower than the other, starts that later attempt as a speculative copy on the other host.
Spark's event log (what its listeners saw) shows the copy as speculative and where it ran.

- exactlyOnce: the copy's ``init_transactions`` fences the slow attempt (whose records, in its
  open transaction, are aborted: read_uncommitted readers see them, read_committed ones never);
  read_committed readers see every id once.
- atLeastOnce with ``dedupeHeaders``: nothing lost; the only duplicates are the slow attempt's
  records of partition 0, which carry the copy's stamps: one record per stamp is the exact set.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.integration.helpers import DEADLINE, EstateFactory, requires_kafka
from tests.integration.sink_records import drop_files, read_topic, sink_options, stamp_of
from tests.integration.speculation_app import SLOW_PARTITION

from pyspark_dynamic_kafka.testing import BaseKafkaCluster, SparkStandalone

pytestmark = [
    requires_kafka("Kafka transactions (Tansu's are not what these tests check)"),
    pytest.mark.deploy,
]

APP = Path(__file__).with_name("speculation_app.py")
ROOT = Path(__file__).resolve().parents[2]
SECRET = "hunter2-sink-speculation-secret"
ROWS = 400


def _write_metadata(path: Path, east: BaseKafkaCluster) -> None:
    """Streams ``orders`` and ``audit`` on cluster east, whose properties carry a secret."""
    cluster = {"bootstrap.servers": east.bootstrap_servers, "sasl.password": SECRET}
    streams = {
        stream: [{"cluster": "east", "topics": [stream], "write": True}]
        for stream in ("orders", "audit")
    }
    path.write_text(yaml.safe_dump({"clusters": {"east": cluster}, "streams": streams}))


def _run_app(tmp_path: Path, config: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """Run speculation_app.py to its end: its result and its standard error (Spark's log)."""
    path = tmp_path / "app.json"
    path.write_text(json.dumps(config))
    done = subprocess.run(
        [sys.executable, str(APP), str(path)],
        capture_output=True,
        text=True,
        timeout=DEADLINE * 2,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stdout[-2000:] + done.stderr[-6000:]
    return json.loads(lines[-1].removeprefix("RESULT ")), done.stdout + done.stderr


def _events(event_log: Path) -> list[dict[str, Any]]:
    """Every listener event of the application's (uncompressed) event log."""
    (log,) = [p for p in event_log.iterdir() if p.is_file()]
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _tasks(events: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Task id to its task info at start (host, attempt, speculative), with ``Reason`` its end
    reason when it ended (``None`` otherwise)."""
    tasks: dict[int, dict[str, Any]] = {}
    for event in events:
        if event["Event"] in ("SparkListenerTaskStart", "SparkListenerTaskEnd"):
            info = event["Task Info"]
            task = tasks.setdefault(info["Task ID"], {**info, "Reason": None})
            if event["Event"] == "SparkListenerTaskEnd":
                task["Reason"] = event["Task End Reason"]
    return tasks


def _attempt(signals: Path, attempt: int) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(
        (signals / f"attempt-{SLOW_PARTITION}-{attempt}.json").read_text()
    )
    return found


def _speculated(signals: Path, tasks: dict[int, dict[str, Any]]) -> tuple[Any, Any]:
    """The slow first attempt of the partition and its copy, as the event log shows them: the
    copy is a speculative task that Spark ran on the other host, and it wrote the partition."""
    slow, copy = (tasks[_attempt(signals, n)["task"]] for n in (0, 1))
    assert (slow["Attempt"], slow["Speculative"]) == (0, False)
    assert (copy["Attempt"], copy["Speculative"]) == (1, True), copy
    assert {slow["Host"], copy["Host"]} == {"127.0.0.1", "127.0.0.2"}
    assert (signals / "copy-done").exists()
    assert not (signals / f"attempt-{SLOW_PARTITION}-2.json").exists()  # no third attempt
    return slow, copy


def _ended(task: dict[str, Any]) -> str | None:
    """How the task ended (``Success``, ``TaskKilled``, ...), ``None`` if not reported."""
    return None if task["Reason"] is None else str(task["Reason"]["Reason"])


def test_speculative_copies_on_another_host_write_each_row_once(
    estate: EstateFactory, two_host_standalone: SparkStandalone, tmp_path: Path
) -> None:
    setup = estate("east", partitions=2)
    east = setup["east"]
    east.create_topic("audit", partitions=2)
    _write_metadata(setup.meta, east)
    incoming, staging, event_log = tmp_path / "in", tmp_path / "staging", tmp_path / "events"
    for folder in (incoming, staging, event_log):
        folder.mkdir()
    ids = drop_files(incoming, staging, [ROWS])  # one micro-batch, two Spark partitions
    runs = []
    for name, options in (
        ("exactly", {"deliveryGuarantee": "exactlyOnce", "sinkId": "spec-exactly"}),
        ("atleast", {"streamId": "audit", "sinkId": "spec-atleast", "dedupeHeaders": "true"}),
    ):
        (tmp_path / name).mkdir()
        runs.append(
            {
                "name": name,
                "options": sink_options(setup.meta, **options),
                "checkpoint": str(tmp_path / name / "chk"),
                "signals": str(tmp_path / name),
            }
        )
    config = {
        "master": two_host_standalone.master_url,
        "root": str(ROOT),
        "event_log": str(event_log),
        "input": str(incoming),
        "runs": runs,
    }
    result, output = _run_app(tmp_path, config)
    assert result["errors"] == {"exactly": "none", "atleast": "none"}
    events = _events(event_log)
    executors = [e for e in events if e["Event"] == "SparkListenerExecutorAdded"]
    assert sorted(e["Executor Info"]["Host"] for e in executors) == ["127.0.0.1", "127.0.0.2"]
    tasks = _tasks(events)
    for name in ("exactly", "atleast"):
        assert (tmp_path / name / "chk" / "commits" / "0").exists()
    held = {
        name: int((tmp_path / name / "slow-waiting").read_text().split()[0])
        for name in ("exactly", "atleast")
    }

    # exactlyOnce: the copy fenced the slow attempt, which failed (or was killed once the copy
    # succeeded) and whose open transaction was aborted.
    slow, copy = _speculated(tmp_path / "exactly", tasks)
    assert _ended(copy) == "Success"
    assert _ended(slow) != "Success"  # fenced: failed, or killed once the copy succeeded
    if slow["Reason"]["Reason"] == "ExceptionFailure":
        assert "cluster 'east' (stream 'orders')" in slow["Reason"]["Description"]
    assert sorted(int(r.value) for r in read_topic(east, "orders")) == ids
    everything = read_topic(east, "orders", "read_uncommitted")
    assert len(everything) >= ROWS + held["exactly"]
    assert {int(r.value) for r in everything} == set(ids)

    # atLeastOnce: the copy and the slow attempt (resumed) both wrote partition 0, and whichever
    # finished first won Spark's commit coordinator; the stamps remove the copies.
    ended = [_ended(task) for task in _speculated(tmp_path / "atleast", tasks)]
    assert ended.count("Success") == 1
    records = read_topic(east, "audit")
    by_stamp = {stamp_of(r): int(r.value) for r in records}
    assert sorted(by_stamp.values()) == ids
    copies = Counter(stamp_of(r) for r in records)
    repeated = {stamp[:3] for stamp, count in copies.items() if count > 1}
    assert repeated == {("spec-atleast", "0", str(SLOW_PARTITION))}
    assert len(records) - ROWS >= held["atleast"]
    assert all(count <= 2 for count in copies.values())

    executor_logs = _worker_logs(two_host_standalone)
    assert len([p for p in executor_logs if p.name == "stderr"]) >= 2  # both executors' logs
    logs = [output, *(p.read_text() for p in event_log.iterdir())]
    logs += [p.read_text(errors="replace") for p in executor_logs]
    assert not [text for text in logs if SECRET in text]
    speculative = [t for t in tasks.values() if t["Speculative"]]
    print(  # what the run measured, for the report (pytest -s)
        f"speculative tasks {len(speculative)}, exactlyOnce slow attempt ended "
        f"{_ended(slow)}, atLeastOnce attempts ended {ended}, held back {held}, "
        f"orders uncommitted {len(everything)}, audit {len(records)}, seconds {result['seconds']}"
    )


def _worker_logs(cluster: SparkStandalone) -> list[Path]:
    """The logs of the cluster's processes and of every executor they ran (``stderr`` and
    ``stdout`` in the workers' application directories)."""
    folder = cluster.master.log_path.parent
    return [p for p in folder.rglob("*") if p.is_file() and p.suffix in ("", ".log")]
