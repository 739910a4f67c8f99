"""The checkpointed offset: offset documents written by the release before the one codec (the
encoders of source/offsets.py, source/retention.py and source/archive/phase.py at dc7d380, run on
these states) decode to the same :class:`SourceOffset` and encode back byte for byte."""

from __future__ import annotations

import json

import pytest

from pyspark_dynamic_kafka.source.checkpoint import Cursor, Retained, SourceOffset, decode, encode

#: (document as the earlier release wrote it, the state it holds)
WRITTEN_BEFORE = {
    "plain": (
        '{"version": 1, "clusters": {"east": {"billing": {"0": 0}, "orders": {"2": 42, "10": 7}}, '
        '"west": {"orders": {"0": 120}}}}',
        SourceOffset(
            {
                ("east", "billing", 0): 0,
                ("east", "orders", 2): 42,
                ("east", "orders", 10): 7,
                ("west", "orders", 0): 120,
            }
        ),
    ),
    "removed cluster retained": (
        '{"version": 1, "clusters": {"west": {"orders": {"0": 3}}}, "retained": {"east": '
        '{"orders": {"removedAtMs": 1732350000000, "offsets": {"0": 10, "1": 7}}}}}',
        SourceOffset(
            {("west", "orders", 0): 3},
            Retained(
                {("east", "orders", 0): 10, ("east", "orders", 1): 7},
                {("east", "orders"): 1732350000000},
            ),
        ),
    ),
    "archive phase": (
        '{"version": 1, "phase": "archive", "archive": {"done": 7, "files": 24, "fingerprint": '
        '"9f0c2b", "listedAtMs": 1700000000000}, "clusters": {"east": {"orders": {"0": 100, '
        '"1": 10}}}, "retained": {"west": {"orders": {"offsets": {"0": 55}}}}}',
        SourceOffset(
            {("east", "orders", 0): 100, ("east", "orders", 1): 10},
            Retained({("west", "orders", 0): 55}),
            Cursor(7, 24, "9f0c2b", 1700000000000),
            hybrid=True,
        ),
    ),
    "live phase": (
        '{"version": 1, "phase": "live", "clusters": {"east": {"orders": {"0": 180}}}, '
        '"retained": {"west": {"orders": {"offsets": {"0": 55}}}}}',
        SourceOffset(
            {("east", "orders", 0): 180}, Retained({("west", "orders", 0): 55}), hybrid=True
        ),
    ),
    "live phase, archived and removed retained": (
        '{"version": 1, "phase": "live", "clusters": {"east": {"orders": {"0": 180}}}, '
        '"retained": {"north": {"t": {"removedAtMs": 1732350000000, "offsets": {"3": 9}}}, '
        '"west": {"orders": {"offsets": {"0": 55}}}}}',
        SourceOffset(
            {("east", "orders", 0): 180},
            Retained(
                {("west", "orders", 0): 55, ("north", "t", 3): 9},
                {("north", "t"): 1732350000000},
            ),
            hybrid=True,
        ),
    ),
}


@pytest.mark.parametrize("name", list(WRITTEN_BEFORE))
def test_documents_of_the_earlier_release_decode_and_encode_back_byte_for_byte(name: str) -> None:
    text, state = WRITTEN_BEFORE[name]
    assert decode(json.loads(text)) == state
    assert json.dumps(encode(state)) == text


def test_the_reported_status_beside_the_offsets_is_ignored() -> None:
    text, state = WRITTEN_BEFORE["plain"]
    assert decode({**json.loads(text), "dynamicKafka": {"planned": {}}}) == state


def test_a_query_without_an_archive_writes_no_phase() -> None:
    assert encode(SourceOffset({("east", "t", 0): 1})) == {
        "version": 1,
        "clusters": {"east": {"t": {"0": 1}}},
    }
    assert not SourceOffset().in_archive
