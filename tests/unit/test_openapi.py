"""The OpenAPI document describes exactly what the reference server serves."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from starlette.routing import Route

from pyspark_dynamic_kafka.metadata.document import parse_metadata_document
from pyspark_dynamic_kafka.server.app import create_app

ROOT = Path(__file__).resolve().parents[2]
SPEC_PATH = ROOT / "docs" / "metadata-service-openapi.yaml"


def _spec() -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load(SPEC_PATH.read_text())
    return spec


def _refs(node: object) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for value in node.values() for r in _refs(value)]
    if isinstance(node, list):
        return [r for item in node for r in _refs(item)]
    return []


def test_paths_and_methods_match_the_server(tmp_path: Path) -> None:
    meta = tmp_path / "streams.yaml"
    meta.write_text("clusters: {}\nstreams: {}\n")
    served: dict[str, set[str]] = {}
    for route in create_app(meta).routes:
        assert isinstance(route, Route)
        path = re.sub(r"\{stream_id:anytext\}", "{streamId}", route.path)
        path = re.sub(r"\{cluster_id:anytext\}", "{clusterId}", path)
        served[path] = {m.lower() for m in route.methods or ()} - {"head"}
    documented = {
        path: {k for k in item if k in ("get", "put", "delete", "post", "patch")}
        for path, item in _spec()["paths"].items()
    }
    assert documented == served


def test_every_reference_resolves() -> None:
    spec = _spec()
    assert spec["openapi"].startswith("3.1")
    for ref in _refs(spec):
        node: Any = spec
        for part in ref.removeprefix("#/").split("/"):
            node = node[part]


def test_document_example_is_a_valid_metadata_document() -> None:
    example = _spec()["components"]["schemas"]["MetadataDocument"]["example"]
    parsed = parse_metadata_document(example, "example")
    assert set(parsed.streams) == {"orders", "payments"}


def test_readme_links_the_contract() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "(docs/metadata-service-openapi.yaml)" in readme
