"""The metadata model: frozen, hashable, picklable, secrets masked in repr."""

from __future__ import annotations

import pickle

import pytest

from pyspark_dynamic_kafka.errors import MetadataValidationError
from pyspark_dynamic_kafka.metadata import (
    ClusterMetadata,
    KafkaStream,
    ParsedMetadata,
    StartingPosition,
)

SENTINEL = "s3cr3t-SENTINEL"


def _props(port: int = 19092, **extra: str) -> dict[str, str]:
    return {"bootstrap.servers": f"127.0.0.1:{port}", **extra}


def _stream() -> KafkaStream:
    secret = {**_props(), "sasl.password": SENTINEL, "sasl.username": "alice"}
    return KafkaStream(
        "payments",
        {
            "west": ClusterMetadata(frozenset({"payments"}), _props(29092)),
            "east": ClusterMetadata(frozenset({"payments-v1", "payments-v2"}), secret),
        },
    )


def test_equal_and_hashable() -> None:
    a, b = _stream(), _stream()
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b}) == 1
    assert a != KafkaStream("payments", {"west": a.clusters["west"]})


def test_cluster_order_does_not_matter() -> None:
    east = ClusterMetadata(frozenset({"t"}), _props())
    west = ClusterMetadata(frozenset({"t"}), _props(29092))
    assert KafkaStream("s", {"east": east, "west": west}) == KafkaStream(
        "s", {"west": west, "east": east}
    )


def test_picklable() -> None:
    stream = _stream()
    clone = pickle.loads(pickle.dumps(stream))
    assert clone == stream
    assert hash(clone) == hash(stream)
    assert clone.clusters["east"].properties["sasl.password"] == SENTINEL


def test_repr_masks_secrets() -> None:
    stream = _stream()
    assert SENTINEL not in repr(stream)
    assert SENTINEL not in str(stream)
    assert SENTINEL not in repr(stream.clusters)
    assert SENTINEL not in repr(stream.clusters["east"])
    assert "alice" in repr(stream)


def test_frozen() -> None:
    stream = _stream()
    with pytest.raises(AttributeError):
        stream.stream_id = "other"  # type: ignore[misc]


def test_topics_and_properties_are_normalised() -> None:
    cluster = ClusterMetadata(["a", "b"], _props())  # type: ignore[arg-type]
    assert cluster.topics == frozenset({"a", "b"})
    assert cluster.bootstrap_servers == "127.0.0.1:19092"


@pytest.mark.parametrize(
    ("topics", "properties", "fragment"),
    [
        (frozenset({""}), _props(), "topics"),
        ("orders", _props(), "topics"),
        (frozenset({"t"}), {"security.protocol": "SSL"}, "bootstrap.servers"),
    ],
)
def test_cluster_validation(topics: object, properties: dict[str, str], fragment: str) -> None:
    with pytest.raises(MetadataValidationError, match=fragment):
        ClusterMetadata(topics, properties)  # type: ignore[arg-type]


def test_stream_validation() -> None:
    cluster = ClusterMetadata(frozenset({"t"}), _props())
    with pytest.raises(MetadataValidationError, match="stream_id"):
        KafkaStream("", {"east": cluster})
    with pytest.raises(MetadataValidationError, match="cluster ids"):
        KafkaStream("s", {"": cluster})
    with pytest.raises(MetadataValidationError, match="ClusterMetadata"):
        KafkaStream("s", {"east": {"topics": ["t"]}})  # type: ignore[dict-item]


def test_parsed_metadata_repr_masks_secrets() -> None:
    stream = _stream()
    parsed = ParsedMetadata(
        {"east": stream.clusters["east"].properties, "west": _props(29092)},
        {"payments": stream},
        {("payments", "east"): StartingPosition("timestamp", 5)},
    )
    assert SENTINEL not in repr(parsed)
    assert parsed.active_clusters == frozenset({"east", "west"})


def test_starting_position_validation() -> None:
    assert StartingPosition("earliest").to_document() == "earliest"
    assert StartingPosition("timestamp", 7).to_document() == {"timestamp": 7}
    with pytest.raises(MetadataValidationError):
        StartingPosition("timestamp")
    with pytest.raises(MetadataValidationError):
        StartingPosition("latest", 3)
