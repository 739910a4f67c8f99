"""``dynamic-kafka`` end to end: subprocesses against real brokers and the reference cli_server."""

from __future__ import annotations

import json
import re
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Consumer, TopicPartition
from tests.integration.metadata_server import READ_TOKEN, WRITE_TOKEN, MetadataServer, run_cli

TOKEN = WRITE_TOKEN
WRITE = {"Authorization": f"Bearer {TOKEN}"}


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
    module = run_cli(["--help"], [sys.executable, "-m", "pyspark_dynamic_kafka"])
    script = run_cli(["--help"])
    assert module.returncode == script.returncode == 0
    assert "validate" in module.stdout and module.stdout == script.stdout


def test_validate(billing: dict[str, Any], tmp_path: Path) -> None:
    ok = run_cli(["validate", "--metadata", str(billing["meta"])])
    assert ok.returncode == 0 and ok.stderr == ""
    assert ok.stdout.strip() == f"{billing['meta']}: valid (2 clusters, 2 streams)"
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "clusters": {"east": {"sasl.password": "hunter22"}},
                "streams": {"orders": [{"cluster": "west", "topics": ["orders"], "x": 1}]},
            }
        )
    )
    failed = run_cli(["validate", "--metadata", str(bad)])
    assert failed.returncode == 1 and failed.stdout == ""
    assert failed.stderr.splitlines() == [
        f"{bad}: 3 problem(s):",
        "  clusters.east: missing required property 'bootstrap.servers'; add "
        "'bootstrap.servers: host:port[,host:port]' for this cluster.",
        "  streams.orders[0].x: unknown key 'x'. Allowed keys in a stream entry: cluster, "
        "topics, startingOffsets, write.",
        "  streams.orders[0].cluster: unknown cluster 'west': it is not listed under 'clusters' "
        "(known: 'east'). Did you mean 'east'? Add it under 'clusters' or fix the name.",
    ]


@pytest.mark.smoke
def test_describe_file_with_group_lag_as_json_and_table(billing: dict[str, Any]) -> None:
    args = ["describe", "--metadata", str(billing["meta"]), "--streams", "orders,payments"]
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
        "east": billing["east"].bootstrap_servers,
        "west": billing["west"].bootstrap_servers,
    }

    table = run_cli([*args, "--group", "billing"])
    assert table.returncode == 0, table.stderr
    east = re.escape(f"east ({billing['east'].bootstrap_servers})")
    for partition, numbers in ((0, (0, 7, 4, 3)), (1, (0, 3, "-", "-"))):
        cells = r"\W+".join(str(n) for n in numbers)
        assert re.search(rf"orders\W+{east}\W+orders\W+{partition}\W+{cells}\W", table.stdout), (
            table.stdout
        )
    assert "Lag of group billing on stream orders: 3" in table.stdout

    plain = run_cli(["describe", "--metadata", str(billing["meta"]), "--json"])
    assert plain.returncode == 0
    assert {s["stream"] for s in json.loads(plain.stdout)["streams"]} == {"orders", "payments"}
    assert all(
        v[2:] == (None, None) for v in _partitions(json.loads(plain.stdout), "orders").values()
    )


def test_describe_through_the_server_with_a_pattern(
    cli_server: MetadataServer, tmp_path: Path
) -> None:
    args = ["describe", "--metadata", cli_server.url, "--pattern", "^pay", "--json"]
    refused = run_cli(args)
    assert refused.returncode == 1
    assert "HTTP 401" in refused.stderr and "no token was sent" in refused.stderr
    result = run_cli([*args, "--token-file", str(tmp_path / "read-token")])
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["metadata"] == cli_server.url
    assert _partitions(report, "payments") == {("west", "payments", 0): (0, 4, None, None)}
    assert [s["stream"] for s in report["streams"]] == ["payments"]


def test_move_in_a_file_then_describe_shows_the_missing_topic(billing: dict[str, Any]) -> None:
    meta = billing["meta"]
    moved = run_cli(["move", "payments", "--from", "west", "--to", "east", "--metadata", str(meta)])
    assert moved.returncode == 0, moved.stderr
    assert "payments: east [payments]" in moved.stdout
    assert yaml.safe_load(meta.read_text())["streams"]["payments"] == [
        {"cluster": "east", "topics": ["payments"]}
    ]
    assert run_cli(["validate", "--metadata", str(meta)]).returncode == 0
    report = run_cli(["describe", "--metadata", str(meta), "--streams", "payments", "--json"])
    [stream] = json.loads(report.stdout)["streams"]
    assert stream["clusters"][0]["topics"] == [
        {"topic": "payments", "exists": False, "partitions": []}
    ]
    again = run_cli(["move", "payments", "--from", "west", "--to", "east", "--metadata", str(meta)])
    assert again.returncode == 1
    assert "error: Stream 'payments' has no entry on cluster 'west'" in again.stderr


