"""The command line in process: arguments, exit codes, stdout/stderr (no broker needed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from tests.unit.conftest import COMMENTED, DOCUMENT

from pyspark_dynamic_kafka.cli import main
from pyspark_dynamic_kafka.cli.location import MetadataLocation
from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.metadata.file import load_metadata_file


def move(
    path: Path, stream: str = "orders", source: str = "east", target: str = "west"
) -> list[str]:
    """The arguments of ``dynamic-kafka move`` of ``stream`` in the metadata file ``path``."""
    return ["move", stream, "--from", source, "--to", target, "--metadata", str(path)]


@pytest.mark.parametrize("command", [[], ["validate"], ["describe"], ["move"], ["serve"]])
def test_help_everywhere(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([*command, "--help"])
    assert info.value.code == 0
    assert "usage: dynamic-kafka" in capsys.readouterr().out


def test_no_command_prints_usage_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: dynamic-kafka" in capsys.readouterr().err


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["move", "orders", "--from", "east"], ["describe"], ["frobnicate"]):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
    with pytest.raises(SystemExit):
        main(["describe", "--metadata", "m.yaml", "--streams", "a", "--pattern", "b"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_validate_valid_file(meta: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--metadata", str(meta)]) == 0
    out = capsys.readouterr()
    assert out.out.strip() == f"{meta}: valid (2 clusters, 1 streams)"
    assert out.err == ""


def test_validate_takes_the_file_as_every_command_does_and_as_it_did(
    meta: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--metadata FILE, as describe, move and serve take it; the file alone still works."""
    assert main(["validate", str(meta)]) == 0
    assert capsys.readouterr().out.strip() == f"{meta}: valid (2 clusters, 1 streams)"
    assert main(["validate", "--metadata", str(meta), str(meta)]) == 0
    capsys.readouterr()
    assert main(["validate", "--metadata", str(meta), "other.yaml"]) == 1
    assert "give only --metadata FILE" in capsys.readouterr().err
    assert main(["validate"]) == 1
    assert "validate needs the metadata file: --metadata FILE" in capsys.readouterr().err


def test_validate_lists_every_problem_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "clusters:\n  east: {sasl.password: hunter22}\n"
        "streams:\n  orders: [{cluster: south, topics: orders}]\n  refunds: 3\n"
    )
    assert main(["validate", "--metadata", str(bad)]) == 1
    out = capsys.readouterr()
    assert out.out == ""
    lines = out.err.splitlines()
    assert lines[0] == f"{bad}: 4 problem(s):"
    assert [line.split(":")[0].strip() for line in lines[1:]] == [
        "clusters.east",
        "streams.orders[0].cluster",
        "streams.orders[0].topics",
        "streams.refunds",
    ]
    assert "hunter22" not in out.err


def test_validate_missing_and_broken_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", "--metadata", str(tmp_path / "nope.yaml")]) == 1
    assert "does not exist" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text('{"clusters": {}, "streams": [')
    assert main(["validate", "--metadata", str(broken)]) == 1
    assert "JSON syntax error at line 1" in capsys.readouterr().err


def test_move_in_a_file(meta: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(move(meta)) == 0
    out = capsys.readouterr().out
    assert "Moved stream 'orders' from 'east' to 'west'" in out
    assert "orders: west [orders]" in out
    assert set(load_metadata_file(meta).streams["orders"].clusters) == {"west"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nope", "--from", "east", "--to", "west"], "Stream 'nope' is not in the metadata"),
        (["orders", "--from", "west", "--to", "east"], "has no entry on cluster 'west'"),
        (["orders", "--from", "east", "--to", "north"], "'north': it is not in the metadata"),
    ],
)
def test_move_errors_leave_the_file_alone(
    meta: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    before = meta.read_bytes()
    assert main(["move", *argv, "--metadata", str(meta)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err
    assert meta.read_bytes() == before


def test_token_options_need_a_url(meta: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*move(meta), "--token-file", str(meta)]) == 1
    assert "apply to a service URL" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--metadata", "http://user:pw@127.0.0.1:1"],
            "(option metadataService.url, or --metadata): it must not hold credentials "
            "(user:password@); pass the bearer token separately (metadataService.token, or "
            "--token-file).",
        ),
        (
            ["--metadata", "http://127.0.0.1:1", "--ca-file", "ca.pem"],
            "A CA file (option metadataService.caFile, or --ca-file ca.pem) only applies to "
            "https URLs",
        ),
    ],
)
def test_library_messages_gain_the_flag_of_each_option(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["describe", *extra]) == 1
    assert message in capsys.readouterr().err
    with pytest.raises(OptionsError) as info:  # the library itself names options, not flags
        MetadataLocation(extra[1], None, extra[3] if len(extra) > 2 else None, 1000).service()
    assert "--" not in str(info.value)


