"""The in-memory metadata service."""

from __future__ import annotations

import pytest

from pyspark_dynamic_kafka.errors import MetadataValidationError
from pyspark_dynamic_kafka.metadata import (
    ClusterMetadata,
    InMemoryMetadataService,
    KafkaMetadataService,
    KafkaStream,
)


def _stream(stream_id: str, **clusters: tuple[str, ...]) -> KafkaStream:
    return KafkaStream(
        stream_id,
        {
            cid: ClusterMetadata(frozenset(topics), {"bootstrap.servers": f"{cid}:9092"})
            for cid, topics in clusters.items()
        },
    )


ORDERS = _stream("orders", east=("orders",))
PAYMENTS = _stream("payments", east=("payments-v1",), west=("payments",))


def test_implements_protocol() -> None:
    assert isinstance(InMemoryMetadataService([]), KafkaMetadataService)


def test_active_clusters_default_to_those_of_the_streams() -> None:
    service = InMemoryMetadataService([ORDERS, PAYMENTS])
    assert service.get_all_streams() == frozenset({ORDERS, PAYMENTS})
    assert service.is_cluster_active("east")
    assert service.is_cluster_active("west")
    assert not service.is_cluster_active("north")


def test_explicit_active_clusters() -> None:
    service = InMemoryMetadataService([ORDERS, PAYMENTS], active_clusters=["east", "north"])
    assert service.is_cluster_active("north")
    assert not service.is_cluster_active("west")


def test_describe_streams_omits_unknown_ids() -> None:
    service = InMemoryMetadataService(iter([ORDERS, PAYMENTS]))
    assert service.describe_streams(["orders", "nope"]) == {"orders": ORDERS}
    assert service.describe_streams(iter([])) == {}


def test_set_streams_replaces_everything() -> None:
    service = InMemoryMetadataService([ORDERS, PAYMENTS])
    service.set_streams([ORDERS])
    assert service.get_all_streams() == frozenset({ORDERS})
    assert not service.is_cluster_active("west")
    service.set_streams([ORDERS], active_clusters={"west"})
    assert service.is_cluster_active("west")
    assert not service.is_cluster_active("east")
    service.close()


def test_duplicate_stream_ids() -> None:
    InMemoryMetadataService([ORDERS, ORDERS])  # identical: fine
    other = _stream("orders", west=("orders",))
    with pytest.raises(MetadataValidationError, match="'orders'"):
        InMemoryMetadataService([ORDERS, other])


def test_bad_arguments() -> None:
    with pytest.raises(MetadataValidationError, match="KafkaStream"):
        InMemoryMetadataService(["orders"])  # type: ignore[list-item]
    with pytest.raises(MetadataValidationError, match="'east'"):
        InMemoryMetadataService([ORDERS], active_clusters="east")


def test_repr() -> None:
    assert "orders" in repr(InMemoryMetadataService([ORDERS]))
