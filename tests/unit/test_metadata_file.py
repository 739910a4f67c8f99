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
  payments:
    - cluster: east
      topics: [payments-v1, payments-v2]
    - cluster: west
      topics: [payments]
  orders:
    - cluster: east
      topics: [orders]
"""


EAST = 'clusters:\n  east: {bootstrap.servers: "h:1"}\nstreams:\n'
"""A file's start: one cluster, east; its streams follow."""


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
    parsed = load_metadata_file(
        _write(tmp_path, EAST + "  idle: []\n  quiet:\n    - cluster: east\n      topics: []\n")
    )
    assert parsed.streams["idle"].clusters == {}
    assert parsed.streams["quiet"].clusters["east"].topics == frozenset()
    assert load_metadata_file(_write(tmp_path, "clusters: {}\nstreams: {}\n")).streams == {}


def test_duplicate_cluster_entries_are_merged(tmp_path: Path) -> None:
    entries = "  orders:\n    - {cluster: east, topics: [a, b]}\n"
    entries += "    - {cluster: east, topics: [b, c], startingOffsets: earliest}\n"
    parsed = load_metadata_file(_write(tmp_path, EAST + entries))
    assert parsed.streams["orders"].clusters["east"].topics == frozenset({"a", "b", "c"})
    assert parsed.starting_offsets == {("orders", "east"): StartingPosition("earliest")}


def _stream_a(tmp_path: Path, west: str) -> Path:
    """Stream ``a`` on east (``startingOffsets: latest``) and west (``west`` ends its entry)."""
    return _write(
        tmp_path,
        f"""\
        clusters:
          east: {{bootstrap.servers: "h:1"}}
          west: {{bootstrap.servers: "h:2"}}
        streams:
          a:
            - {{cluster: east, topics: [a], startingOffsets: latest}}
            - {{cluster: west, topics: [a]{west}}}
        """,
    )


def test_starting_offsets_values(tmp_path: Path) -> None:
    parsed = load_metadata_file(
        _stream_a(tmp_path, ", startingOffsets: {timestamp: 1700000000000}")
    )
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


# --- validation and syntax errors: file name, path inside it, value ---------------------------


def _valid(old: str, new: str) -> str:
    """VALID with one edit (which must apply)."""
    assert old in VALID, old
    return VALID.replace(old, new)


JSON_VALID = json.dumps(yaml.safe_load(VALID), indent=2)

_YAML, _JSON = "streams.yaml", "streams.json"
_CONFLICT = (
    EAST
    + """\
  orders:
    - {cluster: east, topics: [a], startingOffsets: earliest}
    - {cluster: east, topics: [b], startingOffsets: latest}
"""
)
_IDS = """\
clusters:
  "": {bootstrap.servers: "h:1"}
  7: {bootstrap.servers: "h:2"}
streams:
  123: []
  " padded": []
"""
_ORDERS_ENTRY = "  orders:\n    - cluster: east\n      topics: [orders]\n"
_NORTH = {"orders": [{"cluster": "north", "topics": ["orders"]}]}
_PASSWORD = f"sasl.password: {SENTINEL}"
_STARTING = "streams.orders[0].startingOffsets"

