"""A cluster's schema registry in its metadata entry (``schema.registry.*``): read into a
:class:`RegistryEndpoint`, checked by ``validate`` naming the key, masked where secrets are,
refused as a ``kafka.*`` option, and never handed to a Kafka client."""

from __future__ import annotations

import pytest

from pyspark_dynamic_kafka.errors import MetadataValidationError, OptionsError
from pyspark_dynamic_kafka.kafka.config import (
    FrozenProperties,
    check_client_options,
    client_properties,
    is_secret_key,
)
from pyspark_dynamic_kafka.metadata.document import (
    dump_metadata_document,
    parse_metadata_document,
    validate_metadata_document,
)
from pyspark_dynamic_kafka.registry.endpoint import RegistryEndpoint, registry_problems

SECRET = "registry-SENTINEL-9f2c"
EAST = {
    "bootstrap.servers": "127.0.0.1:9092",
    "schema.registry.url": "https://east-registry:8081, https://east-registry-2:8081",
    "schema.registry.basic.auth.user.info": f"reader:{SECRET}",
    "schema.registry.ssl.ca.location": "/etc/ca.pem",
}


def _document(**clusters: dict[str, str]) -> dict[str, object]:
    return {
        "clusters": clusters,
        "streams": {"orders": [{"cluster": c, "topics": ["orders"]} for c in clusters]},
    }


def test_each_cluster_names_its_own_registry_and_clients_never_see_it() -> None:
    west = {
        "bootstrap.servers": "127.0.0.1:9093",
        "schema.registry.url": "http://west-registry:8081",
        "schema.registry.bearer.auth.token": "${env:WEST_TOKEN}",
    }
    parsed = parse_metadata_document(_document(east=EAST, west=west, north=EAST), "doc")
    clusters = parsed.streams["orders"].clusters
    east_registry = clusters["east"].registry
    assert east_registry == RegistryEndpoint(
        ("https://east-registry:8081", "https://east-registry-2:8081"),
        f"reader:{SECRET}",
        None,
        "/etc/ca.pem",
    )
    assert clusters["north"].registry == east_registry  # several clusters, one registry
    assert clusters["west"].registry == RegistryEndpoint(
        ("http://west-registry:8081",), None, "${env:WEST_TOKEN}"
    )
    assert SECRET not in repr(east_registry) and "WEST_TOKEN" not in repr(clusters["west"])
    # Part of the entry (a registry change is a metadata change), never a client property.
    assert dump_metadata_document(parsed)["clusters"]["east"] == EAST
    assert client_properties(clusters["east"].properties, "east") == {
        "bootstrap.servers": "127.0.0.1:9092"
    }
    # The token's reference is not resolved for a Kafka client (WEST_TOKEN is not set).
    assert client_properties(clusters["west"].properties, "west") == {
        "bootstrap.servers": "127.0.0.1:9093"
    }
    assert is_secret_key("schema.registry.basic.auth.user.info")
    assert is_secret_key("schema.registry.bearer.auth.token")
    assert SECRET not in repr(FrozenProperties(EAST))


def test_a_cluster_without_registry_keys_has_no_registry() -> None:
    parsed = parse_metadata_document(_document(east={"bootstrap.servers": "h:1"}), "doc")
    assert parsed.streams["orders"].clusters["east"].registry is None


@pytest.mark.parametrize(
    ("keys", "where", "said"),
    [
        (
            {"schema.registry.url": "https://r:8081", "schema.registry.urls": "https://q:1"},
            'clusters.east["schema.registry.urls"]',
            "Did you mean 'schema.registry.url'?",
        ),
        (
            {"schema.registry.basic.auth.user.info": f"u:{SECRET}"},
            'clusters.east["schema.registry.basic.auth.user.info"]',
            "a registry key without 'schema.registry.url'",
        ),
        (
            {"schema.registry.url": "registry:8081"},
            'clusters.east["schema.registry.url"]',
            "is not an http:// or https:// URL with a host",
        ),
        (
            {"schema.registry.url": f"https://reader:{SECRET}@registry:8081"},
            'clusters.east["schema.registry.url"]',
            "move them to 'schema.registry.basic.auth.user.info'",
        ),
        (
            {
                "schema.registry.url": "https://r:8081",
                "schema.registry.basic.auth.user.info": SECRET,
            },
            'clusters.east["schema.registry.basic.auth.user.info"]',
            "must be 'user:password'",
        ),
        (
            {
                "schema.registry.url": "https://r:8081",
                "schema.registry.basic.auth.user.info": f"u:{SECRET}",
                "schema.registry.bearer.auth.token": SECRET,
            },
            'clusters.east["schema.registry.bearer.auth.token"]',
            "a registry takes one of the two",
        ),
        (
            {"schema.registry.url": "http://r:8081", "schema.registry.ssl.ca.location": "/ca"},
            'clusters.east["schema.registry.url"]',
            "no URL is https://",
        ),
    ],
)
def test_validate_names_each_registry_problem_and_no_secret(
    keys: dict[str, str], where: str, said: str
) -> None:
    problems = validate_metadata_document(
        _document(east={"bootstrap.servers": "h:1", **keys}), "doc"
    )
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{where}: ") and said in problems[0], problems
    assert SECRET not in problems[0]
    with pytest.raises(MetadataValidationError):
        RegistryEndpoint.of({"bootstrap.servers": "h:1", **keys})


def test_a_registry_as_a_kafka_option_is_refused_and_single_cluster_checks_it() -> None:
    with pytest.raises(OptionsError) as refused:
        check_client_options({"schema.registry.url": "https://r:8081"}, "kafka.")
    assert "Option 'kafka.schema.registry.url'" in str(refused.value)
    assert "part of its cluster's entry in the metadata" in str(refused.value)
    # singleCluster's metadataService.* options are the cluster's entry: a registry is allowed.
    fine = {"bootstrap.servers": "h:1", "schema.registry.url": "https://r:8081"}
    check_client_options(fine, "metadataService.", cluster_entry=True)
    with pytest.raises(OptionsError) as bad:
        check_client_options({**fine, "schema.registry.url": "r"}, "x.", cluster_entry=True)
    assert "Option 'x.schema.registry.url'" in str(bad.value)
    assert registry_problems({"bootstrap.servers": "h:1"}) == []
