"""Resolving positions to offsets on the driver, and client settings reaching the consumers.

The admin client is scripted: a timestamp lookup answering -1 ("no record at or after it") cannot
be produced on the test broker (Tansu answers 0 for an empty partition).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.kafka.pool import consumer_config
from pyspark_dynamic_kafka.source.discovery import ClusterAssignment
from pyspark_dynamic_kafka.source.listing import OffsetLister
from pyspark_dynamic_kafka.source.options import parse_options
from pyspark_dynamic_kafka.source.planning import task_properties
from pyspark_dynamic_kafka.source.positions import Position

BASE = {"metadataservice": "file", "metadataservice.path": "/tmp/x.yaml", "streamids": "orders"}
TP = tuple[str, int]


class _Admin:
    def __init__(self) -> None:
        self.committed: list[bool] = []

    def list_offsets(self, pairs: list[TP], spec: str, read_committed: bool = False) -> dict:
        return dict.fromkeys(pairs, 2 if spec == "earliest" else 50)

    def offsets_for_times(self, stamps: Mapping[TP, int], read_committed: bool = False) -> dict:
        self.committed.append(read_committed)
        return {tp: (-1 if ms > 1000 else 60 if ms == 999 else 7) for tp, ms in stamps.items()}


def _lister(**options: str) -> tuple[OffsetLister, _Admin, ClusterAssignment]:
    lister = OffsetLister(parse_options({**BASE, **options}))
    admin = _Admin()
    lister.admin = lambda cluster_id, cluster: admin  # type: ignore[method-assign,assignment,return-value]
    props = FrozenProperties({"bootstrap.servers": "h:1", "isolation.level": "read_committed"})
    return lister, admin, ClusterAssignment(props, frozenset({"t"}))


def test_every_kind_of_position_resolves() -> None:
    lister, admin, cluster = _lister()
    wanted: dict[TP, Any] = {
        ("t", 0): Position("earliest"),
        ("t", 1): Position("latest"),
        ("t", 2): Position("offset", 23),
        ("t", 3): Position("timestamp", 5),
        ("t", 4): Position("timestamp", 999),  # found past the latest offset: clamped
    }
    latest = dict.fromkeys(wanted, 50)
    assert lister.resolve("east", cluster, wanted, latest, "error") == {
        ("t", 0): 2,
        ("t", 1): 50,
        ("t", 2): 23,
        ("t", 3): 7,
        ("t", 4): 50,
    }
    assert admin.committed == [True]  # read_committed lookups for a read_committed cluster


def test_timestamp_without_record_fails_or_starts_at_latest() -> None:
    lister, _, cluster = _lister()
    wanted = {
        ("t", 0): Position("timestamp", 5000, "startingTimestamp"),
        ("t", 1): Position("timestamp", 5),
    }
    latest = {("t", 0): 40, ("t", 1): 40}
    with pytest.raises(OffsetsError) as info:
        lister.resolve("east", cluster, wanted, latest, "error")
    assert "east/t/0 (startingTimestamp 5000)" in str(info.value)
    assert "startingOffsetsByTimestampStrategy=latest" in str(info.value)
    assert lister.resolve("east", cluster, wanted, latest, "latest") == {("t", 0): 40, ("t", 1): 7}


def test_isolation_level_and_group_id_reach_the_consumers() -> None:
    options = parse_options({**BASE, "kafka.isolation.level": "read_committed"})
    merged = {**options.kafka_properties, "bootstrap.servers": "h:1"}
    props = task_properties({"east": merged}, "spark-dynamic-kafka-1")["east"]
    config = consumer_config(props)
    assert config["isolation.level"] == "read_committed"
    assert config["group.id"] == "spark-dynamic-kafka-1"
    assert config["enable.auto.commit"] == "false"
    assert consumer_config({"bootstrap.servers": "h:1"})["isolation.level"] == "read_uncommitted"
