"""The registry of broker kinds: names, what each kind accepts, the environment's choice.

Every case here is refused before any broker process starts.
"""

from __future__ import annotations

from typing import Any

import pytest

from pyspark_dynamic_kafka.testing import (
    BROKER_ENV_VAR,
    BROKER_KINDS,
    DEFAULT_BROKER,
    ApacheKafkaCluster,
    LocalKafkaCluster,
    cluster_class,
    open_clusters,
    start_clusters,
)


def test_kinds_by_name() -> None:
    assert {"tansu": LocalKafkaCluster, "kafka": ApacheKafkaCluster} == BROKER_KINDS
    assert DEFAULT_BROKER == "kafka"
    assert cluster_class("kafka") is ApacheKafkaCluster
    with pytest.raises(
        ValueError, match=r"unknown broker kind 'redpanda'; known kinds: kafka, tansu"
    ):
        cluster_class("redpanda")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"brokers_per_cluster": 3}, r"broker kind 'tansu' .* brokers_per_cluster=3 cannot be"),
        ({"racks": ["dc1"]}, r"broker kind 'tansu' .* racks=\['dc1'\] cannot be honoured"),
    ],
)
def test_tansu_refuses_several_brokers_and_racks(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        start_clusters(["east"], "tansu", **options)
    assert "use broker='kafka'" in str(info.value)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"brokers_per_cluster": 0}, "at least 1 broker, got brokers=0"),
        ({"brokers_per_cluster": 3, "racks": ["dc1", "dc2"]}, r"2 rack\(s\) for 3 broker"),
    ],
)
def test_kafka_checks_brokers_and_racks(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message), start_clusters(["east"], "kafka", **options):
        pass


def test_apache_kafka_is_the_kind_started_when_none_is_named() -> None:
    """Without a kind, start_clusters and open_clusters (empty environment) start Apache Kafka:
    its own check of the broker count answers, where Tansu's would name its one broker."""
    with (
        pytest.raises(ValueError, match="at least 1 broker, got brokers=0"),
        start_clusters(["east"], brokers_per_cluster=0),
    ):
        pass
    with (
        pytest.raises(ValueError, match="at least 1 broker, got brokers=0"),
        open_clusters(["east"], environ={}, brokers_per_cluster=0),
    ):
        pass
    with (
        pytest.raises(ValueError, match="broker kind 'tansu' runs one broker"),
        open_clusters(["east"], environ={BROKER_ENV_VAR: "tansu"}, brokers_per_cluster=0),
    ):
        pass


def test_the_environment_names_the_kind() -> None:
    environ = {BROKER_ENV_VAR: "redpanda"}
    with (
        pytest.raises(ValueError, match="unknown broker kind 'redpanda'"),
        open_clusters(["east"], environ=environ),
    ):
        pass
    # Options of start_clusters pass through open_clusters to the kind.
    with (
        pytest.raises(ValueError, match="brokers_per_cluster=2"),
        open_clusters(["east"], environ={BROKER_ENV_VAR: "tansu"}, brokers_per_cluster=2),
    ):
        pass
