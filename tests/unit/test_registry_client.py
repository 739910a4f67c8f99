"""The registry client (:mod:`pyspark_dynamic_kafka.registry.client`) against the testing kit's
schema registry (a test double of Confluent's REST API, :mod:`~pyspark_dynamic_kafka.testing.
schema_registry`): schemas by id, GUID and subject version, each registry's ids its own, cached
writer schemas, credentials by reference, failover between URLs, and each failure named without
a credential."""

from __future__ import annotations

import base64
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyspark_dynamic_kafka.errors import SchemaRegistryError
from pyspark_dynamic_kafka.registry.client import RegistryClient
from pyspark_dynamic_kafka.registry.endpoint import RegistryEndpoint
from pyspark_dynamic_kafka.testing.errors import free_ports
from pyspark_dynamic_kafka.testing.schema_registry import LocalSchemaRegistry

PASSWORD = "REGISTRY-SENTINEL-41aa"
V1 = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]})
V2 = json.dumps(
    {
        "type": "record",
        "name": "R",
        "fields": [{"name": "a", "type": "long"}, {"name": "b", "type": "int", "default": 0}],
    }
)


@pytest.fixture
def west() -> Iterator[LocalSchemaRegistry]:
    with LocalSchemaRegistry(500, f"reader:{PASSWORD}") as registry:
        yield registry


def test_schemas_by_id_guid_and_version_each_registry_its_own(
    west: LocalSchemaRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LocalSchemaRegistry() as east:
        assert east.register("orders-value", V1) == 1
        assert west.register("orders-value", V1) == 500
        assert west.register("orders-value", V2) == 501
        monkeypatch.setenv("DK_TEST_REGISTRY", f"reader:{PASSWORD}")
        client = RegistryClient(
            RegistryEndpoint((west.url,), user_info="${env:DK_TEST_REGISTRY}"), "west"
        )
        assert client.schema_by_id(500).schema == V1
        latest = client.subject_version("orders-value")
        assert (latest.schema, latest.schema_id, latest.version) == (V2, 501, 2)
        first = client.subject_version("orders-value", 1)
        assert (first.schema_id, first.version) == (500, 1)
        east_client = RegistryClient(RegistryEndpoint((east.url,)), "east")
        assert east_client.schema_by_id(1).schema == V1
        with pytest.raises(SchemaRegistryError) as unknown:  # 500 is west's, not east's
            east_client.schema_by_id(500)
        assert f"Cluster 'east': schema registry {east.url} does not hold schema id 500" in str(
            unknown.value
        )
        assert unknown.value.reachable
        guid = json.loads(_get(west, "/subjects/orders-value/versions/2"))["guid"]
        assert client.schema_by_guid(guid).schema == V2

        # Writer schemas are cached: asked again while the registry is down, they answer.
        asked = west.requests
        with west.down():
            assert client.schema_by_id(500).schema == V1
            with pytest.raises(SchemaRegistryError) as down:
                client.subject_version("orders-value")
        assert west.requests == asked
        said = str(down.value)
        assert "could not be reached for version latest of subject 'orders-value'" in said
        assert not down.value.reachable and PASSWORD not in said
        assert client.subject_version("orders-value").version == 2  # back


def test_wrong_credentials_and_failover_between_urls(west: LocalSchemaRegistry) -> None:
    west.register("orders-value", V1)
    wrong = RegistryClient(RegistryEndpoint((west.url,), user_info="reader:wrong-one"), "west")
    with pytest.raises(SchemaRegistryError) as refused:
        wrong.subject_version("orders-value")
    said = str(refused.value)
    assert "refused the credentials (HTTP 401)" in said and "wrong-one" not in said
    dead = f"http://127.0.0.1:{free_ports(1)[0]}"
    both = RegistryEndpoint((dead, west.url), user_info=f"reader:{PASSWORD}")
    assert RegistryClient(both, "west").subject_version("orders-value").schema == V1
    with pytest.raises(SchemaRegistryError) as none:
        RegistryClient(RegistryEndpoint((dead,)), "west", timeout_s=5).schema_by_id(7)
    assert f"schema registry {dead} could not be reached for schema id 7" in str(none.value)


def _get(registry: LocalSchemaRegistry, path: str) -> str:
    token = base64.b64encode(f"reader:{PASSWORD}".encode()).decode()
    request = urllib.request.Request(
        registry.url + path, headers={"Authorization": f"Basic {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return str(answer.read().decode())