def test_describe_unknown_stream_and_bad_pattern(
    meta: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["describe", "--metadata", str(meta), "--streams", "orders,nope"]) == 1
    assert "Unknown stream id(s) nope. Known stream ids: orders" in capsys.readouterr().err
    assert main(["describe", "--metadata", str(meta), "--pattern", "("]) == 1
    assert "not a valid regular expression" in capsys.readouterr().err


def test_describe_reports_an_unreachable_cluster_and_exits_1(
    meta: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["describe", "--metadata", str(meta), "--json", "--timeout-ms", "500"]
    assert main(argv) == 1
    out = capsys.readouterr()
    report = json.loads(out.out)
    cluster = report["streams"][0]["clusters"][0]
    assert cluster["cluster"] == "east" and "could not list topics" in cluster["error"]
    assert "error: cluster east: Cluster 'east' (127.0.0.1:1)" in out.err


def test_serve_refuses_an_invalid_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("clusters: {}\n")
    assert main(["serve", "--metadata", str(bad), "--port", "0"]) == 1
    assert "missing required key 'streams'" in capsys.readouterr().err


def test_serve_refuses_half_a_tls_configuration(
    meta: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--metadata", str(meta), "--tls-cert", str(meta)]) == 1
    assert "both --tls-cert and --tls-key" in capsys.readouterr().err


def test_serve_refuses_an_empty_token_file(
    meta: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token = tmp_path / "token"
    token.write_text("\n")
    assert main(["serve", "--metadata", str(meta), "--token-file", str(token)]) == 1
    assert "token file is empty" in capsys.readouterr().err


def test_cli_and_server_run_without_pyspark(meta: Path) -> None:
    """A metadata server host needs no Spark: pyspark and pyarrow are never imported."""
    code = (
        "import sys\n"
        "sys.modules['pyspark'] = None\n"
        "sys.modules['pyarrow'] = None\n"
        "from pyspark_dynamic_kafka.cli import main\n"
        "from pyspark_dynamic_kafka.server.app import create_app\n"
        f"create_app({str(meta)!r})\n"
        f"raise SystemExit(main(['validate', {str(meta)!r}]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "valid (2 clusters, 1 streams)" in result.stdout


def test_data_source_is_still_found_by_spark_s_lookup() -> None:
    from pyspark.sql.datasource import DataSource

    import pyspark_dynamic_kafka

    assert issubclass(pyspark_dynamic_kafka.DefaultSource, DataSource)
    assert pyspark_dynamic_kafka.DefaultSource.name() == "dynamic_kafka"
    with pytest.raises(AttributeError):
        pyspark_dynamic_kafka.NoSuchThing  # noqa: B018


@pytest.mark.parametrize("metadata_text", [COMMENTED], indirect=True)
@pytest.mark.parametrize(
    ("stream", "before", "after"),
    [
        # One entry whose cluster alone changes: only that word.
        (
            "orders",
            ["    - cluster: east  # moves next\n"],
            ["    - cluster: west  # moves next\n"],
        ),
        # Entries on both clusters merge into the first one; the other goes, lines and all.
        (
            "payments",
            [
                "    - cluster: east\n",
                "      topics:\n",
                "        - payments-v1\n",
                "    - cluster: west   # since May\n",
                "      topics: [payments]\n",
            ],
            ["    - cluster: west\n", "      topics: [payments, payments-v1]\n"],
        ),
        (
            "audit",
            ["  audit: [{cluster: east, topics: [audit]}]   # flow style\n"],
            ["  audit: [{cluster: west, topics: [audit]}]   # flow style\n"],
        ),
    ],
)
def test_move_keeps_the_file_byte_identical_outside_the_changed_entries(
    meta: Path,
    capsys: pytest.CaptureFixture[str],
    stream: str,
    before: list[str],
    after: list[str],
) -> None:
    assert main(move(meta, stream)) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err
    text = meta.read_text()
    old = "".join(before)
    assert COMMENTED.count(old) == 1
    assert text == COMMENTED.replace(old, "".join(after))
    expected = yaml.safe_load(COMMENTED)
    assert set(load_metadata_file(meta).streams[stream].clusters) == {"west"}
    assert yaml.safe_load(text)["clusters"] == expected["clusters"]


def test_move_of_a_json_file_keeps_its_layout(tmp_path: Path) -> None:
    path = tmp_path / "streams.json"
    text = json.dumps(DOCUMENT, indent=4) + "\n"
    path.write_text(text)
    assert main(move(path)) == 0
    assert path.read_text() == text.replace('"cluster": "east"', '"cluster": "west"')


@pytest.mark.parametrize("metadata_text", [COMMENTED], indirect=True)
def test_dry_run_prints_the_diff_and_changes_nothing(
    meta: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stat = meta.stat()

    assert main([*move(meta), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "Dry run" in out and "nothing written" in out
    assert "-    - cluster: east  # moves next\n+    - cluster: west  # moves next\n" in out
    assert meta.read_text() == COMMENTED
    assert (meta.stat().st_ino, meta.stat().st_mtime_ns) == (stat.st_ino, stat.st_mtime_ns)
    assert not (meta.parent / ".streams.yaml.lock").exists()


FLOW = (
    "clusters: {east: {bootstrap.servers: 'h:1'}, west: {bootstrap.servers: 'h:2'}}\n"
    "streams: {s: [{cluster: east, topics: [a]}, {cluster: west, topics: [b]}]}  # c\n"
)


@pytest.mark.parametrize("metadata_text", [FLOW], indirect=True)
def test_a_layout_not_edited_in_place_is_rewritten_and_said_so(
    meta: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two entries on a flow sequence cannot lose one in place: the whole file is written."""
    assert main(move(meta, "s")) == 0
    assert "its comments are gone" in capsys.readouterr().err
    assert load_metadata_file(meta).streams["s"].clusters["west"].topics == frozenset({"a", "b"})


@pytest.mark.parametrize(
    ("metadata_text", "suggestion"),
    [
        (
            "clusters:\n  east:\n    bootstrap.server: 127.0.0.1:1\n"
            "streams:\n  orders: [{cluster: east, topics: [orders]}]\n",
            "'bootstrap.server' is set: did you mean 'bootstrap.servers'?",
        ),
        (
            "clusters:\n  east:\n    bootstrap.servers: 127.0.0.1:1\n"
            "streams:\n  orders:\n    - cluster: east\n      topics: [orders]\n"
            "      startingOffsets: earlist\n",
            "got a string 'earlist'. Did you mean 'earliest'?",
        ),
    ],
    indirect=["metadata_text"],
)
def test_validate_suggests_client_property_and_position_names(
    meta: Path, suggestion: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", "--metadata", str(meta)]) == 1
    assert suggestion in capsys.readouterr().err


def write_move(path: Path, stream: str, source: str, target: str) -> list[str]:
    """The arguments of ``dynamic-kafka move --write``: only the write marker moves."""
    return ["move", stream, "--write", "--from", source, "--to", target, "--metadata", str(path)]


@pytest.mark.parametrize("metadata_text", [COMMENTED], indirect=True)
def test_move_write_flips_the_marker_and_keeps_every_other_byte(
    meta: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """payments is on east and west, none marked (no write route): --write marks west, then
    east; only the ``write`` lines change, comments and both entries stay."""
    west = "    - cluster: west   # since May\n      topics: [payments]\n"
    east = "    - cluster: east\n      topics:\n        - payments-v1\n"
    assert main(write_move(meta, "payments", "east", "west")) == 0
    out = capsys.readouterr()
    assert out.out == (
        f"Moved the writes of stream 'payments' from 'east' to 'west' in {meta}:\n"
        "payments: east [payments-v1]; west [payments] (write)\n"
    )
    assert out.err == ""
    assert meta.read_text() == COMMENTED.replace(west, west + "      write: true\n")
    assert main(write_move(meta, "payments", "west", "east")) == 0
    assert "payments: east [payments-v1] (write); west [payments]\n" in capsys.readouterr().out
    assert meta.read_text() == COMMENTED.replace(east, east + "      write: true\n")
    streams = load_metadata_file(meta).streams
    assert {c: s.write for c, s in streams["payments"].clusters.items()} == {
        "east": True,
        "west": False,
    }


WRITE_ERRORS = {
    "nope east west": "Stream 'nope' is not in the metadata (known streams: 'orders', "
    "'payments', 'audit').",
    "audit east west": "Stream 'audit' has no entry on cluster 'west', which its writes go to "
    "(it is on: 'east'). Add an entry for the stream on 'west' first.",
    "payments north west": "Stream 'payments' has no entry on cluster 'north', which its writes "
    "leave (it is on: 'east', 'west'). Add an entry for the stream on 'north' first.",
    "payments west west": "Cannot move the writes of stream 'payments' from cluster 'west' to "
    "itself: name two different clusters.",
}
"""``move --write`` of ``STREAM SOURCE TARGET`` in :data:`COMMENTED` -> its error message."""


@pytest.mark.parametrize(("argv", "message"), WRITE_ERRORS.items())
@pytest.mark.parametrize("metadata_text", [COMMENTED], indirect=True)
def test_move_write_errors_name_the_stream_and_cluster_and_leave_the_file_alone(
    meta: Path, capsys: pytest.CaptureFixture[str], argv: str, message: str
) -> None:
    assert main(write_move(meta, *argv.split())) == 1
    assert capsys.readouterr() == ("", f"error: {message}\n")
    assert meta.read_text() == COMMENTED


@pytest.mark.parametrize("metadata_text", [COMMENTED], indirect=True)
def test_move_write_refuses_a_source_that_is_not_written(
    meta: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(write_move(meta, "payments", "east", "west")) == 0
    capsys.readouterr()
    marked = meta.read_text()
    assert main(write_move(meta, "payments", "east", "west")) == 1
    assert capsys.readouterr().err == (
        "error: The writes of stream 'payments' go to cluster 'west', not 'east': move them "
        "from 'west' (the cluster of its entry marked 'write: true').\n"
    )
    assert meta.read_text() == marked


@pytest.mark.parametrize("metadata_text", [FLOW], indirect=True)
def test_move_write_in_a_flow_sequence_and_its_dry_run(
    meta: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*write_move(meta, "s", "east", "west"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        "Dry run: moving the writes of stream 's' from 'east' to 'west' would change"
    )
    assert meta.read_text() == FLOW
    assert main(write_move(meta, "s", "east", "west")) == 0
    assert meta.read_text() == FLOW.replace(
        "{cluster: west, topics: [b]}", '{"cluster": "west", "topics": ["b"], "write": true}'
    )


def test_validate_refuses_java_properties_without_an_equivalent_and_notes_translations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What `validate` said "valid" before: JAAS and Java trust stores; now each property
    without a librdkafka equivalent is a problem naming the cluster, the key and what to write
    (never the value), and each translated one a note, keys only."""
    secret = "SENTINEL-validate-5e1d"
    jaas = 'org.apache.kafka.common.security.{0} required username="u" password="{1}";'
    bad = tmp_path / "java.yaml"
    bad.write_text(
        "clusters:\n"
        "  east:\n    bootstrap.servers: h:1\n"
        f"    sasl.jaas.config: '{jaas.format('oauthbearer.OAuthBearerLoginModule', secret)}'\n"
        "  west:\n    bootstrap.servers: h:2\n    ssl.truststore.location: /etc/t.jks\n"
        f"    ssl.truststore.password: {secret}\n"
        "  north:\n    bootstrap.servers: h:3\n    sasl.password: ${vault:kv/north:password}\n"
        "streams:\n  orders: [{cluster: east, topics: [orders]}]\n"
    )
    assert main(["validate", "--metadata", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}: 3 problem(s):" in err and secret not in err
    assert 'clusters.east["sasl.jaas.config"]: a Java client property with no librdkafka ' in err
    assert "sasl.oauthbearer.method=oidc" in err
    assert 'clusters.west["ssl.truststore.location"]: ' in err and "keytool -list -rfc" in err
    assert 'clusters.north["sasl.password"]: the secret reference ${vault:kv/north:password}' in err

    good = tmp_path / "translated.yaml"
    good.write_text(
        "clusters:\n"
        "  east:\n    bootstrap.servers: h:1\n"
        f"    sasl.jaas.config: '{jaas.format('plain.PlainLoginModule', secret)}'\n"
        "    ssl.truststore.type: PEM\n    ssl.truststore.location: /etc/ca.pem\n"
        "  west:\n    bootstrap.servers: h:2\n    sasl.password: ${env:WEST_PASSWORD}\n"
        "streams:\n  orders: [{cluster: east, topics: [orders]}]\n"
    )
    assert main(["validate", "--metadata", str(good)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [
        f"{good}: valid (2 clusters, 1 streams)",
        "  clusters.east: Java client property translated: sasl.jaas.config (PlainLoginModule) "
        "-> sasl.username, sasl.password",
        "  clusters.east: Java client property translated: ssl.truststore.location -> "
        "ssl.ca.location",
        "  clusters.east: Java client property translated: ssl.truststore.type -> (not needed)",
    ]
    assert secret not in out
