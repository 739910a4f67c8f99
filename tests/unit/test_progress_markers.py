"""exactlyOnce progress markers: both metadata forms parsed (today's, naming the query, and the
legacy one of earlier releases), and whose marker counts (a replay, another query, a take-over).

The markers are built here as the cluster would hand them back; that they are found where they
were written, on real Kafka with both writers, is tests/integration/test_sink_markers.py's.
"""

from __future__ import annotations

import pytest

from pyspark_dynamic_kafka.errors import OptionsError, SinkIdInUseError
from pyspark_dynamic_kafka.sink.executor.markers import (
    MARKER,
    Marker,
    claim,
    marker_metadata,
    parse_marker,
    progress_group,
)

Q1 = "5b8a6c7e-0000-4000-8000-000000000001"
Q2 = "5b8a6c7e-0000-4000-8000-000000000002"


def test_a_marker_names_its_query_and_generation_and_parses_back() -> None:
    text = marker_metadata(Q1, 2)
    assert text == f'dynamic_kafka.sink.batch {{"generation": 2, "query": "{Q1}"}}'
    assert parse_marker(7, text, "east/orders-0") == Marker(7, Q1, 2, "east/orders-0")
    # The compiled core's commit carries the C string's NUL.
    assert parse_marker(7, text + "\x00") == Marker(7, Q1, 2)
    assert len(text.encode()) < 4096  # Kafka's offset.metadata.max.bytes default


def test_a_legacy_marker_parses_as_generation_0_of_no_query() -> None:
    """Markers written before they named their query: the metadata is the bare string."""
    assert MARKER == "dynamic_kafka.sink.batch"
    assert parse_marker(12, "dynamic_kafka.sink.batch") == Marker(12, None, 0)
    assert parse_marker(12, "dynamic_kafka.sink.batch\x00") == Marker(12, None, 0)


def test_later_fields_are_ignored() -> None:
    text = f'{MARKER} {{"generation": 1, "query": "{Q1}", "later": [1, 2]}}'
    assert parse_marker(3, text) == Marker(3, Q1, 1)


@pytest.mark.parametrize(
    ("offset", "metadata"),
    [
        (-1001, "dynamic_kafka.sink.batch"),  # no offset committed
        (5, ""),
        (5, None),
        (5, "someone else's commit"),
        (5, "dynamic_kafka.sink.batches"),
        (5, "dynamic_kafka.sink.batch {not json"),
        (5, "dynamic_kafka.sink.batch [1]"),
        (5, 'dynamic_kafka.sink.batch {"generation": 0}'),
        (5, f'dynamic_kafka.sink.batch {{"generation": "0", "query": "{Q1}"}}'),
        (5, f'dynamic_kafka.sink.batch {{"generation": true, "query": "{Q1}"}}'),
        (5, f'dynamic_kafka.sink.batch {{"generation": -1, "query": "{Q1}"}}'),
    ],
)
def test_other_commits_are_no_markers(offset: int, metadata: str | None) -> None:
    assert parse_marker(offset, metadata) is None


def test_the_progress_group_is_per_sink_and_spark_partition() -> None:
    assert progress_group("orders-writer", 3) == "orders-writer.progress.3"


def test_a_replay_of_the_query_is_skipped_and_the_next_batch_written() -> None:
    markers = [Marker(4, Q1, 0, "east/orders-0")]
    assert claim(markers, "w", Q1, 4).done == markers[0]
    assert claim(markers, "w", Q1, 3).done == markers[0]
    decided = claim(markers, "w", Q1, 5)
    assert (decided.done, decided.generation, decided.newest) == (None, 0, markers[0])
    assert claim([], "w", Q1, 0).done is None


def test_the_newest_marker_counts_wherever_it_lies() -> None:
    """A route's first topic changed between micro-batches: markers on two topics."""
    old, new = Marker(4, Q1, 0, "east/b-0"), Marker(9, Q1, 0, "east/a-0")
    assert claim([new, old], "w", Q1, 9).done == new
    assert claim([old, new], "w", Q1, 10).done is None
    # After a take-over the newer generation wins over a higher micro-batch of the old query.
    stale, taken = Marker(100, Q1, 0, "east/b-0"), Marker(2, Q2, 1, "east/a-0")
    assert claim([stale, taken], "w", Q2, 2).done == taken
    assert claim([stale, taken], "w", Q2, 3) == claim([taken], "w", Q2, 3)
    assert claim([stale, taken], "w", Q2, 3).generation == 1


def test_another_querys_marker_fails_naming_the_sink_both_queries_and_the_fix() -> None:
    markers = [Marker(2, Q1, 0, "east/orders-0")]
    with pytest.raises(SinkIdInUseError) as caught:
        claim(markers, "orders-writer", Q2, 0)
    text = str(caught.value)
    for part in ("sinkId 'orders-writer'", Q1, Q2, "east/orders-0", "sinkIdTakeover=true"):
        assert part in text
    assert "own sinkId" in text
    # A pipeline's full refresh is the common way to a new checkpoint (tried on PySpark 4.3).
    assert "Declarative Pipeline a full refresh" in text
    assert isinstance(caught.value, OptionsError)
    assert not caught.value.retryable
    # The old query, once taken over, fails the same way (the newer generation is Q2's).
    with pytest.raises(SinkIdInUseError, match=f"written by query {Q2}"):
        claim([*markers, Marker(0, Q2, 1)], "orders-writer", Q1, 3)


def test_a_takeover_counts_afresh_and_its_own_restarts_are_replays() -> None:
    markers = [Marker(2, Q1, 0, "east/orders-0")]
    decided = claim(markers, "w", Q2, 0, takeover=True)
    assert (decided.done, decided.generation) == (None, 1)
    # Its marker is written; restarted from its checkpoint (the option still set) it replays.
    markers.append(Marker(0, Q2, 1, "east/orders-0"))
    assert claim(markers, "w", Q2, 0, takeover=True).done == markers[1]
    assert claim(markers, "w", Q2, 1, takeover=True) == claim(markers, "w", Q2, 1)
    assert claim(markers, "w", Q2, 1).generation == 1


def test_a_legacy_marker_is_the_querys_own_unless_taken_over() -> None:
    legacy = [Marker(5, None, 0, "east/orders-0")]
    assert claim(legacy, "w", Q1, 5).done == legacy[0]  # a restart from the old checkpoint
    decided = claim(legacy, "w", Q1, 6)
    assert (decided.done, decided.generation) == (None, 0)
    taken = claim(legacy, "w", Q1, 0, takeover=True)
    assert (taken.done, taken.generation) == (None, 1)
    # Its first marker naming the query then outranks the legacy one.
    assert claim([*legacy, Marker(6, Q1, 0)], "w", Q1, 6).done == Marker(6, Q1, 0)


def test_without_a_query_every_marker_is_its_own() -> None:
    assert claim([Marker(5, Q1, 0)], "w", None, 5).done == Marker(5, Q1, 0)
