"""The metadata service factory and the single-cluster service (without a broker)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest
from tests.unit.conftest import FakeAdmin

from pyspark_dynamic_kafka.errors import MetadataError, MetadataValidationError, OptionsError
from pyspark_dynamic_kafka.metadata import (
    FileMetadataService,
    KafkaStream,
    SingleClusterMetadataService,
    create_metadata_service,
)

SENTINEL = "s3cr3t-SENTINEL"


class GoodService:
    """A custom service: records the options it was created with."""

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options

    def get_all_streams(self) -> frozenset[KafkaStream]:
        return frozenset()

    def describe_streams(self, stream_ids: Iterable[str]) -> Mapping[str, KafkaStream]:
        return {}

    def is_cluster_active(self, cluster_id: str) -> bool:
        return False

    def close(self) -> None:
        pass


class NotAService:
    def __init__(self, options: dict[str, str]) -> None:
        self.options = options

    def get_all_streams(self) -> frozenset[KafkaStream]:
        return frozenset()


class FailingService(GoodService):
    def __init__(self, options: dict[str, str]) -> None:
        raise RuntimeError(f"cannot log in with {options.get('api.token')}")


class StrictService(GoodService):
    def __init__(self, options: dict[str, str]) -> None:
        raise OptionsError("Option 'metadataService.url' is required.")


NOT_A_CLASS = 42


def _spec(name: str) -> str:
    return f"{__name__}:{name}"


# --- file ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["file", "FILE", " File "])
def test_file(kind: str, tmp_path: Path) -> None:
    service = create_metadata_service(kind, {"path": str(tmp_path / "m.yaml")})
    assert isinstance(service, FileMetadataService)
    assert service.path == tmp_path / "m.yaml"


def test_file_keys_are_case_insensitive(tmp_path: Path) -> None:
    service = create_metadata_service("file", {"PATH": str(tmp_path / "m.json")})
    assert isinstance(service, FileMetadataService)


def test_file_path_required() -> None:
    for options in ({}, {"path": "  "}):
        with pytest.raises(OptionsError, match=r"'metadataService\.path' is required"):
            create_metadata_service("file", options)


def test_file_unknown_key_suggests_the_closest() -> None:
    with pytest.raises(OptionsError) as info:
        create_metadata_service("file", {"path": "/m.yaml", "pth": "x", "sasl.password": SENTINEL})
    message = str(info.value)
    assert "'metadataService.pth'" in message
    assert "Did you mean 'metadataService.path'?" in message
    assert SENTINEL not in message


def test_file_bad_extension() -> None:
    with pytest.raises(OptionsError) as info:
        create_metadata_service("file", {"path": "/etc/streams.txt"})
    message = str(info.value)
    assert "metadataService.path" in message
    assert "/etc/streams.txt" in message
    assert ".yaml" in message


# --- singleCluster --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["singleCluster", "singlecluster", "SINGLECLUSTER"])
def test_single_cluster(kind: str) -> None:
    service = create_metadata_service(
        kind, {"bootstrap.servers": "h:1", "clusterid": "main", "security.protocol": "SSL"}
    )
    assert isinstance(service, SingleClusterMetadataService)
    assert service.cluster_id == "main"
    assert service.is_cluster_active("main")
    assert not service.is_cluster_active("kafka")


def test_single_cluster_defaults_and_properties() -> None:
    service = create_metadata_service(
        "singleCluster", {"bootstrap.servers": "h:1", "sasl.password": SENTINEL}
    )
    assert isinstance(service, SingleClusterMetadataService)
    assert service.cluster_id == "kafka"
    assert SENTINEL not in repr(service)
    fake = FakeAdmin(["orders", "__consumer_offsets", "payments"])
    service._admin._client = fake
    (orders,) = service.describe_streams(["orders", "missing"]).values()
    assert orders.clusters["kafka"].topics == frozenset({"orders"})
    assert orders.clusters["kafka"].properties == {
        "bootstrap.servers": "h:1",
        "sasl.password": SENTINEL,
    }
    assert {s.stream_id for s in service.get_all_streams()} == {"orders", "payments"}
    assert fake.timeouts == [30.0, 30.0]
    service.close()
    assert service._admin._client is None


def test_single_cluster_bootstrap_required() -> None:
    with pytest.raises(OptionsError, match=r"'metadataService\.bootstrap\.servers' is required"):
        create_metadata_service("singleCluster", {"clusterid": "main"})


def test_single_cluster_bad_options() -> None:
    with pytest.raises(OptionsError, match=r"'metadataService\.clusterId' must not be empty"):
        create_metadata_service("singleCluster", {"bootstrap.servers": "h:1", "clusterid": " "})
    with pytest.raises(OptionsError, match=r"'soon'.*'metadataService\.requestTimeoutMs'"):
        create_metadata_service(
            "singleCluster", {"bootstrap.servers": "h:1", "requesttimeoutms": "soon"}
        )


def test_single_cluster_constructor_validation() -> None:
    with pytest.raises(MetadataValidationError, match="cluster_id"):
        SingleClusterMetadataService("", {"bootstrap.servers": "h:1"})
    with pytest.raises(MetadataValidationError, match=r"bootstrap\.servers"):
        SingleClusterMetadataService("k", {"sasl.password": SENTINEL})
    with pytest.raises(MetadataValidationError, match="request_timeout_ms"):
        SingleClusterMetadataService("k", {"bootstrap.servers": "h:1"}, request_timeout_ms=0)


def test_single_cluster_unreachable_fails_fast_without_secrets() -> None:
    service = create_metadata_service(
        "singleCluster",
        {
            "bootstrap.servers": "127.0.0.1:1",
            "requesttimeoutms": "500",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "alice",
            "sasl.password": SENTINEL,
        },
    )
    started = time.monotonic()
    with pytest.raises(MetadataError) as info:
        service.get_all_streams()
    assert time.monotonic() - started < 10
    message = str(info.value)
    assert "127.0.0.1:1" in message
    assert "'kafka'" in message
    assert SENTINEL not in message
    assert info.value.__cause__ is None and info.value.__suppress_context__
    service.close()


def test_single_cluster_bad_client_property() -> None:
    # Refused when the service is made (the query defined), naming the option.
    with pytest.raises(OptionsError) as info:
        create_metadata_service(
            "singleCluster", {"bootstrap.servers": "h:1", "no.such.property": "1"}
        )
    message = str(info.value)
    assert message.startswith("Option 'metadataService.no.such.property': librdkafka refuses it")


# --- package.module:ClassName -------------------------------------------------------------------


def test_custom_class_gets_the_options() -> None:
    service = create_metadata_service(_spec("GoodService"), {"url": "http://x", "retries": "3"})
    assert isinstance(service, GoodService)
    assert service.options == {"url": "http://x", "retries": "3"}


def test_custom_class_must_implement_the_protocol() -> None:
    with pytest.raises(OptionsError) as info:
        create_metadata_service(_spec("NotAService"), {})
    message = str(info.value)
    assert "NotAService does not implement KafkaMetadataService" in message
    assert "describe_streams, is_cluster_active, close" in message


def test_custom_class_errors() -> None:
    with pytest.raises(OptionsError, match="cannot import module 'no_such_module_xyz'"):
        create_metadata_service("no_such_module_xyz:Service", {})
    with pytest.raises(OptionsError, match="has no attribute 'Missing'"):
        create_metadata_service(_spec("Missing"), {})
    with pytest.raises(OptionsError, match="is not a class"):
        create_metadata_service(_spec("NOT_A_CLASS"), {})
    for bad in ("pkg:", ":Cls", "pkg:Cls:x", "a b:C"):
        with pytest.raises(OptionsError, match=r"'package\.module:ClassName'"):
            create_metadata_service(bad, {})


def test_custom_class_raising_while_created() -> None:
    with pytest.raises(MetadataError) as info:
        create_metadata_service(_spec("FailingService"), {"api.token": SENTINEL})
    message = str(info.value)
    assert "FailingService" in message and "RuntimeError" in message
    assert SENTINEL not in message
    with pytest.raises(OptionsError, match=r"metadataService\.url"):
        create_metadata_service(_spec("StrictService"), {})


# --- unknown kind -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "hint"), [("zookeeper", ""), ("singelCluster", "singleCluster"), ("htp", "http")]
)
def test_unknown_kind(kind: str, hint: str) -> None:
    with pytest.raises(OptionsError) as info:
        create_metadata_service(kind, {})
    message = str(info.value)
    assert "'metadataService'" in message
    assert repr(kind) in message
    assert "'file', 'http', 'singleCluster' or 'package.module:ClassName'" in message
    if hint:
        assert f"Did you mean '{hint}'?" in message


def test_single_cluster_refuses_java_properties_naming_the_option() -> None:
    # metadataService.<property> of singleCluster are client properties: a Java one without a
    # librdkafka equivalent fails when the service is made (the query's start).
    options = {"bootstrap.servers": "h:1", "ssl.keystore.type": "JKS"}
    with pytest.raises(OptionsError) as failed:
        create_metadata_service("singleCluster", options)
    message = str(failed.value)
    assert message.startswith("Option 'metadataService.ssl.keystore.type' is a Java client ")
    assert "keytool -importkeystore" in message
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="u" password="p";'
    )
    service = create_metadata_service(
        "singleCluster", {"bootstrap.servers": "h:1", "sasl.jaas.config": jaas}
    )
    service.close()  # translated per cluster when the query merges its properties
