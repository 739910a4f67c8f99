"""``assignment=group``: two streaming apps ("dc1", "dc2"; separate driver processes, each with
its own checkpoint and Parquet output) share stream ``orders`` through one consumer group, on an
Apache Kafka stretch cluster (brokers in racks dc1, dc2, dc2) plus a second cluster, while
records are produced throughout.

One scenario, in order: both apps share the partitions (exactly one owner each, no record read
twice); dc2 stops gracefully and dc1 takes everything over; dc2 restarts on its checkpoint and
takes its share back from the group's offsets; production pauses and both drain to lag 0 in
``describe --group``; dc2's driver is killed (kill -9) and dc1 takes over after the session
timeout. At the end the union of both outputs holds every produced record, and the only records
read twice are those dc2 read after its last commit to the group before the kill (the documented
bound, printed).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow.parquet as pq
import pytest
from tests.integration.helpers import Estate, local_kafka_problem, wait_for_line, wait_until

from pyspark_dynamic_kafka.kafka.admin import ClusterAdmin
from pyspark_dynamic_kafka.source.group.admin_offsets import group_offsets
from pyspark_dynamic_kafka.testing.kafka_jars import tooling_problem

ROOT = Path(__file__).resolve().parents[2]
GROUP = "orders-enricher"
SESSION_TIMEOUT_MS = 15000
TRIGGER_S = 1.0
Record = tuple[str, int, int]  # cluster, partition, offset


class Production:
    """Produces to every partition of both clusters, in the background, until paused."""

    def __init__(self, clusters: dict[str, Any], partitions: dict[str, int]) -> None:
        self.clusters, self.partitions = clusters, partitions
        self.produced: set[Record] = set()
        self._run = threading.Event()
        self._stop = False
        self._seq = 0
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop:
            if not self._run.wait(0.2):
                continue
            self._seq += 1
            for name, cluster in self.clusters.items():
                records = [
                    {"key": None, "value": f"{name}-{p}-{self._seq}", "partition": p}
                    for p in range(self.partitions[name])
                ]
                for partition, offset in cluster.produce("orders", records):
                    self.produced.add((name, partition, offset))
            time.sleep(0.1)

    def resume(self) -> None:
        self._run.set()

    def pause(self) -> None:
        """Stop producing; returns once the record in flight is acknowledged."""
        self._run.clear()
        time.sleep(1.0)  # the loop checks the flag between rounds; one round takes < 1 s

    def close(self) -> None:
        self._stop = True
        self._run.set()
        self._thread.join(timeout=60)


class App:
    """One datacenter's driver process (tests/integration/group_app.py)."""

    def __init__(self, name: str, meta: Path, tmp: Path, options: dict[str, str]) -> None:
        self.name, self.meta, self.tmp, self.options = name, meta, tmp, options
        self.output = tmp / f"{name}-out"
        self.process: subprocess.Popen[bytes] | None = None
        self.runs = 0

    def start(self) -> None:
        self.runs += 1
        self.log = self.tmp / f"{self.name}-{self.runs}.log"
        app = [sys.executable, str(ROOT / "tests/integration/group_app.py"), str(self.meta)]
        app += [str(self.tmp / f"{self.name}-ckpt"), str(self.output), self.name]
        app += [json.dumps(self.options)]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                app, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        wait_for_line(self.process, self.log, "STARTED")

    def stop(self) -> None:
        """Graceful: SIGTERM to the driver, which calls query.stop()."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        wait_for_line(self.process, self.log, "STOPPED")
        self.process.wait(timeout=300)

    def kill(self) -> None:
        """kill -9 of the driver and everything it started (JVM, Python workers)."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=60)

    def read(self) -> list[Record]:
        """Records in the files the Parquet sink committed (its _spark_metadata log)."""
        files: set[str] = set()
        log = self.output / "_spark_metadata"
        for entry in log.iterdir() if log.exists() else ():
            if entry.name.startswith("."):
                continue
            for line in entry.read_text().splitlines()[1:]:
                item = json.loads(line)
                if item.get("action") == "add":
                    files.add(unquote(urlparse(item["path"]).path))
        records: list[Record] = []
        for path in sorted(files):
            table = pq.read_table(path, columns=["cluster", "partition", "offset"])
            rows = table.to_pydict()
            records += zip(rows["cluster"], rows["partition"], rows["offset"], strict=True)
        return records


@pytest.fixture
def stretch(kafka_clusters: Any, tmp_path: Path) -> Iterator[tuple[Estate, Production]]:
    problem = local_kafka_problem() or tooling_problem()
    if problem is not None:
        pytest.skip(f"needs Apache Kafka brokers of its own: {problem}")
    east = kafka_clusters("east", brokers_per_cluster=3, racks=["dc1", "dc2", "dc2"])["east"]
    west = kafka_clusters("west")["west"]
    east.create_topic("orders", partitions=6, replication_factor=3)
    west.create_topic("orders", partitions=4)
    estate = Estate({"east": east, "west": west}, tmp_path / "streams.yaml")
    estate.route("east", "west")
    production = Production(estate.clusters, {"east": 6, "west": 4})
    yield estate, production
    production.close()


def describe(estate: Estate) -> list[dict[str, Any]]:
    """``dynamic-kafka describe --group`` (JSON): one entry per partition of both clusters."""
    command = [sys.executable, "-m", "pyspark_dynamic_kafka", "describe", "--metadata"]
    command += [str(estate.meta), "--streams", "orders", "--group", GROUP, "--json"]
    report = json.loads(subprocess.run(command, check=True, capture_output=True).stdout)
    return [
        {"cluster": c["cluster"], "topic": t["topic"], **p}
        for s in report["streams"]
        for c in s["clusters"]
        for t in c["topics"]
        for p in t["partitions"]
    ]


