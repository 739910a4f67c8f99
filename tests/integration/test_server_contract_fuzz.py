"""schemathesis against the reference metadata server (``dynamic-kafka serve`` as a subprocess,
over HTTP): requests generated from docs/metadata-service-openapi.yaml, valid and invalid ones,
with and without the write token. No answer may be a 5xx, and every answer must conform to the
contract: a documented status code, its content type, its headers and its body schema.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
import yaml
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance
from tests.integration.metadata_server import WRITE_TOKEN, MetadataServer, token_file

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "docs" / "metadata-service-openapi.yaml"
#: Examples per operation and auth variant: 9 operations x 2 x 40 = 720 requests, well under a
#: minute on loopback.
EXAMPLES = 40

DOCUMENT: dict[str, Any] = {
    "clusters": {
        "east": {
            "bootstrap.servers": "127.0.0.1:1",
            "sasl.password": "SENTINEL-sasl-password-5b1f0c",
        },
        "west": {"bootstrap.servers": "127.0.0.1:2"},
    },
    "streams": {
        "orders": [{"cluster": "east", "topics": ["orders"], "startingOffsets": "earliest"}],
        "payments": [
            {"cluster": "east", "topics": ["payments"]},
            {"cluster": "west", "topics": ["payments"], "startingOffsets": {"timestamp": 5}},
        ],
    },
}

schema = schemathesis.openapi.from_path(SPEC)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MetadataServer]:
    directory = tmp_path_factory.mktemp("contract-fuzz")
    meta = directory / "streams.yaml"
    meta.write_text(yaml.safe_dump(DOCUMENT))
    tokens = token_file(directory / "write-token.txt", WRITE_TOKEN)
    running = MetadataServer(meta, directory / "server.log", tokens).start()
    try:
        yield running
    finally:
        running.stop()


def _restore(server: MetadataServer) -> None:
    """Put the original document back when writes emptied it (so reads keep finding data)."""
    current = yaml.safe_load(server.metadata.read_text())
    if not current.get("streams") or len(current.get("clusters", {})) < 2:
        server.metadata.write_text(yaml.safe_dump(DOCUMENT))


@pytest.mark.parametrize("authorized", [True, False], ids=["write-token", "no-token"])
@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_server_follows_its_contract(
    case: schemathesis.Case, server: MetadataServer, authorized: bool
) -> None:
    headers = {"Authorization": f"Bearer {WRITE_TOKEN}"} if authorized else {}
    # positive_data_acceptance is left out: it takes the documented 412 of a well-formed but
    # stale If-Match (a generated ETag never matches) for a wrongly refused request.
    response = case.call_and_validate(
        base_url=server.url,
        headers=headers,
        excluded_checks=[positive_data_acceptance],
        timeout=60,
    )
    assert response.status_code < 500
    assert "SENTINEL" not in response.text or response.status_code == 200
    _restore(server)
