"""Property-based tests of the offset JSON: the checkpointed offset and the offset options.

For any input: ``OffsetsError`` naming the checkpoint or the option (never another exception);
valid offsets round-trip: encode -> decode, and JSON text -> spec for the options.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.unit.fuzz_documents import corrupt
from tests.unit.fuzz_support import deep_nesting, integers, json_values, mutated, short_text

from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.offset_spec import PartitionKey, PositionKind
from pyspark_dynamic_kafka.source.checkpoint import SourceOffset, decode, encode
from pyspark_dynamic_kafka.source.config.position_options import (
    parse_offsets_spec,
    parse_timestamp,
    parse_timestamps_spec,
)
from pyspark_dynamic_kafka.source.partition_json import (
    MAX_OFFSET,
    MAX_PARTITION,
)

names = st.one_of(st.sampled_from(["east", "west", "orders", ""]), st.text(max_size=6))
partitions = st.one_of(st.integers(0, 5), st.just(MAX_PARTITION), st.integers(0, MAX_PARTITION))
offsets = st.one_of(st.integers(0, 1000), st.just(MAX_OFFSET), st.integers(0, MAX_OFFSET))
offset_maps = st.dictionaries(st.tuples(names, names, partitions), offsets, max_size=6)


def _nested(values: dict[PartitionKey, Any]) -> dict[str, Any]:
    document: dict[str, Any] = {}
    for (cluster, topic, partition), value in values.items():
        document.setdefault(cluster, {}).setdefault(topic, {})[str(partition)] = value
    return document


@given(values=offset_maps)
def test_checkpointed_offsets_round_trip(values: dict[PartitionKey, int]) -> None:
    encoded = encode(SourceOffset(values))
    assert decode(encoded).offsets == values
    # What Spark writes to the checkpoint and hands back: the JSON text of the dict.
    again = json.loads(json.dumps(encoded))
    assert decode(again).offsets == values
    assert encode(SourceOffset(decode(again).offsets)) == encoded
    assert json.dumps(encode(SourceOffset(decode(again).offsets))) == json.dumps(encoded)


@given(values=offset_maps, data=st.data())
def test_any_checkpointed_offset_decodes_or_fails_naming_the_checkpoint(
    values: dict[PartitionKey, int], data: st.DataObject
) -> None:
    how = data.draw(st.sampled_from(["corrupted", "any", "versioned"]), label="how")
    document: Any
    if how == "corrupted":
        document = corrupt(encode(SourceOffset(values)), data, rate=4)
    elif how == "any":
        document = data.draw(json_values(), label="any value")
    else:
        document = {"version": 1, "clusters": data.draw(json_values(), label="clusters")}
    try:
        decoded = decode(document).offsets
    except OffsetsError as error:
        assert "heckpointed offset" in str(error), str(error)
    else:
        assert all(0 <= v <= MAX_OFFSET for v in decoded.values())
        assert all(0 <= key[2] <= MAX_PARTITION for key in decoded)


_JSON_NOISE = '{}[],:"0123456789-.eE \n' + "tfnaluse"


@st.composite
def option_texts(draw: st.DrawFn, numbers: st.SearchStrategy[int]) -> str:
    """An offset or timestamp option's value: near-valid JSON, broken, or anything."""
    how = draw(st.sampled_from(["json", "broken", "nested", "text", "keyword"]))
    if how == "keyword":
        return draw(st.sampled_from(["earliest", "latest", " Latest ", "EARLIEST", "", " "]))
    if how == "text":
        return draw(st.one_of(short_text, st.text(max_size=30), integers.map(_digits)))
    if how == "nested":
        return draw(deep_nesting())
    values = draw(st.dictionaries(st.tuples(names, names, partitions), numbers, max_size=4))
    document: Any = _nested(values)
    if how == "broken":
        document = corrupt(document, draw(st.data()), rate=3)
    try:
        text = json.dumps(document, default=repr, skipkeys=True)
    except ValueError:  # an int too long to write: the decoder never sees such text either
        text = "{" + "1" * 5000 + "}"
    return mutated(text, draw(st.data()), _JSON_NOISE) if how == "broken" else text


def _digits(number: int) -> str:
    """The decimal text of ``number`` (one of over 4,300 digits has none: 5,000 ones instead)."""
    return str(number) if number.bit_length() < 14_000 else "1" * 5000


_PARSERS = [
    ("startingOffsets", parse_offsets_spec),
    ("endingOffsets", parse_offsets_spec),
    ("startingOffsetsByTimestamp", parse_timestamps_spec),
    ("endingOffsetsByTimestamp", parse_timestamps_spec),
    ("startingTimestamp", parse_timestamp),
]


@given(data=st.data())
def test_any_offset_option_parses_or_fails_naming_the_option(data: st.DataObject) -> None:
    option, parse = data.draw(st.sampled_from(_PARSERS), label="option")
    value = data.draw(option_texts(st.one_of(integers, st.integers(-3, 3))), label="value")
    try:
        spec = parse(value, option)
    except OffsetsError as error:
        assert f"'{option}'" in str(error), str(error)
    else:
        assert spec.option == option
        positions = [*spec.specific.values(), *([spec.default] if spec.default else [])]
        assert positions
        for position in positions:
            assert 0 <= position.value <= MAX_OFFSET
        assert all(0 <= key[2] <= MAX_PARTITION for key in spec.specific)


@given(
    values=st.dictionaries(
        st.tuples(names, names, partitions),
        offsets | st.sampled_from([-1, -2]),
        min_size=1,
        max_size=6,
    )
)
def test_offset_options_round_trip(values: dict[PartitionKey, int]) -> None:
    spec = parse_offsets_spec(json.dumps(_nested(values)), "startingOffsets")
    kinds = {-2: PositionKind.EARLIEST, -1: PositionKind.LATEST}
    expected = {key: (kinds.get(v, PositionKind.OFFSET), max(v, 0)) for key, v in values.items()}
    assert {k: (p.kind, p.value) for k, p in spec.specific.items()} == expected
    stamps = {k: v for k, v in values.items() if v >= 0}
    if stamps:
        by_time = parse_timestamps_spec(json.dumps(_nested(stamps)), "startingOffsetsByTimestamp")
        assert {k: p.value for k, p in by_time.specific.items()} == stamps
        assert {p.kind for p in by_time.specific.values()} == {PositionKind.TIMESTAMP}


def test_cluster_and_topic_names_that_are_not_text_are_refused_and_shown() -> None:
    # Found by the fuzzing above: an int too long to write as text, as a cluster or topic name
    # (a decoded document is not always JSON's), raised ValueError from the message itself.
    huge = 10**5000
    for document in (
        {"version": 1, "clusters": {huge: {}}},
        {"version": 1, "clusters": {"c": {huge: {}}}},
    ):
        with pytest.raises(OffsetsError) as refused:
            decode(document)
        said = str(refused.value)
        assert "<a int too large to show>" in said and "must be a name (a string)" in said
