"""What the unit tests share: the smallest valid source options, one metadata document (and the
file it is written to), and one scripted Kafka admin.

Import the constants and :class:`FakeAdmin` (``from tests.unit.conftest import BASE``); the
fixtures ``document``, ``metadata_text`` and ``meta`` are found by pytest. A module whose tests
need another document overrides ``document``; ``meta`` then writes that one. A test that needs the
file's text as written (comments, layout: :data:`COMMENTED`) parametrizes ``metadata_text``
indirectly, or a module overrides it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.offset_spec import PositionKind
from pyspark_dynamic_kafka.source.config.options import Mode, parse_options

BASE = {"metadataservice": "file", "metadataservice.path": "/tmp/x.yaml", "streamids": "orders"}
"""The smallest valid source options: stream ``orders`` from a metadata file."""

SECRET = "sasl-s3cret-value"
"""East's SASL password in :data:`DOCUMENT`: tests assert it never shows where it must not."""

DOCUMENT: dict[str, Any] = {
    "clusters": {
        "east": {"bootstrap.servers": "127.0.0.1:1", "sasl.password": SECRET},
        "west": {"bootstrap.servers": "127.0.0.1:2"},
    },
    "streams": {"orders": [{"cluster": "east", "topics": ["orders"]}]},
}
"""A metadata document: clusters east and west (nothing listens on either), stream ``orders`` on
east."""

COMMENTED = """\
# Streams of the shop. Owner: platform team (do not reorder).
clusters:
  east:   # retiring in Q3
    bootstrap.servers: "127.0.0.1:1"
  west:
    bootstrap.servers: '127.0.0.1:2'

streams:
  orders:
    - cluster: east  # moves next
      topics: [orders, orders-dlq]
      startingOffsets: {timestamp: 1700000000000}
  payments:
    # payments read from both
    - cluster: east
      topics:
        - payments-v1
    - cluster: west   # since May
      topics: [payments]
  audit: [{cluster: east, topics: [audit]}]   # flow style
# end of file
"""
"""A metadata file as people write them: comments, blank lines, both quote styles, block and flow
sequences. Edits must keep every byte outside the entries they change."""

TP = tuple[str, int]


@pytest.fixture
def document() -> dict[str, Any]:
    """The metadata document :func:`meta` writes (a module overrides this fixture to change it)."""
    return DOCUMENT


@pytest.fixture
def metadata_text(request: pytest.FixtureRequest, document: dict[str, Any]) -> str:
    """The text :func:`meta` writes: :func:`document` as YAML, or the text a test passes through
    ``@pytest.mark.parametrize("metadata_text", [...], indirect=True)``."""
    text: str | None = getattr(request, "param", None)
    return yaml.safe_dump(document) if text is None else text


@pytest.fixture
def meta(tmp_path: Path, metadata_text: str) -> Path:
    """A metadata file ``streams.yaml`` holding :func:`metadata_text`."""
    path = tmp_path / "streams.yaml"
    path.write_text(metadata_text)
    return path


def rejection(
    options: Mapping[str, str], error: type[OptionsError] = OptionsError, mode: Mode = "stream"
) -> str:
    """The message of the ``error`` that parsing ``options`` raises (the test fails if none)."""
    with pytest.raises(error) as info:
        parse_options(options, mode=mode)
    return str(info.value)


def _not_scripted(kind: str) -> Callable[[TP], int]:
    def answer(tp: TP) -> int:
        raise AssertionError(f"the test scripted no {kind} offset ({tp})")

    return answer


class FakeAdmin:
    """A scripted Kafka admin: the answers the test needs, which no test broker gives on demand
    (partitions in numbers Tansu cannot create, a timestamp lookup that finds nothing, exact
    earliest offsets without producing and deleting records).

    It answers ``list_offsets`` and ``offsets_for_times`` as
    :class:`~pyspark_dynamic_kafka.kafka.admin.ClusterAdmin` does, from ``earliest``, ``latest``
    (per partition) and ``found`` (per partition and timestamp; -1: no record at or after it), and
    ``list_topics`` as confluent-kafka's ``AdminClient`` does, with ``topics``. It records the
    ``timeout`` of each topic listing and the ``read_committed`` of each timestamp lookup.
    """

    def __init__(
        self,
        topics: Iterable[str] = (),
        *,
        earliest: Callable[[TP], int] | None = None,
        latest: Callable[[TP], int] | None = None,
        found: Callable[[TP, int], int] = lambda tp, ms: -1,
    ) -> None:
        self.topics = list(topics)
        self.offsets = {
            PositionKind.EARLIEST: earliest or _not_scripted("earliest"),
            PositionKind.LATEST: latest or _not_scripted("latest"),
        }
        self.found = found
        self.timeouts: list[float] = []
        self.read_committed: list[bool] = []

    def list_topics(self, timeout: float) -> Any:
        self.timeouts.append(timeout)
        return SimpleNamespace(topics={t: object() for t in self.topics})

    def list_offsets(
        self, pairs: Iterable[TP], kind: PositionKind, committed: bool = False
    ) -> dict[TP, int]:
        answer = self.offsets[PositionKind(kind)]
        return {tp: answer(tp) for tp in pairs}

    def offsets_for_times(
        self, stamps: Mapping[TP, int], read_committed: bool = False
    ) -> dict[TP, int]:
        self.read_committed.append(read_committed)
        return {tp: self.found(tp, ms) for tp, ms in stamps.items()}