# id: (file text, file name, what the message must contain); _error also checks that the message
# names the file and never shows the secret.
ERRORS: dict[str, tuple[str, str, list[str]]] = {
    "unknown cluster": (
        _valid("cluster: west", "cluster: north"),
        _YAML,
        ["streams.payments[1].cluster", "'north'", "'east'", "'west'"],
    ),
    "unknown cluster named like the secret": (
        _valid("cluster: west", f"cluster: {SENTINEL}"),
        _YAML,
        ["streams.payments[1].cluster"],
    ),
    "missing bootstrap.servers of a cluster with a secret": (
        _valid("    bootstrap.servers: 127.0.0.1:19092\n", ""),
        _YAML,
        ["clusters.east", "bootstrap.servers"],
    ),
    "empty bootstrap.servers": (
        _valid("127.0.0.1:29092", '""'),
        _YAML,
        ['clusters.west["bootstrap.servers"]'],
    ),
    "clusters not a mapping": (
        "clusters: [east, west]\nstreams: {}\n",
        _YAML,
        ["clusters: must be a mapping", "a list"],
    ),
    "cluster properties not a mapping": (
        "clusters:\n  east: 127.0.0.1:19092\nstreams: {}\n",
        _YAML,
        ["clusters.east", "'127.0.0.1:19092'"],
    ),
    "property value not a scalar": (
        _valid("sasl.mechanism: PLAIN", "sasl.mechanism: [PLAIN]"),
        _YAML,
        ['clusters.east["sasl.mechanism"]', "got a list"],
    ),
    **{
        f"secret value of the wrong type is not shown ({bad})": (
            _valid(_PASSWORD, f"sasl.password: {bad}"),
            _YAML,
            ['clusters.east["sasl.password"]'],
        )
        for bad in (f"[{SENTINEL}]", f"{{x: {SENTINEL}}}", "null")
    },
    "topics not a list": (
        _valid("topics: [orders]", "topics: orders"),
        _YAML,
        ["streams.orders[0].topics", "'orders'", "[orders]"],
    ),
    "stream not a list": (
        _valid(_ORDERS_ENTRY, "  orders: east\n"),
        _YAML,
        ["streams.orders", "'east'"],
    ),
    "entry not a mapping": (
        "clusters: {}\nstreams:\n  orders: [east]\n",
        _YAML,
        ["streams.orders[0]", "'east'"],
    ),
    "unknown key in entry": (
        _valid("topics: [orders]", "topic: [orders]"),
        _YAML,
        [
            "streams.orders[0].topic",
            "Did you mean 'topics'?",
            "cluster, topics, startingOffsets, write",
            "streams.orders[0]: missing required key 'topics'",
        ],
    ),
    "missing cluster key": (
        "clusters: {}\nstreams:\n  orders:\n    - topics: [a]\n",
        _YAML,
        ["streams.orders[0]: missing required key 'cluster'"],
    ),
    # Edits of the orders entry's "topics: [orders]" line.
    **{
        f"orders entry {edit!r}": (_valid("topics: [orders]", edit), _YAML, expected)
        for edit, expected in (
            ("topics: [orders, 5]", ["streams.orders[0].topics[1]", "5"]),
            ("topics: [orders, '']", ["streams.orders[0].topics[1]", "empty string"]),
            ("topics: [orders, 'a b']", ["streams.orders[0].topics[1]", "'a b'"]),
            *(
                (f"topics: [orders]\n      startingOffsets: {value}", [_STARTING, shown])
                for value, shown in (
                    ("middle", "'middle'"),
                    ("{timestamp: -1}", "-1"),
                    ("{timestamp: soon}", "'soon'"),
                    ("{ts: 1}", "'ts'"),
                    ("5", "5"),
                )
            ),
        )
    },
    "conflicting startingOffsets of merged entries": (
        _CONFLICT,
        _YAML,
        ["streams.orders[1].startingOffsets: conflicts with streams.orders[0]"],
    ),
    "missing and unknown top-level keys": (
        "cluster: {}\n",
        _YAML,
        [
            "cluster: unknown top-level key 'cluster'",
            "Did you mean 'clusters'?",
            "Allowed keys: clusters, streams",
            "missing required key 'clusters'",
            "missing required key 'streams'",
        ],
    ),
    "top level not a mapping": ("- east\n", _YAML, ["(top level): must be a mapping"]),
    "ids must be non-empty strings": (
        _IDS,
        _YAML,
        [
            'clusters[""]: a cluster id must not be empty',
            "clusters.7: a cluster id must be a string, got an integer 7",
            "streams.123: a stream id must be a string, got an integer 123",
            "' padded'",
        ],
    ),
    "YAML syntax error: line and column": (
        _valid("sasl.username: alice", "sasl.username: [alice"),
        _YAML,
        ["YAML syntax error at line", "column"],
    ),
    "YAML syntax error on the secret line": (
        _valid(_PASSWORD, f'sasl.password: "{SENTINEL}'),
        _YAML,
        ["line"],
    ),
    "YAML duplicate key": (
        _valid("  west:\n", "  east:\n"),
        _YAML,
        ["duplicate key 'east'", "line 8, column 3"],
    ),
    "JSON syntax error: line and column": (
        JSON_VALID.replace('"west"', '"west" "x"'),
        _JSON,
        ["JSON syntax error at line", "column"],
    ),
    "JSON syntax error next to the secret": (
        JSON_VALID.replace(f'"{SENTINEL}"', f'"{SENTINEL}" x'),
        _JSON,
        [],
    ),
    "JSON duplicate key": (
        '{"clusters": {}, "streams": {}, "streams": {}}',
        _JSON,
        ["duplicate key 'streams'"],
    ),
    "JSON content error": (
        json.dumps(_document(streams=_NORTH)),
        _JSON,
        ["streams.orders[0].cluster", "'north'"],
    ),
    **{
        f"empty file {text!r}": (text, _YAML, ["empty"])
        for text in ("", "  \n", "# only a comment\n")
    },
    "empty JSON file": ("", _JSON, ["empty"]),
}


@pytest.mark.parametrize(("text", "name", "expected"), ERRORS.values(), ids=ERRORS.keys())
def test_errors_name_the_file_the_place_and_the_value(
    tmp_path: Path, text: str, name: str, expected: list[str]
) -> None:
    message = _error(_write(tmp_path, text, name))
    for part in expected:
        assert part in message


def test_unknown_cluster_is_a_validation_error(tmp_path: Path) -> None:
    with pytest.raises(MetadataValidationError):
        load_metadata_file(_write(tmp_path, _valid("cluster: west", "cluster: north")))


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
    path = _stream_a(tmp_path, "")
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
