"""The checkpointed offset: offset documents written by the release before the one codec (the
encoders of source/offsets.py, source/retention.py and source/archive/phase.py at dc7d380, run on
these states) decode to the same :class:`SourceOffset` and encode back byte for byte."""

from __future__ import annotations

import json

import pytest

from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.source.checkpoint import (
    Cursor,
    Retained,
    SourceOffset,
    decode,
    encode,
    reader_schemas_of,
    with_reader_schemas,
)

EAST_ORDERS = {("east", "orders", 0): 100, ("east", "orders", 1): 10}
WEST_KEPT = {("west", "orders", 0): 55}
REMOVED_AT = 1732350000000

#: (document as the earlier release wrote it, the state it holds)
WRITTEN_BEFORE = {
    "plain": (
        '{"version": 1, "clusters": {"east": {"billing": {"0": 0}, "orders": {"2": 42, "10": 7}}, '
        '"west": {"orders": {"0": 120}}}}',
        SourceOffset(
            {("east", "billing", 0): 0, ("east", "orders", 2): 42, ("east", "orders", 10): 7}
            | {("west", "orders", 0): 120}
        ),
    ),
    "removed cluster retained": (
        '{"version": 1, "clusters": {"west": {"orders": {"0": 3}}}, "retained": {"east": '
        '{"orders": {"removedAtMs": 1732350000000, "offsets": {"0": 100, "1": 10}}}}}',
        SourceOffset(
            {("west", "orders", 0): 3}, Retained(EAST_ORDERS, {("east", "orders"): REMOVED_AT})
        ),
    ),
    "archive phase": (
        '{"version": 1, "phase": "archive", "archive": {"done": 7, "files": 24, "fingerprint": '
        '"9f0c2b", "listedAtMs": 1700000000000}, "clusters": {"east": {"orders": {"0": 100, '
        '"1": 10}}}, "retained": {"west": {"orders": {"offsets": {"0": 55}}}}}',
        SourceOffset(
            EAST_ORDERS, Retained(WEST_KEPT), Cursor(7, 24, "9f0c2b", 1700000000000), True
        ),
    ),
    "live phase": (
        '{"version": 1, "phase": "live", "clusters": {"east": {"orders": {"0": 100, "1": 10}}}, '
        '"retained": {"west": {"orders": {"offsets": {"0": 55}}}}}',
        SourceOffset(EAST_ORDERS, Retained(WEST_KEPT), hybrid=True),
    ),
    "live phase, archived and removed retained": (
        '{"version": 1, "phase": "live", "clusters": {"east": {"orders": {"0": 100, "1": 10}}}, '
        '"retained": {"north": {"t": {"removedAtMs": 1732350000000, "offsets": {"3": 9}}}, '
        '"west": {"orders": {"offsets": {"0": 55}}}}}',
        SourceOffset(
            EAST_ORDERS,
            Retained(WEST_KEPT | {("north", "t", 3): 9}, {("north", "t"): REMOVED_AT}),
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


#: A document with topic ids (KIP-516), as this release writes it: after ``retained``, before
#: the reader schemas ``with_reader_schemas`` adds.
WITH_TOPIC_IDS = (
    '{"version": 1, "clusters": {"east": {"orders": {"0": 100, "1": 10}}, "west": {"orders": '
    '{"0": 3}}}, "retained": {"north": {"t": {"removedAtMs": 1732350000000, "offsets": {"3": '
    '9}}}}, "topicIds": {"east": {"orders": "sqRKxeUMSdalEjKW5xqE/w"}}, "readerSchemas": '
    '{"value": {"subject": "orders-value", "version": 3, "fingerprint": "5f1c0a9e3b2d4c71"}}}'
)


def test_topic_ids_round_trip_byte_for_byte() -> None:
    document = json.loads(WITH_TOPIC_IDS)
    state = decode(document)
    assert state.topic_ids == {("east", "orders"): "sqRKxeUMSdalEjKW5xqE/w"}  # west: no id
    assert state.offsets == EAST_ORDERS | {("west", "orders", 0): 3}
    named = reader_schemas_of(document)
    assert json.dumps(with_reader_schemas(encode(state), named)) == WITH_TOPIC_IDS


@pytest.mark.parametrize("name", list(WRITTEN_BEFORE))
def test_documents_without_topic_ids_decode_with_none(name: str) -> None:
    assert decode(json.loads(WRITTEN_BEFORE[name][0])).topic_ids == {}


def test_only_ids_of_topics_read_are_written() -> None:
    state = SourceOffset(
        {("east", "t", 0): 1}, topic_ids={("east", "t"): "id-t", ("east", "gone"): "id-gone"}
    )
    assert encode(state)["topicIds"] == {"east": {"t": "id-t"}}


@pytest.mark.parametrize("block", [["x"], {"east": "x"}, {"east": {"t": ""}}, {"east": {"t": 7}}])
def test_malformed_topic_ids_are_refused_naming_the_key(block: object) -> None:
    with pytest.raises(OffsetsError, match="'topicIds' must map cluster ids"):
        decode({"version": 1, "clusters": {}, "topicIds": block})