def owners(estate: Estate) -> dict[tuple[str, str, int], str]:
    """(cluster, topic, partition) -> owning app ("dc1"/"dc2") in the group now."""
    return {
        (p["cluster"], p["topic"], p["partition"]): p["owner"].split("@")[0]
        for p in describe(estate)
        if p["owner"] is not None
    }


def committed(estate: Estate) -> dict[tuple[str, int], int]:
    found: dict[tuple[str, int], int] = {}
    for name, cluster in estate.clusters.items():
        admin = ClusterAdmin(name, {"bootstrap.servers": cluster.bootstrap_servers}, 30000)
        try:
            pairs = [("orders", p) for p in range({"east": 6, "west": 4}[name])]
            found.update({(name, p): o for (_, p), o in group_offsets(admin, GROUP, pairs).items()})
        finally:
            admin.close()
    return found


def shared(estate: Estate) -> bool:
    """Every partition owned, by both apps, each at least a third."""
    now = Counter(owners(estate).values())
    return sum(now.values()) == 10 and now["dc1"] >= 4 and now["dc2"] >= 4


def lag_zero(estate: Estate) -> bool:
    lags = [p["lag"] for p in describe(estate)]
    return len(lags) == 10 and all(lag == 0 for lag in lags)


@pytest.mark.active_active
def test_two_datacenters_share_one_group(
    stretch: tuple[Estate, Production], tmp_path: Path
) -> None:
    estate, production = stretch
    options = {"kafka.group.id": GROUP, "kafka.session.timeout.ms": str(SESSION_TIMEOUT_MS)}
    dc1 = App("dc1", estate.meta, tmp_path, {**options, "kafka.client.rack": "dc1"})
    dc2 = App("dc2", estate.meta, tmp_path, {**options, "kafka.client.rack": "dc2"})
    production.resume()
    dc1.start()
    dc2.start()
    try:
        for app in (dc1, dc2):
            assert app.process is not None
            wait_for_line(app.process, app.log, "COMMITTED")
        # 1. Both apps share the partitions, each owned by exactly one.
        wait_until(lambda: shared(estate), timeout=300, what="both apps sharing the group")
        print(f"\n1. owners after the first rebalance: {sorted(owners(estate).items())}")

        # 2. dc2 stops gracefully: dc1 owns everything.
        dc2.stop()
        stopped = time.monotonic()
        wait_until(
            lambda: Counter(owners(estate).values()) == {"dc1": 10}, timeout=300, what="dc1 alone"
        )
        handover = time.monotonic() - stopped
        print(f"2. dc1 owned every partition {handover:.1f} s after dc2 stopped")
        assert handover < SESSION_TIMEOUT_MS / 1000, "dc2 did not leave the group at its stop"

        # 3. dc2 restarts on its checkpoint: the partitions are shared again.
        dc2.start()
        wait_until(lambda: shared(estate), timeout=300, what="the group shared again")

        # 6. Production pauses: both drain, the group's offsets reach the latest offsets.
        production.pause()
        wait_until(lambda: lag_zero(estate), timeout=300, what="lag 0 in describe --group")
        produced_before_kill = set(production.produced)
        print("6. lag 0 on both clusters with both apps running")

        # 4. kill -9 of dc2's driver, production running.
        production.resume()
        wait_until(lambda: len(production.produced) > len(produced_before_kill) + 200)
        dc2_owned = {k for k, v in owners(estate).items() if v == "dc2"}
        dc2.kill()
        at_kill = committed(estate)
        killed = time.monotonic()
        wait_until(
            lambda: Counter(owners(estate).values()) == {"dc1": 10}, timeout=300, what="failover"
        )
        failover = time.monotonic() - killed
        print(f"4. dc1 owned every partition {failover:.1f} s after the kill")
        production.pause()
        wait_until(lambda: lag_zero(estate), timeout=300, what="dc1 drained after the failover")
        dc1.stop()
    finally:
        for app in (dc1, dc2):
            if app.process is not None and app.process.poll() is None:
                os.killpg(app.process.pid, signal.SIGKILL)

    read = Counter(dc1.read()) + Counter(dc2.read())
    produced = production.produced
    lost = produced - set(read)
    twice = {record for record, n in read.items() if n > 1}
    # The bound: what dc2 read beyond the offsets it had committed to the group when killed.
    dc2_read: dict[tuple[str, int], int] = {}
    for cluster, partition, offset in dc2.read():
        key = (cluster, partition)
        dc2_read[key] = max(dc2_read.get(key, -1), offset)
    window = {
        (c, p, o)
        for (c, t, p) in dc2_owned
        for o in range(at_kill.get((c, p), 0), dc2_read.get((c, p), -1) + 1)
    }
    print(
        f"produced {len(produced)}, read {sum(read.values())}, lost {len(lost)}, "
        f"duplicated {len(twice)} (bound: {len(window)} records dc2 read after its last commit "
        f"to the group; failover {failover:.1f} s)"
    )
    assert lost == set()
    assert set(read) == produced
    assert twice <= window, f"read twice outside the crash window: {sorted(twice - window)[:10]}"
    assert not {r for r in twice if r in produced_before_kill}