def test_describe_unreachable_cluster_is_reported_and_exits_1(
    billing: dict[str, Any], tmp_path: Path
) -> None:
    meta = tmp_path / "down.yaml"
    document = yaml.safe_load(billing["meta"].read_text())
    document["clusters"]["west"]["bootstrap.servers"] = "127.0.0.1:1"
    meta.write_text(yaml.safe_dump(document))
    result = run_cli(["describe", "--metadata", str(meta), "--json", "--timeout-ms", "1500"])
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert _partitions(report, "orders")[("east", "orders", 0)][:2] == (0, 7)
    assert "error: cluster west: Cluster 'west' (127.0.0.1:1)" in result.stderr


def test_rejected_writes_change_nothing_and_move_write_flips_the_marker(
    cli_server: MetadataServer, tmp_path: Path
) -> None:
    before_file = cli_server.metadata.read_bytes()
    status, etag, before = cli_server.get("/v1/streams", WRITE)
    assert status == 200 and etag
    token = str(tmp_path / "token")
    move = ["move", "orders", "--from", "east", "--to", "north", "--metadata", cli_server.url]
    rejected = run_cli([*move, "--token-file", token])
    assert rejected.returncode == 1
    assert "HTTP 422" in rejected.stderr
    assert "  - streams.orders[0].cluster: unknown cluster 'north'" in rejected.stderr
    request = urllib.request.Request(
        f"{cli_server.url}/v1/clusters/west",
        data=b'{"sasl.password": "x"}',
        method="PUT",
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=10)
    assert info.value.code == 422
    assert cli_server.get("/v1/streams", {**WRITE, "If-None-Match": etag})[0] == 304
    assert cli_server.get("/v1/streams", WRITE)[2] == before
    assert cli_server.metadata.read_bytes() == before_file
    read_only = run_cli([*move, "--token-file", str(tmp_path / "read-token")])
    assert read_only.returncode == 1 and "HTTP 403" in read_only.stderr

    # orders is on east and west, none marked: move --write marks west (If-Match); the same
    # flip again is refused, the writes no longer going to east.
    flip = ["move", "orders", "--write", "--from", "east", "--to", "west"]
    flip += ["--metadata", cli_server.url, "--token-file", token]
    moved = run_cli(flip)
    assert moved.returncode == 0, moved.stderr
    assert moved.stdout.startswith(
        f"Moved the writes of stream 'orders' from 'east' to 'west' in {cli_server.url}:\n"
    )
    assert "west [orders] (write)" in moved.stdout and "east [orders] (write)" not in moved.stdout
    served = yaml.safe_load(cli_server.metadata.read_text())["streams"]["orders"]
    assert {e["cluster"]: e.get("write") for e in served} == {"east": None, "west": True}
    again = run_cli(flip)
    assert again.returncode == 1
    assert again.stderr == (
        "error: The writes of stream 'orders' go to cluster 'west', not 'east': move them from "
        "'west' (the cluster of its entry marked 'write: true').\n"
    )
    log = cli_server.log_text()
    assert TOKEN not in log and READ_TOKEN not in log


def test_move_with_check_drained_refuses_until_the_group_read_everything(
    billing: dict[str, Any],
) -> None:
    """Group billing lags 3 on east's orders/0 and has no commit on orders/1 (3 records): the
    move is refused and the file stays as it is; once the group committed the latest offsets
    of both, the same command moves the stream."""
    meta = billing["meta"]
    before = meta.read_bytes()
    move = ["move", "orders", "--from", "east", "--to", "west", "--metadata", str(meta)]

    refused = run_cli([*move, "--check-drained", "billing"])
    assert refused.returncode == 1, refused.stdout
    assert "Not moving stream 'orders': group 'billing' has not drained cluster 'east'" in (
        refused.stderr
    )
    assert "orders/0: lag 3 (committed 4, latest 7)" in refused.stderr
    assert "orders/1: no committed offset (latest 3)" in refused.stderr
    assert meta.read_bytes() == before

    consumer = Consumer(
        {"bootstrap.servers": billing["east"].bootstrap_servers, "group.id": "billing"}
    )
    consumer.commit(
        offsets=[TopicPartition("orders", 0, 7), TopicPartition("orders", 1, 3)],
        asynchronous=False,
    )
    consumer.close()
    moved = run_cli([*move, "--check-drained", "billing"])
    assert moved.returncode == 0, moved.stderr
    assert "Group 'billing' has drained 'orders' on 'east'." in moved.stdout
    assert yaml.safe_load(meta.read_text())["streams"]["orders"] == [
        {"cluster": "west", "topics": ["orders"]}
    ]
