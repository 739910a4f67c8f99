"""The metadata file: format, validation messages, re-reading, atomic writing."""

from __future__ import annotations

import json
import os
import pickle
import stat
import textwrap
from pathlib import Path

import pytest
import yaml

from pyspark_dynamic_kafka.errors import MetadataError, MetadataValidationError
from pyspark_dynamic_kafka.metadata import (
    ClusterMetadata,
    FileMetadataService,
    KafkaMetadataService,
    KafkaStream,
    ParsedMetadata,
    StartingPosition,
    dump_metadata_document,
    load_metadata_file,
    parse_metadata_document,
    validate_metadata_document,
    validate_metadata_file,
    write_metadata_file,
)

SENTINEL = "s3cr3t-SENTINEL"

VALID = """\
clusters:
  east:
    bootstrap.servers: 127.0.0.1:19092
    security.protocol: SASL_PLAINTEXT
    sasl.mechanism: PLAIN
    sasl.username: alice
    sasl.password: s3cr3t-SENTINEL
  west:
    bootstrap.servers: 127.0.0.1:29092
streams:
  orders:
    - cluster: east
      topics: [orders]
  payments:
    - cluster: east
      topics: [payments-v1, payments-v2]
    - cluster: west
      topics: [payments]
"""


def _write(tmp_path: Path, text: str, name: str = "streams.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _error(path: Path) -> str:
    with pytest.raises(MetadataError) as info:
        load_metadata_file(path)
    message = str(info.value)
    assert SENTINEL not in message
    assert path.name in message
    return message


def _document(**overrides: object) -> dict[str, object]:
    document: dict[str, object] = yaml.safe_load(VALID)
    document.update(overrides)
    return document


# --- valid files ---------------------------------------------------------------------------


def test_valid_yaml(tmp_path: Path) -> None:
    parsed = load_metadata_file(_write(tmp_path, VALID))
    assert parsed.active_clusters == frozenset({"east", "west"})
    payments = parsed.streams["payments"]
    assert payments.clusters["east"].topics == frozenset({"payments-v1", "payments-v2"})
    assert payments.clusters["west"].topics == frozenset({"payments"})
    assert payments.clusters["east"].properties["sasl.password"] == SENTINEL
    assert parsed.streams["orders"].clusters.keys() == {"east"}
    assert SENTINEL not in repr(parsed)


@pytest.mark.parametrize("name", ["streams.yml", "streams.YAML", "streams.json"])
def test_other_extensions(tmp_path: Path, name: str) -> None:
    text = json.dumps(yaml.safe_load(VALID)) if name.endswith("json") else VALID
    parsed = load_metadata_file(_write(tmp_path, text, name))
    assert set(parsed.streams) == {"orders", "payments"}


def test_scalars_become_strings(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
        clusters:
          east: {bootstrap.servers: "h:1", linger.ms: 5, enable.idempotence: true, x.ratio: 0.5}
        streams: {}
        """,
    )
    properties = load_metadata_file(path).clusters["east"]
    assert properties["linger.ms"] == "5"
    assert properties["enable.idempotence"] == "true"
    assert properties["x.ratio"] == "0.5"


def test_empty_sections_and_empty_lists_are_allowed(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
        clusters:
          east: {bootstrap.servers: "h:1"}
        streams:
          idle: []
          quiet:
            - cluster: east
              topics: []
        """,
    )
    parsed = load_metadata_file(path)
    assert parsed.streams["idle"].clusters == {}
    assert parsed.streams["quiet"].clusters["east"].topics == frozenset()
    assert load_metadata_file(_write(tmp_path, "clusters: {}\nstreams: {}\n")).streams == {}


def test_duplicate_cluster_entries_are_merged(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
        clusters:
          east: {bootstrap.servers: "h:1"}
        streams:
          orders:
            - cluster: east
              topics: [a, b]
            - cluster: east
              topics: [b, c]
              startingOffsets: earliest
        """,
    )
    parsed = load_metadata_file(path)
    assert parsed.streams["orders"].clusters["east"].topics == frozenset({"a", "b", "c"})
    assert parsed.starting_offsets == {("orders", "east"): StartingPosition("earliest")}


def test_starting_offsets_values(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
        clusters:
          east: {bootstrap.servers: "h:1"}
          west: {bootstrap.servers: "h:2"}
        streams:
          a:
            - {cluster: east, topics: [a], startingOffsets: latest}
            - {cluster: west, topics: [a], startingOffsets: {timestamp: 1700000000000}}
        """,
    )
    parsed = load_metadata_file(path)
    assert parsed.starting_offsets == {
        ("a", "east"): StartingPosition("latest"),
        ("a", "west"): StartingPosition("timestamp", 1700000000000),
    }


def test_yaml_anchors_and_merge_keys(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
        clusters:
          east: &base
            bootstrap.servers: "h:1"
            security.protocol: SSL
          west:
            <<: *base
            bootstrap.servers: "h:2"
        streams: {}
        """,
    )
    clusters = load_metadata_file(path).clusters
    assert clusters["west"] == {"bootstrap.servers": "h:2", "security.protocol": "SSL"}


# --- validation errors: file name, path inside it, value -----------------------------------


def test_unknown_cluster(tmp_path: Path) -> None:
    path = _write(tmp_path, VALID.replace("cluster: west", "cluster: north"))
    message = _error(path)
    assert isinstance(message, str)
    assert "streams.payments[1].cluster" in message
    assert "'north'" in message
    assert "'east'" in message and "'west'" in message
    with pytest.raises(MetadataValidationError):
        load_metadata_file(path)


def test_unknown_cluster_named_like_the_secret_is_redacted(tmp_path: Path) -> None:
    path = _write(tmp_path, VALID.replace("cluster: west", f"cluster: {SENTINEL}"))
    message = _error(path)
    assert "streams.payments[1].cluster" in message


def test_missing_bootstrap_servers_of_a_cluster_with_a_secret(tmp_path: Path) -> None:
    path = _write(tmp_path, VALID.replace("    bootstrap.servers: 127.0.0.1:19092\n", ""))
    message = _error(path)
    assert "clusters.east" in message
    assert "bootstrap.servers" in message


def test_empty_bootstrap_servers(tmp_path: Path) -> None:
    path = _write(tmp_path, VALID.replace("127.0.0.1:29092", '""'))
    message = _error(path)
    assert 'clusters.west["bootstrap.servers"]' in message


def test_clusters_not_a_mapping(tmp_path: Path) -> None:
    path = _write(tmp_path, "clusters: [east, west]\nstreams: {}\n")
    message = _error(path)
    assert "clusters: must be a mapping" in message
    assert "a list" in message


def test_cluster_properties_not_a_mapping(tmp_path: Path) -> None:
    path = _write(tmp_path, "clusters:\n  east: 127.0.0.1:19092\nstreams: {}\n")
    message = _error(path)
    assert "clusters.east" in message
    assert "'127.0.0.1:19092'" in message


def test_property_value_not_a_scalar(tmp_path: Path) -> None:
    path = _write(tmp_path, VALID.replace("sasl.mechanism: PLAIN", "sasl.mechanism: [PLAIN]"))
    message = _error(path)
    assert 'clusters.east["sasl.mechanism"]' in message
    assert "got a list" in message


def test_secret_value_of_the_wrong_type_is_not_shown(tmp_path: Path) -> None:
    for bad in (f"[{SENTINEL}]", f"{{x: {SENTINEL}}}", "null"):
        path = _write(
            tmp_path, VALID.replace(f"sasl.password: {SENTINEL}", f"sasl.password: {bad}")
        )
        message = _error(path)
        assert 'clusters.east["sasl.password"]' in message


def test_topics_not_a_list(tmp_path: Path) -> None:
    path = _write(tmp_path, VALID.replace("topics: [orders]", "topics: orders"))
    message = _error(path)
    assert "streams.orders[0].topics" in message
    assert "'orders'" in message
    assert "[orders]" in message


@pytest.mark.parametrize(
    ("topics", "value"),
    [("[orders, 5]", "5"), ("[orders, '']", "empty string"), ("[orders, 'a b']", "'a b'")],
)
def test_bad_topic_names(tmp_path: Path, topics: str, value: str) -> None:
    path = _write(tmp_path, VALID.replace("topics: [orders]", f"topics: {topics}"))
    message = _error(path)
    assert "streams.orders[0].topics[1]" in message
    assert value in message


def test_stream_not_a_list(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        VALID.replace(
            "  orders:\n    - cluster: east\n      topics: [orders]\n", "  orders: east\n"
        ),
    )
    message = _error(path)
    assert "streams.orders" in message
    assert "'east'" in message


def test_entry_not_a_mapping(tmp_path: Path) -> None:
    path = _write(tmp_path, "clusters: {}\nstreams:\n  orders: [east]\n")
    message = _error(path)
    assert "streams.orders[0]" in message
    assert "'east'" in message


def test_unknown_key_in_entry(tmp_path: Path) -> None:
    path = _write(tmp_path, VALID.replace("topics: [orders]", "topic: [orders]"))
    message = _error(path)
    assert "streams.orders[0].topic" in message
    assert "Did you mean 'topics'?" in message
    assert "cluster, topics, startingOffsets" in message
    assert "streams.orders[0]: missing required key 'topics'" in message


def test_missing_cluster_key(tmp_path: Path) -> None:
    path = _write(tmp_path, "clusters: {}\nstreams:\n  orders:\n    - topics: [a]\n")
    message = _error(path)
    assert "streams.orders[0]: missing required key 'cluster'" in message


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("middle", "'middle'"),
        ("{timestamp: -1}", "-1"),
        ("{timestamp: soon}", "'soon'"),
        ("{ts: 1}", "'ts'"),
        ("5", "5"),
    ],
)
def test_bad_starting_offsets(tmp_path: Path, value: str, shown: str) -> None:
    path = _write(
        tmp_path,
        VALID.replace("topics: [orders]", f"topics: [orders]\n      startingOffsets: {value}"),
    )
    message = _error(path)
    assert "streams.orders[0].startingOffsets" in message
    assert shown in message


def test_conflicting_starting_offsets_of_merged_entries(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
        clusters:
          east: {bootstrap.servers: "h:1"}
        streams:
          orders:
            - {cluster: east, topics: [a], startingOffsets: earliest}
            - {cluster: east, topics: [b], startingOffsets: latest}
        """,
    )
    message = _error(path)
    assert "streams.orders[1].startingOffsets: conflicts with streams.orders[0]" in message


def test_missing_and_unknown_top_level_keys(tmp_path: Path) -> None:
    message = _error(_write(tmp_path, "cluster: {}\n"))
    assert "cluster: unknown top-level key 'cluster'" in message
    assert "Did you mean 'clusters'?" in message
    assert "Allowed keys: clusters, streams" in message
    assert "missing required key 'clusters'" in message
    assert "missing required key 'streams'" in message


def test_top_level_not_a_mapping(tmp_path: Path) -> None:
    message = _error(_write(tmp_path, "- east\n"))
    assert "(top level): must be a mapping" in message


def test_ids_must_be_non_empty_strings(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
        clusters:
          "": {bootstrap.servers: "h:1"}
          7: {bootstrap.servers: "h:2"}
        streams:
          123: []
          " padded": []
        """,
    )
    message = _error(path)
    assert 'clusters[""]: a cluster id must not be empty' in message
    assert "clusters.7: a cluster id must be a string, got an integer 7" in message
    assert "streams.123: a stream id must be a string, got an integer 123" in message
    assert "' padded'" in message


def test_every_problem_is_listed(tmp_path: Path) -> None:
    document = _document(extra=1)
    clusters = document["clusters"]
    assert isinstance(clusters, dict)
    del clusters["west"]["bootstrap.servers"]
    streams = document["streams"]
    assert isinstance(streams, dict)
    streams["orders"][0]["topics"] = "orders"
    problems = validate_metadata_document(document, "streams.yaml")
    assert len(problems) == 3, problems
    assert problems[0].startswith("extra: unknown top-level key")
    assert any(p.startswith("clusters.west: missing required property") for p in problems)
    assert any(p.startswith("streams.orders[0].topics: must be a list") for p in problems)
    assert not any("unknown cluster" in p for p in problems)  # west is known, just invalid
    with pytest.raises(MetadataValidationError) as info:
        parse_metadata_document(document, "streams.yaml")
    assert "(3 problems)" in str(info.value)
    for problem in problems:
        assert problem in str(info.value)
    assert all(SENTINEL not in p for p in problems)


def test_valid_document_has_no_problems() -> None:
    assert validate_metadata_document(_document(), "x") == []


# --- syntax, empty, missing, extension -----------------------------------------------------


def test_yaml_syntax_error_gives_line_and_column(tmp_path: Path) -> None:
    broken = VALID.replace("sasl.username: alice", "sasl.username: [alice")
    message = _error(_write(tmp_path, broken))
    assert "YAML syntax error at line" in message
    assert "column" in message


def test_yaml_syntax_error_on_the_secret_line(tmp_path: Path) -> None:
    broken = VALID.replace(f"sasl.password: {SENTINEL}", f'sasl.password: "{SENTINEL}')
    message = _error(_write(tmp_path, broken))
    assert "line" in message


def test_yaml_duplicate_key(tmp_path: Path) -> None:
    text = VALID.replace("  west:\n", "  east:\n")
    message = _error(_write(tmp_path, text))
    assert "duplicate key 'east'" in message
    assert "line 8, column 3" in message


def test_json_syntax_error_gives_line_and_column(tmp_path: Path) -> None:
    text = json.dumps(yaml.safe_load(VALID), indent=2).replace('"west"', '"west" "x"')
    message = _error(_write(tmp_path, text, "streams.json"))
    assert "JSON syntax error at line" in message
    assert "column" in message


def test_json_syntax_error_next_to_the_secret(tmp_path: Path) -> None:
    text = json.dumps(yaml.safe_load(VALID), indent=2).replace(f'"{SENTINEL}"', f'"{SENTINEL}" x')
    _error(_write(tmp_path, text, "streams.json"))


def test_json_duplicate_key(tmp_path: Path) -> None:
    text = '{"clusters": {}, "streams": {}, "streams": {}}'
    message = _error(_write(tmp_path, text, "streams.json"))
    assert "duplicate key 'streams'" in message


def test_json_content_error(tmp_path: Path) -> None:
    document = _document()
    document["streams"] = {"orders": [{"cluster": "north", "topics": ["orders"]}]}
    message = _error(_write(tmp_path, json.dumps(document), "streams.json"))
    assert "streams.orders[0].cluster" in message
    assert "'north'" in message


@pytest.mark.parametrize("text", ["", "  \n", "# only a comment\n"])
def test_empty_file(tmp_path: Path, text: str) -> None:
    message = _error(_write(tmp_path, text))
    assert "empty" in message


def test_empty_json_file(tmp_path: Path) -> None:
    assert "empty" in _error(_write(tmp_path, "", "streams.json"))


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    message = _error(path)
    assert str(path) in message
    assert "does not exist" in message


def test_directory_instead_of_file(tmp_path: Path) -> None:
    path = tmp_path / "dir.yaml"
    path.mkdir()
    assert "cannot be read" in _error(path)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "streams.yaml"
    path.write_bytes(b"clusters: {}\nstreams: {\xff}\n")
    assert "UTF-8" in _error(path)


@pytest.mark.parametrize("name", ["streams.txt", "streams"])
def test_unsupported_extension(tmp_path: Path, name: str) -> None:
    path = _write(tmp_path, VALID, name)
    with pytest.raises(MetadataError, match=r"\.yaml"):
        FileMetadataService(path)
    assert name in _error(path)


def test_validate_metadata_file(tmp_path: Path) -> None:
    assert validate_metadata_file(_write(tmp_path, VALID)) == []
    problems = validate_metadata_file(_write(tmp_path, "clusters: [\n"))
    assert len(problems) == 1 and "YAML syntax error" in problems[0]
    problems = validate_metadata_file(
        _write(tmp_path, VALID.replace("cluster: west", "cluster: north").replace("[orders]", "x"))
    )
    assert len(problems) == 2
    assert all(SENTINEL not in p for p in problems)


# --- the service ----------------------------------------------------------------------------


def _replace(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(textwrap.dedent(text), encoding="utf-8")
    os.replace(tmp, path)


def test_service_reads_the_file(tmp_path: Path) -> None:
    service = FileMetadataService(str(_write(tmp_path, VALID)))
    assert isinstance(service, KafkaMetadataService)
    assert {s.stream_id for s in service.get_all_streams()} == {"orders", "payments"}
    described = service.describe_streams(["orders", "unknown"])
    assert set(described) == {"orders"}
    assert described["orders"].clusters["east"].topics == frozenset({"orders"})
    assert service.is_cluster_active("west")
    assert not service.is_cluster_active("north")
    assert "streams.yaml" in repr(service)
    service.close()


def test_service_rereads_after_every_edit(tmp_path: Path) -> None:
    path = _write(tmp_path, VALID)
    service = FileMetadataService(path)
    assert service.is_cluster_active("west")
    _replace(
        path,
        """\
        clusters:
          east: {bootstrap.servers: "h:1"}
        streams:
          orders:
            - {cluster: east, topics: [orders, orders-v2]}
        """,
    )
    assert not service.is_cluster_active("west")
    (orders,) = service.get_all_streams()
    assert orders.clusters["east"].topics == frozenset({"orders", "orders-v2"})
    assert service.describe_streams(["payments"]) == {}
    _replace(path, "clusters: {east: {bootstrap.servers: 'h:1'}}\nstreams: {orders: east}\n")
    with pytest.raises(MetadataValidationError, match=r"streams\.orders"):
        service.get_all_streams()
    with pytest.raises(MetadataValidationError):
        service.is_cluster_active("east")
    _replace(path, VALID)
    assert len(service.get_all_streams()) == 2


def test_service_parses_once_per_version_and_sees_in_place_edits(tmp_path: Path) -> None:
    path = _write(tmp_path, VALID)
    service = FileMetadataService(path)
    first = service.load()
    assert service.load() is first  # one discovery's calls see one version of the file
    path.write_text(path.read_text().replace("[orders]", "[orders, orders-v9]"))  # in place
    assert service.load() is not first
    assert "orders-v9" in service.describe_streams(["orders"])["orders"].clusters["east"].topics


def test_service_on_a_missing_file(tmp_path: Path) -> None:
    service = FileMetadataService(tmp_path / "later.yaml")
    with pytest.raises(MetadataError, match=r"later\.yaml"):
        service.get_all_streams()
    _write(tmp_path, VALID, "later.yaml")
    assert len(service.get_all_streams()) == 2


# --- dump and atomic write -------------------------------------------------------------------


def test_dump_round_trip(tmp_path: Path) -> None:
    parsed = load_metadata_file(_write(tmp_path, VALID))
    document = dump_metadata_document(parsed)
    assert document == yaml.safe_load(VALID)
    assert parse_metadata_document(document, "dump") == parsed


def test_dump_keeps_starting_offsets_and_merges_entries() -> None:
    document = {
        "clusters": {"east": {"bootstrap.servers": "h:1", "linger.ms": 5}},
        "streams": {
            "a": [
                {"cluster": "east", "topics": ["y"], "startingOffsets": {"timestamp": 9}},
                {"cluster": "east", "topics": ["x"]},
            ]
        },
    }
    parsed = parse_metadata_document(document, "doc")
    dumped = dump_metadata_document(parsed)
    assert dumped == {
        "clusters": {"east": {"bootstrap.servers": "h:1", "linger.ms": "5"}},
        "streams": {
            "a": [{"cluster": "east", "topics": ["x", "y"], "startingOffsets": {"timestamp": 9}}]
        },
    }
    assert parse_metadata_document(dumped, "dump") == parsed


@pytest.mark.parametrize("name", ["out.yaml", "out.json"])
def test_write_metadata_file_round_trip(tmp_path: Path, name: str) -> None:
    parsed = load_metadata_file(_write(tmp_path, VALID))
    target = tmp_path / name
    write_metadata_file(target, parsed)
    assert load_metadata_file(target) == parsed
    assert stat.S_IMODE(target.stat().st_mode) == 0o600  # new files may hold secrets
    target.chmod(0o640)
    write_metadata_file(target, parsed)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["streams.yaml", name])


def test_write_refuses_inconsistent_metadata(tmp_path: Path) -> None:
    target = _write(tmp_path, VALID, "out.yaml")
    stream = KafkaStream(
        "s", {"north": ClusterMetadata(frozenset({"t"}), {"bootstrap.servers": "h"})}
    )
    parsed = ParsedMetadata({"east": {"bootstrap.servers": "h:1"}}, {"s": stream})
    with pytest.raises(MetadataValidationError, match="north"):
        write_metadata_file(target, parsed)
    assert target.read_text(encoding="utf-8") == VALID
    assert len(list(tmp_path.iterdir())) == 1


def test_write_into_a_missing_directory(tmp_path: Path) -> None:
    parsed = load_metadata_file(_write(tmp_path, VALID))
    with pytest.raises(MetadataError, match="Cannot write metadata file"):
        write_metadata_file(tmp_path / "nope" / "out.yaml", parsed)


def test_entry_starting_offsets_reach_the_stream_model(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
        clusters:
          east: {bootstrap.servers: "h:1"}
          west: {bootstrap.servers: "h:2"}
        streams:
          a:
            - {cluster: east, topics: [a], startingOffsets: latest}
            - {cluster: west, topics: [a]}
        """,
    )
    parsed = load_metadata_file(path)
    clusters = parsed.streams["a"].clusters
    assert clusters["east"].starting_position == StartingPosition("latest")
    assert clusters["west"].starting_position is None
    service = FileMetadataService(path)
    assert service.describe_streams(["a"])["a"] == parsed.streams["a"]
    assert pickle.loads(pickle.dumps(parsed.streams["a"])) == parsed.streams["a"]
    hash(parsed.streams["a"])


def test_parsed_metadata_keeps_positions_in_step_both_ways() -> None:
    props = {"bootstrap.servers": "h:1"}
    stream = KafkaStream(
        "s", {"east": ClusterMetadata(frozenset({"t"}), props, StartingPosition("earliest"))}
    )
    from_model = ParsedMetadata({"east": props}, {"s": stream})
    assert from_model.starting_offsets == {("s", "east"): StartingPosition("earliest")}
    plain = KafkaStream("s", {"east": ClusterMetadata(frozenset({"t"}), props)})
    from_map = ParsedMetadata(
        {"east": props}, {"s": plain}, {("s", "east"): StartingPosition("timestamp", 9)}
    )
    assert from_map.streams["s"].clusters["east"].starting_position == StartingPosition(
        "timestamp", 9
    )
    assert parse_metadata_document(dump_metadata_document(from_map), "x") == from_map
