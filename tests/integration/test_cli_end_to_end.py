"""``dynamic-kafka`` end to end: subprocesses against real brokers and the reference server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Consumer, TopicPartition
from tests.integration.helpers import write_metadata
from tests.integration.metadata_server import MetadataServer, run_cli

TOKEN = "cli-write-token-77aa31"
READ_TOKEN = "cli-read-token-4be0c2"
WRITE = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def estate(kafka_clusters: Any, tmp_path: Path) -> dict[str, Any]:
    """east: orders (p0: 7 records, p1: 3); west: orders (1 partition, 2), payments (4).

    Group ``billing`` committed orders/0 at 4 on east and orders/0 at 2 on west.
    """
    clusters = kafka_clusters("east", "west")
    east, west = clusters["east"], clusters["west"]
    east.create_topic("orders", partitions=2)
    west.create_topic("orders", partitions=1)
    west.create_topic("payments", partitions=1)
    east.produce("orders", [(None, f"e{i}") for i in range(7)], partition=0)
    east.produce("orders", [(None, f"f{i}") for i in range(3)], partition=1)
    west.produce("orders", [(None, f"w{i}") for i in range(2)], partition=0)
    west.produce("payments", [(None, f"p{i}") for i in range(4)], partition=0)
    for cluster, offset in ((east, 4), (west, 2)):
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "billing"})
        consumer.commit(offsets=[TopicPartition("orders", 0, offset)], asynchronous=False)
        consumer.close()
    meta = tmp_path / "streams.yaml"
    write_metadata(
        meta,
        clusters,
        {
            "orders": [("east", ["orders"]), ("west", ["orders"])],
            "payments": [("west", ["payments"])],
        },
    )
    return {"meta": meta, "east": east, "west": west}


@pytest.fixture
def server(tmp_path: Path, estate: dict[str, Any]) -> Iterator[MetadataServer]:
    token, read_token = tmp_path / "token", tmp_path / "read-token"
    for path, value in ((token, TOKEN), (read_token, READ_TOKEN)):
        path.write_text(value)
        path.chmod(0o600)
    running = MetadataServer(estate["meta"], tmp_path / "server.log", token, read_token).start()
    try:
        yield running
    finally:
        running.stop()


def _partitions(report: dict[str, Any], stream: str) -> dict[tuple[str, str, int], Any]:
    [entry] = [s for s in report["streams"] if s["stream"] == stream]
    return {
        (c["cluster"], t["topic"], p["partition"]): (
            p["earliest"],
            p["latest"],
            p["committed"],
            p["lag"],
        )
        for c in entry["clusters"]
        for t in c["topics"]
        for p in t["partitions"]
    }


def test_module_entry_point_and_script_agree() -> None:
    module = subprocess.run(
        [sys.executable, "-m", "pyspark_dynamic_kafka", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, COLUMNS="200"),
    )
    script = run_cli(["--help"])
    assert module.returncode == script.returncode == 0
    assert "validate" in module.stdout and module.stdout == script.stdout


def test_validate(estate: dict[str, Any], tmp_path: Path) -> None:
    ok = run_cli(["validate", str(estate["meta"])])
    assert ok.returncode == 0 and ok.stderr == ""
    assert ok.stdout.strip() == f"{estate['meta']}: valid (2 clusters, 2 streams)"
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "clusters": {"east": {"sasl.password": "hunter22"}},
                "streams": {"orders": [{"cluster": "west", "topics": ["orders"], "x": 1}]},
            }
        )
    )
    failed = run_cli(["validate", str(bad)])
    assert failed.returncode == 1 and failed.stdout == ""
    assert failed.stderr.splitlines() == [
        f"{bad}: 3 problem(s):",
        "  clusters.east: missing required property 'bootstrap.servers'; add "
        "'bootstrap.servers: host:port[,host:port]' for this cluster.",
        "  streams.orders[0].x: unknown key 'x'. Allowed keys in a stream entry: cluster, "
        "topics, startingOffsets.",
        "  streams.orders[0].cluster: unknown cluster 'west': it is not listed under 'clusters' "
        "(known: 'east'). Did you mean 'east'? Add it under 'clusters' or fix the name.",
    ]


def test_describe_file_with_group_lag_as_json_and_table(estate: dict[str, Any]) -> None:
    args = ["describe", "--metadata", str(estate["meta"]), "--streams", "orders,payments"]
    result = run_cli([*args, "--group", "billing", "--json"])
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["group"] == "billing"
    assert _partitions(report, "orders") == {
        ("east", "orders", 0): (0, 7, 4, 3),
        ("east", "orders", 1): (0, 3, None, None),
        ("west", "orders", 0): (0, 2, 2, 0),
    }
    assert _partitions(report, "payments") == {("west", "payments", 0): (0, 4, None, None)}
    [orders] = [s for s in report["streams"] if s["stream"] == "orders"]
    assert orders["lag"] == 3
    servers = {c["cluster"]: c["bootstrapServers"] for c in orders["clusters"]}
    assert servers == {
        "east": estate["east"].bootstrap_servers,
        "west": estate["west"].bootstrap_servers,
    }

    table = run_cli([*args, "--group", "billing"])
    assert table.returncode == 0, table.stderr
    east = re.escape(f"east ({estate['east'].bootstrap_servers})")
    for partition, numbers in ((0, (0, 7, 4, 3)), (1, (0, 3, "-", "-"))):
        cells = r"\W+".join(str(n) for n in numbers)
        assert re.search(rf"orders\W+{east}\W+orders\W+{partition}\W+{cells}\W", table.stdout), (
            table.stdout
        )
    assert "Lag of group billing on stream orders: 3" in table.stdout

    plain = run_cli(["describe", "--metadata", str(estate["meta"]), "--json"])
    assert plain.returncode == 0
    assert {s["stream"] for s in json.loads(plain.stdout)["streams"]} == {"orders", "payments"}
    assert all(
        v[2:] == (None, None) for v in _partitions(json.loads(plain.stdout), "orders").values()
    )


def test_describe_through_the_server_with_a_pattern(server: MetadataServer, tmp_path: Path) -> None:
    args = ["describe", "--metadata", server.url, "--pattern", "^pay", "--json"]
    refused = run_cli(args)
    assert refused.returncode == 1
    assert "HTTP 401" in refused.stderr and "no token was sent" in refused.stderr
    result = run_cli([*args, "--token-file", str(tmp_path / "read-token")])
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["metadata"] == server.url
    assert _partitions(report, "payments") == {("west", "payments", 0): (0, 4, None, None)}
    assert [s["stream"] for s in report["streams"]] == ["payments"]


def test_move_in_a_file_then_describe_shows_the_missing_topic(estate: dict[str, Any]) -> None:
    meta = estate["meta"]
    moved = run_cli(["move", "payments", "--from", "west", "--to", "east", "--metadata", str(meta)])
    assert moved.returncode == 0, moved.stderr
    assert "payments: east [payments]" in moved.stdout
    assert yaml.safe_load(meta.read_text())["streams"]["payments"] == [
        {"cluster": "east", "topics": ["payments"]}
    ]
    assert run_cli(["validate", str(meta)]).returncode == 0
    report = run_cli(["describe", "--metadata", str(meta), "--streams", "payments", "--json"])
    [stream] = json.loads(report.stdout)["streams"]
    assert stream["clusters"][0]["topics"] == [
        {"topic": "payments", "exists": False, "partitions": []}
    ]
    again = run_cli(["move", "payments", "--from", "west", "--to", "east", "--metadata", str(meta)])
    assert again.returncode == 1
    assert "error: Stream 'payments' has no entry on cluster 'west'" in again.stderr


def test_describe_unreachable_cluster_is_reported_and_exits_1(
    estate: dict[str, Any], tmp_path: Path
) -> None:
    meta = tmp_path / "down.yaml"
    document = yaml.safe_load(estate["meta"].read_text())
    document["clusters"]["west"]["bootstrap.servers"] = "127.0.0.1:1"
    meta.write_text(yaml.safe_dump(document))
    result = run_cli(["describe", "--metadata", str(meta), "--json", "--timeout-ms", "1500"])
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert _partitions(report, "orders")[("east", "orders", 0)][:2] == (0, 7)
    assert "error: cluster west: Cluster 'west' (127.0.0.1:1)" in result.stderr


def test_rejected_write_leaves_served_metadata_unchanged(
    server: MetadataServer, tmp_path: Path
) -> None:
    before_file = server.metadata.read_bytes()
    status, etag, before = server.get("/v1/streams", WRITE)
    assert status == 200 and etag
    token = str(tmp_path / "token")
    move = ["move", "orders", "--from", "east", "--to", "north", "--metadata", server.url]
    rejected = run_cli([*move, "--token-file", token])
    assert rejected.returncode == 1
    assert "HTTP 422" in rejected.stderr
    assert "  - streams.orders[0].cluster: unknown cluster 'north'" in rejected.stderr
    request = urllib.request.Request(
        f"{server.url}/v1/clusters/west",
        data=b'{"sasl.password": "x"}',
        method="PUT",
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=10)
    assert info.value.code == 422
    assert server.get("/v1/streams", {**WRITE, "If-None-Match": etag})[0] == 304
    assert server.get("/v1/streams", WRITE)[2] == before
    assert server.metadata.read_bytes() == before_file
    read_only = run_cli([*move, "--token-file", str(tmp_path / "read-token")])
    assert read_only.returncode == 1 and "HTTP 403" in read_only.stderr
    log = server.log_text()
    assert TOKEN not in log and READ_TOKEN not in log
